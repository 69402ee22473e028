//! [`TestingServer`]: one standalone ZooKeeper server on a loopback port.

use std::path::{Path, PathBuf};
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::backend::Backend;
use super::builder::{Standalone, TestingBuilder};
use super::config::ServerConfig;
use super::instance::Instance;
use super::node::{self, Node};
use super::ports::{on_free_ports, StartFailure};
#[cfg(feature = "tls")]
use super::tls::TestCertificates;
#[cfg(doc)]
use crate::Error;
use crate::Result;

/// A standalone ZooKeeper server for tests, in the spirit of Curator's `TestingServer`.
///
/// The server is a real ZooKeeper JVM listening on a free port of 127.0.0.1: by default a local
/// process from the local installation (see [`Installation`](super::Installation)), with its
/// configuration, data and log in a temp dir of its own; with the [`Backend::Docker`] backend a
/// container whose client port is published there. It can be stopped, killed, restarted (same
/// port, same data), paused and resumed to test how clients live through outages.
///
/// Dropping the `TestingServer` kills the JVM with `SIGKILL`, waits for it, and removes the temp
/// dir (Docker: removes the container); this also happens when a test panics, and works outside
/// a tokio runtime.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> zk_recipes_testing::Result<()> {
/// use zk_recipes_testing::TestingServer;
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
    node: Node,
    start_timeout: Duration,
    #[cfg(feature = "tls")]
    tls: Option<Arc<TestCertificates>>,
}

/// Configures and starts a [`TestingServer`]; made by [`TestingServer::builder`]. The settings
/// it shares with [`TestingClusterBuilder`](super::TestingClusterBuilder) are
/// [`TestingBuilder`]'s.
pub type TestingServerBuilder = TestingBuilder<Standalone>;

impl TestingServerBuilder {
    /// Listen on this client port instead of a free one picked by the kit.
    pub fn port(mut self, port: u16) -> Self {
        self.kind.port = Some(port);
        self
    }

    /// Starts the server and waits until it serves requests (`srvr` reports a `Mode:`).
    ///
    /// # Errors
    /// - [`Error::ZooKeeperNotInstalled`] if no installation or `java` is found (Docker: the
    ///   default image is not there).
    /// - [`Error::InvalidArgument`] for a zero tick or start timeout, a min session timeout above
    ///   the max, a malformed [`config`](Self::config) line, or a bad `ZK_TEST_BACKEND`.
    /// - [`Error::Unsupported`] for the Docker backend without the `docker` feature;
    ///   [`Error::Docker`] when the Docker daemon cannot be reached or refuses.
    /// - [`Error::TestServerFailed`], with the end of the server's log, if it exits or does not
    ///   serve within the start timeout (a start that failed because its port was taken
    ///   meanwhile is retried on another port first).
    /// - [`Error::Io`] if the temp dir or configuration cannot be written.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future kills the JVM and removes the temp dir (Docker: removes
    /// the container).
    pub async fn start(self) -> Result<TestingServer> {
        let node = match self.settings.validate()? {
            Backend::Local => Node::Local(self.start_local().await?),
            Backend::Docker => self.start_docker().await?,
        };
        let server = TestingServer {
            node,
            start_timeout: self.settings.start_timeout,
            #[cfg(feature = "tls")]
            tls: self.settings.tls.as_ref().map(|t| t.certs.clone()),
        };
        #[cfg(feature = "tls")]
        if let (Some(secure), Some(certs)) = (server.secure_connect_string(), &server.tls) {
            super::tls::register_secure_port(secure, server.connect_string().to_owned(), certs.clone());
        }
        Ok(server)
    }

    #[cfg(feature = "docker")]
    async fn start_docker(&self) -> Result<Node> {
        Ok(Node::Docker(super::docker::start_server(&self.settings, self.kind.port).await?))
    }

    #[cfg(not(feature = "docker"))]
    async fn start_docker(&self) -> Result<Node> {
        Err(crate::Error::Unsupported("the Docker backend needs zk-recipes-testing built with its `docker` feature"))
    }

    async fn start_local(&self) -> Result<Instance> {
        let install = &self.settings.installation()?;
        let deadline = Instant::now() + self.settings.start_timeout;
        let n = self.settings.client_ports();
        let fixed = match self.kind.port {
            // a fixed client port; the secure one (TLS) is picked free
            Some(port) => Some([vec![port], super::ports::free_ports(n - 1)?].concat()),
            None => None,
        };
        on_free_ports(n, fixed, |ports| async move {
            let config = ServerConfig {
                data_dir: PathBuf::new(),
                client_port: ports[0],
                secure_port: ports.get(1).copied(),
                timing: self.settings.timing.clone(),
                peers: Vec::new(),
                extra: self.settings.extra_lines(),
                jaas: self.settings.jaas(),
                reconfig: false,
            };
            let instance = Instance::new("server".into(), install.clone(), config, None)?;
            instance.spawn().await?;
            match instance.wait_until(deadline, |_| true).await {
                Ok(_) => Ok(instance),
                Err(error) => Err(StartFailure { port_clash: instance.port_clash(), error }),
            }
        })
        .await
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

    /// The backend the server runs on.
    pub fn backend(&self) -> Backend {
        self.node.backend()
    }

    /// The Docker container's id; `None` for the local backend.
    pub fn container_id(&self) -> Option<&str> {
        self.node.container_id()
    }

    /// The connect string for clients: `"127.0.0.1:PORT"`.
    pub fn connect_string(&self) -> &str {
        self.node.connect_string()
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.node.client_port()
    }

    /// The TLS client port (`secureClientPort`), for a server started with
    /// `TestingServerBuilder::tls` (the `tls` feature); otherwise `None`.
    pub fn secure_port(&self) -> Option<u16> {
        self.node.secure_port()
    }

    /// The connect string of the TLS port, `"127.0.0.1:PORT"` (give it to a framework built
    /// with TLS settings, which makes every endpoint TLS), for a server started with
    /// `TestingServerBuilder::tls` (the `tls` feature); otherwise `None`.
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure_port().map(|port| format!("127.0.0.1:{port}"))
    }

