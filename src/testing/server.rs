//! `TestingServer`: a real standalone ZooKeeper for tests.

use std::time::Duration;

use super::install::Install;
use super::node::{free_port, Node};
use crate::error::Result;

const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A standalone ZooKeeper server started from the local installation (Curator's
/// `TestingServer`, as a real process): on a free 127.0.0.1 port, with its data in its own
/// temporary directory and a short tick (200 ms by default: session timeouts of 0.4 – 4 s).
///
/// Dropping it kills the process (SIGKILL) and removes the directory. The process is also
/// killed by the kernel if the test process dies.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> zk_recipes::Result<()> {
/// let mut server = zk_recipes::testing::TestingServer::start().await?;
/// let fw = zk_recipes::Framework::connect(&server.connect_string()).await?;
/// server.stop().await?;    // the framework goes SUSPENDED
/// server.restart().await?; // ... and RECONNECTED
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TestingServer {
    node: Node,
}

/// Options for a [`TestingServer`].
#[derive(Debug, Clone)]
pub struct TestingServerBuilder {
    tick: Duration,
    port: Option<u16>,
}

impl TestingServer {
    /// Starts a server with the defaults and waits until it serves.
    ///
    /// # Errors
    /// [`Error::ZooKeeperNotInstalled`](crate::Error::ZooKeeperNotInstalled) without a local
    /// installation; [`Error::Io`](crate::Error::Io) when the server does not come up (with the
    /// end of its log).
    pub async fn start() -> Result<TestingServer> {
        Self::builder().start().await
    }

    /// A builder for a server with other settings.
    pub fn builder() -> TestingServerBuilder {
        TestingServerBuilder { tick: Duration::from_millis(200), port: None }
    }

    /// `127.0.0.1:<port>`.
    pub fn connect_string(&self) -> String {
        self.node.address()
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.node.client_port
    }

    /// The server process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.node.pid()
    }

    /// Whether the process runs.
    pub fn is_running(&mut self) -> bool {
        self.node.is_running()
    }

    /// Stops the server gracefully (SIGTERM, then SIGKILL after 5 s); data is kept.
    ///
    /// # Errors
    /// None today; reserved for backends that can fail to stop.
    pub async fn stop(&mut self) -> Result<()> {
        self.node.stop().await;
        Ok(())
    }

    /// Kills the server at once (SIGKILL); data is kept.
    pub fn kill(&mut self) {
        self.node.kill();
    }

    /// Starts the server again on the same port with the same data; waits until it serves.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn restart(&mut self) -> Result<()> {
        self.node.kill();
        self.node.launch()?;
        self.node.wait_mode(&["standalone"], START_TIMEOUT).await.map(|_| ())
    }

    /// Freezes the server process (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) {
        self.node.pause();
    }

    /// Thaws a paused server (SIGCONT).
    pub fn resume(&self) {
        self.node.resume();
    }

    /// The end of the server's log.
    pub fn log_tail(&self) -> String {
        self.node.log_tail()
    }
}

impl TestingServerBuilder {
    /// The server's tick (session timeouts are clamped to 2 – 20 ticks).
    pub fn tick_time(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// A fixed client port instead of a free one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Starts the server and waits until it serves.
    ///
    /// # Errors
    /// As [`TestingServer::start`].
    pub async fn start(self) -> Result<TestingServer> {
        let install = Install::find()?;
        let mut last = None;
        // a free port can be taken by someone else between picking and binding: try again
        for _ in 0..3 {
            let port = match self.port {
                Some(p) => p,
                None => free_port()?,
            };
            let mut node = Node::new(&install, port, self.tick, 0, &[])?;
            node.launch()?;
            match node.wait_mode(&["standalone"], START_TIMEOUT).await {
                Ok(_) => return Ok(TestingServer { node }),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| crate::Error::Io("server did not start".into())))
    }
}
