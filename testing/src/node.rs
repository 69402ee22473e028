//! One server of either backend: a local JVM ([`Instance`]) or a container
//! ([`docker::Server`](super::docker::Server)). Both have the same methods; this enum forwards.

use std::path::Path;

use tokio::time::Instant;

use super::backend::Backend;
use super::four_letter::ServerMode;
use super::instance::Instance;
use crate::{Error, Result};

#[derive(Debug)]
pub(crate) enum Node {
    Local(Instance),
    #[cfg(feature = "docker")]
    Docker(super::docker::Server),
}

/// `each!(node, s => expr)`: `expr` for whichever server `node` holds.
macro_rules! each {
    ($node:expr, $s:ident => $e:expr) => {
        match $node {
            Node::Local($s) => $e,
            #[cfg(feature = "docker")]
            Node::Docker($s) => $e,
        }
    };
}

impl Node {
    pub fn backend(&self) -> Backend {
        match self {
            Node::Local(_) => Backend::Local,
            #[cfg(feature = "docker")]
            Node::Docker(_) => Backend::Docker,
        }
    }

    pub fn connect_string(&self) -> &str {
        each!(self, s => s.connect_string())
    }

    pub fn client_port(&self) -> u16 {
        each!(self, s => s.client_port())
    }

    pub fn secure_port(&self) -> Option<u16> {
        match self {
            Node::Local(s) => s.secure_port(),
            #[cfg(feature = "docker")]
            Node::Docker(_) => None,
        }
    }

    pub fn data_dir(&self) -> &Path {
        each!(self, s => s.data_dir())
    }

    pub fn log_path(&self) -> &Path {
        each!(self, s => s.log_path())
    }

    pub fn pid(&self) -> Option<u32> {
        each!(self, s => s.pid())
    }

    pub fn container_id(&self) -> Option<&str> {
        match self {
            Node::Local(_) => None,
            #[cfg(feature = "docker")]
            Node::Docker(s) => s.container_id(),
        }
    }

    pub fn is_running(&self) -> bool {
        each!(self, s => s.is_running())
    }

    pub fn is_paused(&self) -> bool {
        each!(self, s => s.is_paused())
    }

    /// Whether a `srvr` probe can get an answer (cheap: no Docker request).
    pub fn may_serve(&self) -> bool {
        match self {
            Node::Local(s) => s.is_running() && !s.is_paused(),
            #[cfg(feature = "docker")]
            Node::Docker(s) => s.may_serve(),
        }
    }

    pub fn kill(&self) {
        each!(self, s => s.kill())
    }

    pub async fn stop(&self) {
        each!(self, s => s.stop().await)
    }

    pub async fn spawn(&self) -> Result<()> {
        each!(self, s => s.spawn().await)
    }

    pub async fn wait_until(&self, deadline: Instant, accept: impl Fn(&ServerMode) -> bool) -> Result<ServerMode> {
        each!(self, s => s.wait_until(deadline, accept).await)
    }

    pub fn pause(&self) -> Result<()> {
        each!(self, s => s.pause())
    }

    pub fn resume(&self) -> Result<()> {
        each!(self, s => s.resume())
    }

    pub fn log_tail(&self, lines: usize) -> String {
        each!(self, s => s.log_tail(lines))
    }

    pub fn port_clash(&self) -> bool {
        each!(self, s => s.port_clash())
    }

    /// Cuts the server off its peers, its clients staying connected (Docker only: a local
    /// cluster partitions through its peer proxies).
    pub async fn partition(&self) -> Result<()> {
        match self {
            Node::Local(_) => Err(UNSUPPORTED_LOCALLY),
            #[cfg(feature = "docker")]
            Node::Docker(s) => s.partition().await,
        }
    }

    /// Lets a partitioned server hear its peers again (Docker only).
    pub async fn heal(&self) -> Result<()> {
        match self {
            Node::Local(_) => Err(UNSUPPORTED_LOCALLY),
            #[cfg(feature = "docker")]
            Node::Docker(s) => s.heal().await,
        }
    }
}

const UNSUPPORTED_LOCALLY: Error = Error::Unsupported(
    "a local cluster partitions its servers only when built with peer_proxies(true) (or use the Docker backend); \
     to cut a client's link, put a TcpProxy in front of it",
);

/// Kills every local server and removes every container, the containers all at once; waits.
pub(crate) fn dispose(nodes: &mut [Node]) {
    #[cfg(feature = "docker")]
    let mut containers = Vec::new();
    for node in nodes.iter_mut() {
        match node {
            Node::Local(s) => s.kill(),
            #[cfg(feature = "docker")]
            Node::Docker(s) => containers.extend(s.take()),
        }
    }
    #[cfg(feature = "docker")]
    super::docker::remove_all(containers);
}