    /// The certificates the server's TLS port uses (and its clients may), for a server started
    /// with [`tls`](TestingServerBuilder::tls).
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls_certificates(&self) -> Option<&Arc<TestCertificates>> {
        self.tls.as_ref()
    }

    /// The server's data directory (snapshots and transaction logs); Docker: the directory
    /// inside the container (`/data`).
    pub fn data_dir(&self) -> &Path {
        self.node.data_dir()
    }

    /// The file the JVM's output and ZooKeeper's log (warnings and up) go to; Docker: an empty
    /// path (the log is the container's output, see [`log_tail`](Self::log_tail)).
    pub fn log_path(&self) -> &Path {
        self.node.log_path()
    }

    /// The process id of the JVM, `None` when it is not running (Docker: always `None`).
    pub fn pid(&self) -> Option<u32> {
        self.node.pid()
    }

    /// Whether the JVM is alive (a paused server is alive); Docker: whether the container runs.
    pub fn is_running(&self) -> bool {
        self.node.is_running()
    }

    /// Stops the server gracefully: `SIGTERM`, then `SIGKILL` if it has not exited within a few
    /// seconds (Docker: `docker stop`). Returns once the process is gone. Does nothing if it is
    /// not running.
    ///
    /// # Cancel safety
    /// Cancel safe: if the future is dropped, the process is killed.
    pub async fn stop(&self) {
        self.node.stop().await;
    }

    /// Kills the server with `SIGKILL` (a crash: no clean shutdown; Docker: `docker kill`) and
    /// waits for the process to be gone. Does nothing if it is not running.
    pub fn kill(&self) {
        self.node.kill();
    }

    /// Stops the server if it runs, starts it again on the same port with the same data, and
    /// waits until it serves (Docker: `docker start` of the same container, whose host port is
    /// fixed).
    ///
    /// # Errors
    /// [`Error::TestServerFailed`] if it does not serve within the start timeout (for example
    /// because another process took its port meanwhile); [`Error::Io`] if the JVM cannot be
    /// spawned.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the server either stopped or started.
    pub async fn restart(&self) -> Result<()> {
        self.node.stop().await;
        self.node.spawn().await?;
        let deadline = Instant::now() + self.start_timeout;
        self.node.wait_until(deadline, |_| true).await?;
        Ok(())
    }

    /// Freezes the JVM with `SIGSTOP` (Docker: `docker pause`): connections stay open but nothing
    /// is answered, as with a long GC pause or a hung machine.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the server is not running; Docker: [`Error::Docker`] if the
    /// daemon refuses (for example because the container is not running).
    pub fn pause(&self) -> Result<()> {
        self.node.pause()
    }

    /// Lets a paused JVM run again with `SIGCONT` (Docker: `docker unpause`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the server is not running; Docker: [`Error::Docker`] if the
    /// daemon refuses.
    pub fn resume(&self) -> Result<()> {
        self.node.resume()
    }

    /// Whether the server is paused.
    pub fn is_paused(&self) -> bool {
        self.node.is_paused()
    }

    /// Replaces the SASL DIGEST-MD5 logins of a server started with
    /// [`sasl_digest`](TestingServerBuilder::sasl_digest) (its JAAS file), from its next
    /// [`restart`](Self::restart) on: for example a user whose password was changed.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no users or a malformed one; [`Error::Unsupported`] on the
    /// Docker backend; [`Error::Io`] when the file cannot be written.
    pub fn set_sasl_users<U: Into<String>, P: Into<String>>(
        &self,
        users: impl IntoIterator<Item = (U, P)>,
    ) -> Result<()> {
        let settings = TestingServerBuilder::default().backend(Backend::Local).sasl_digest(users).settings;
        settings.validate()?;
        let jaas = settings.jaas().ok_or_else(|| crate::Error::InvalidArgument("no SASL users".into()))?;
        match &self.node {
            Node::Local(instance) => Ok(std::fs::write(instance.conf_dir().join(super::config::JAAS_FILE), jaas)?),
            #[cfg(feature = "docker")]
            Node::Docker(_) => Err(crate::Error::Unsupported("SASL test servers run on the local backend only")),
        }
    }

    /// The last `lines` lines of the server's log file.
    pub fn log_tail(&self, lines: usize) -> String {
        self.node.log_tail(lines)
    }
}

impl Drop for TestingServer {
    fn drop(&mut self) {
        #[cfg(feature = "tls")]
        if let Some(secure) = self.secure_connect_string() {
            super::tls::forget_secure_port(&secure);
        }
        node::dispose(std::slice::from_mut(&mut self.node));
    }
}

// A server can be shared between tasks and kept in a `static`.
const _: () = {
    fn check<T: Send + Sync + 'static>() {}
    let _ = check::<TestingServer>;
};
