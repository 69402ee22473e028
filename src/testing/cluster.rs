//! `TestingCluster`: a real ZooKeeper ensemble on loopback ports.

use std::time::Duration;

use futures_util::future::join_all;

use super::four_letter::server_mode;
use super::install::Install;
use super::node::{free_port, Node, Peer};
use crate::error::{Error, Result};

const START_TIMEOUT: Duration = Duration::from_secs(60);
const MEMBER_MODES: &[&str] = &["leader", "follower"];

/// A ZooKeeper ensemble of real server processes on 127.0.0.1 (Curator's `TestingCluster`):
/// each server with its own client, quorum and election ports and its own temporary data
/// directory, started in parallel. Servers can be killed, stopped, paused and restarted one
/// by one; dropping the cluster kills them all.
#[derive(Debug)]
pub struct TestingCluster {
    nodes: Vec<Node>,
}

impl TestingCluster {
    /// Starts `n` servers (tick 200 ms) and waits until every one is leader or follower.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n == 0`; as
    /// [`TestingServer::start`](super::TestingServer::start).
    pub async fn start(n: usize) -> Result<TestingCluster> {
        if n == 0 {
            return Err(Error::InvalidArgument("a cluster needs at least one server".into()));
        }
        let install = Install::find()?;
        let mut peers = Vec::with_capacity(n);
        for i in 0..n {
            peers.push(Peer {
                id: i as u32 + 1,
                client_port: free_port()?,
                quorum_port: free_port()?,
                election_port: free_port()?,
            });
        }
        let mut nodes = peers
            .iter()
            .map(|p| Node::new(&install, p.client_port, Duration::from_millis(200), p.id, &peers))
            .collect::<Result<Vec<_>>>()?;
        for node in &mut nodes {
            node.launch()?;
        }
        let ready = join_all(nodes.iter_mut().map(|n| n.wait_mode(MEMBER_MODES, START_TIMEOUT))).await;
        for r in ready {
            r?;
        }
        Ok(TestingCluster { nodes })
    }

    /// How many servers the ensemble has.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Never true (a cluster has at least one server).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every server's `127.0.0.1:<port>`, comma-separated.
    pub fn connect_string(&self) -> String {
        self.nodes.iter().map(Node::address).collect::<Vec<_>>().join(",")
    }

    /// Server `i`'s `127.0.0.1:<port>`.
    ///
    /// # Panics
    /// When `i >= len()`.
    pub fn server_connect_string(&self, i: usize) -> String {
        self.nodes[i].address()
    }

    /// Server `i`'s process id, while it runs.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.nodes.get(i).and_then(Node::pid)
    }

    /// Kills server `i` at once (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        if let Some(n) = self.nodes.get_mut(i) {
            n.kill();
        }
    }

    /// Stops server `i` gracefully.
    pub async fn stop(&mut self, i: usize) {
        if let Some(n) = self.nodes.get_mut(i) {
            n.stop().await;
        }
    }

    /// Freezes server `i` (SIGSTOP).
    pub fn pause(&self, i: usize) {
        if let Some(n) = self.nodes.get(i) {
            n.pause();
        }
    }

    /// Thaws server `i` (SIGCONT).
    pub fn resume(&self, i: usize) {
        if let Some(n) = self.nodes.get(i) {
            n.resume();
        }
    }

    /// Starts server `i` again (same ports, same data) and waits until it has joined the
    /// ensemble as leader or follower.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad index; [`Error::Io`] when it does not rejoin.
    pub async fn restart(&mut self, i: usize) -> Result<()> {
        let node = self.nodes.get_mut(i).ok_or_else(|| Error::InvalidArgument(format!("no server {i}")))?;
        node.kill();
        node.launch()?;
        node.wait_mode(MEMBER_MODES, START_TIMEOUT).await.map(|_| ())
    }

    /// The index of the current leader (asking each running server with `srvr`), if any.
    ///
    /// # Errors
    /// None today (unreachable servers count as not leading).
    pub async fn leader(&self) -> Result<Option<usize>> {
        for (i, node) in self.nodes.iter().enumerate() {
            if server_mode(&node.address()).await.as_deref() == Some("leader") {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Waits until some server leads and a quorum serves.
    ///
    /// # Errors
    /// [`Error::Timeout`].
    pub async fn wait_for_leader(&self, timeout: Duration) -> Result<usize> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(i) = self.leader().await? {
                return Ok(i);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Timeout(timeout));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
