//! [`TestingServer`]: one standalone ZooKeeper server on a loopback port.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use super::config::{ServerConfig, Settings};
use super::instance::Instance;
use super::ports::free_ports;
use crate::{Error, Result};

/// How many times a start is retried with fresh ports when a port was taken meanwhile.
pub(crate) const PORT_ATTEMPTS: usize = 3;

/// A standalone ZooKeeper server for tests, in the spirit of Curator's `TestingServer`.
///
/// The server is a real ZooKeeper JVM from the local installation (see
/// [`Installation`](super::Installation)), listening on a free port of 127.0.0.1, with its
/// configuration, data and log in a temp dir of its own. It can be stopped, killed, restarted
/// (same port, same data), paused and resumed to test how clients live through outages.
///
/// Dropping the `TestingServer` kills the JVM with `SIGKILL`, waits for it, and removes the temp
/// dir; this also happens when a test panics, and works outside a tokio runtime.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> zk_recipes::Result<()> {
/// use zk_recipes::testing::TestingServer;
///
/// let server = TestingServer::start().await?;
/// let client = zookeeper_client::Client::connect(server.connect_string()).await?;
/// server.restart().await?; // the client reconnects; its session survives a short outage
/// # drop(client);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TestingServer {
    instance: Instance,
    start_timeout: Duration,
}

/// Configures and starts a [`TestingServer`]; made by [`TestingServer::builder`].
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `start` is awaited"]
pub struct TestingServerBuilder {
    settings: Settings,
    port: Option<u16>,
}

impl TestingServerBuilder {
    /// ZooKeeper's `tickTime` (default 200 ms, so that tests run fast). The server bounds
    /// session timeouts to 2-20 ticks unless [`min_session_timeout`](Self::min_session_timeout)
    /// / [`max_session_timeout`](Self::max_session_timeout) say otherwise: with the default tick a
    /// client gets at most a 4 s session.
    pub fn tick_time(mut self, tick: Duration) -> Self {
        self.settings.timing.tick_time = tick;
        self
    }

    /// The smallest session timeout the server grants (`minSessionTimeout`).
    pub fn min_session_timeout(mut self, timeout: Duration) -> Self {
        self.settings.timing.min_session_timeout = Some(timeout);
        self
    }

    /// The largest session timeout the server grants (`maxSessionTimeout`).
    pub fn max_session_timeout(mut self, timeout: Duration) -> Self {
        self.settings.timing.max_session_timeout = Some(timeout);
        self
    }

    /// Listen on this client port instead of a free one picked by the kit.
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// How long [`start`](Self::start) and [`TestingServer::restart`] wait for the server to
    /// serve (default 30 s).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.settings.start_timeout = timeout;
        self
    }

    /// Run the release-tarball installation in `home` instead of discovering one (see
    /// [`Installation::from_zookeeper_home`](super::Installation::from_zookeeper_home)); the
    /// `ZOOKEEPER_HOME` environment variable is then ignored.
    pub fn zookeeper_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.settings.zookeeper_home = Some(home.into());
        self
    }

    /// Adds a `key=value` line to `zoo.cfg` (after the kit's own, so it wins), for example
    /// `("localSessionsEnabled", "true")`.
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.extra.push((key.into(), value.into()));
        self
    }

    /// Starts the server and waits until it serves requests (`srvr` reports a `Mode:`).
    ///
    /// # Errors
    /// - [`Error::ZooKeeperNotInstalled`] if no installation or `java` is found.
    /// - [`Error::InvalidArgument`] for a zero tick or start timeout, a min session timeout above
    ///   the max, or a malformed [`config`](Self::config) line.
    /// - [`Error::TestServerFailed`], with the end of the server's log, if it exits or does not
    ///   serve within the start timeout (a start that failed because its port was taken
    ///   meanwhile is retried on another port first).
    /// - [`Error::Io`] if the temp dir or configuration cannot be written.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future kills the JVM and removes the temp dir.
    pub async fn start(self) -> Result<TestingServer> {
        let install = self.settings.prepare()?;
        let deadline = Instant::now() + self.settings.start_timeout;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = match self.port {
                Some(port) => port,
                None => free_ports(1)?.pop().ok_or_else(|| Error::Io("no free port".into()))?,
            };
            let config = ServerConfig {
                data_dir: PathBuf::new(),
                client_port: port,
                timing: self.settings.timing.clone(),
                peers: Vec::new(),
                extra: self.settings.extra.clone(),
            };
            let instance = Instance::new("server".into(), install.clone(), config, None)?;
            instance.spawn().await?;
            match instance.wait_until(deadline, |_| true).await {
                Ok(_) => return Ok(TestingServer { instance, start_timeout: self.settings.start_timeout }),
                Err(e) => {
                    let retry = self.port.is_none() && attempt < PORT_ATTEMPTS && instance.port_clash();
                    if !retry {
                        return Err(e);
                    }
                    tracing::debug!(port, "port taken meanwhile; retrying on another port");
                }
            }
        }
    }
}

impl TestingServer {
    /// Starts a server with the default settings (see [`TestingServer::builder`]).
    ///
    /// # Errors
    /// As [`TestingServerBuilder::start`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future kills the JVM.
    pub async fn start() -> Result<TestingServer> {
        Self::builder().start().await
    }

    /// A builder for a server with chosen settings.
    pub fn builder() -> TestingServerBuilder {
        TestingServerBuilder::default()
    }

    /// The connect string for clients: `"127.0.0.1:PORT"`.
    pub fn connect_string(&self) -> &str {
        self.instance.connect_string()
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.instance.client_port()
    }

    /// The server's data directory (snapshots and transaction logs).
    pub fn data_dir(&self) -> &Path {
        self.instance.data_dir()
    }

    /// The file the JVM's output and ZooKeeper's log (warnings and up) go to.
    pub fn log_path(&self) -> &Path {
        self.instance.log_path()
    }

    /// The process id of the JVM, `None` when it is not running.
    pub fn pid(&self) -> Option<u32> {
        self.instance.pid()
    }

    /// Whether the JVM is alive (a paused server is alive).
    pub fn is_running(&self) -> bool {
        self.instance.is_running()
    }

    /// Stops the server gracefully: `SIGTERM`, then `SIGKILL` if it has not exited within a few
    /// seconds. Returns once the process is gone. Does nothing if it is not running.
    ///
    /// # Cancel safety
    /// Cancel safe: if the future is dropped, the process is killed.
    pub async fn stop(&self) {
        self.instance.stop().await;
    }

    /// Kills the server with `SIGKILL` (a crash: no clean shutdown) and waits for the process
    /// to be gone. Does nothing if it is not running.
    pub fn kill(&self) {
        self.instance.kill();
    }

    /// Stops the server if it runs, starts it again on the same port with the same data, and
    /// waits until it serves.
    ///
    /// # Errors
    /// [`Error::TestServerFailed`] if it does not serve within the start timeout (for example
    /// because another process took its port meanwhile); [`Error::Io`] if the JVM cannot be
    /// spawned.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the server either stopped or started.
    pub async fn restart(&self) -> Result<()> {
        self.instance.stop().await;
        self.instance.spawn().await?;
        let deadline = Instant::now() + self.start_timeout;
        self.instance.wait_until(deadline, |_| true).await?;
        Ok(())
    }

    /// Freezes the JVM with `SIGSTOP`: connections stay open but nothing is answered, as with a
    /// long GC pause or a hung machine.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the server is not running.
    pub fn pause(&self) -> Result<()> {
        self.instance.pause()
    }

    /// Lets a paused JVM run again with `SIGCONT`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the server is not running.
    pub fn resume(&self) -> Result<()> {
        self.instance.resume()
    }

    /// Whether the server is paused.
    pub fn is_paused(&self) -> bool {
        self.instance.is_paused()
    }

    /// The last `lines` lines of the server's log file.
    pub fn log_tail(&self, lines: usize) -> String {
        self.instance.log_tail(lines)
    }
}

impl Drop for TestingServer {
    fn drop(&mut self) {
        self.instance.kill();
    }
}

// A server can be shared between tasks and kept in a `static`.
const _: () = {
    fn check<T: Send + Sync + 'static>() {}
    let _ = check::<TestingServer>;
};
