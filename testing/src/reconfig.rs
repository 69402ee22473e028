//! Dynamic reconfiguration of a [`TestingCluster`] started with
//! [`reconfig_enabled`](crate::TestingClusterBuilder::reconfig_enabled): servers that join, and
//! ZooKeeper's `reconfig` to change who is in the ensemble.

use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::EnsembleUpdate;

use super::cluster::{myid, TestingCluster, TestingClusterBuilder};
use super::config::{Peer, ServerConfig};
use super::four_letter::ServerMode;
use super::instance::Instance;
use super::node::Node;
use crate::{Error, Result};

impl TestingClusterBuilder {
    /// Enables dynamic reconfiguration (`reconfigEnabled=true`, with ACLs skipped so that any
    /// client may reconfigure; default off): `/zookeeper/config` then names each server's
    /// client address, servers can join ([`TestingCluster::add_server`]) and the ensemble can
    /// be changed ([`TestingCluster::reconfigure`]). Local backend only.
    pub fn reconfig_enabled(mut self, enabled: bool) -> Self {
        self.kind.reconfig = enabled;
        self
    }
}

impl TestingCluster {
    /// Starts one more server, configured with every server so far and itself, and waits until
    /// it has synced with the leader. It serves clients but does not vote until
    /// [`reconfigure`](Self::reconfigure) adds it. Returns its index.
    ///
    /// # Errors
    /// [`Error::Unsupported`] unless the cluster was started with
    /// [`reconfig_enabled`](crate::TestingClusterBuilder::reconfig_enabled) (local backend);
    /// [`Error::TestServerFailed`] if it does not sync within the start timeout; [`Error::Io`]
    /// when its files cannot be written or its ports found.
    ///
    /// # Cancel safety
    /// Cancel safe: a server already spawned belongs to the cluster (and is killed with it).
    pub async fn add_server(&mut self) -> Result<usize> {
        if !self.reconfig {
            return Err(Error::Unsupported("servers join only clusters started with reconfig_enabled(true)"));
        }
        let i = self.servers.len();
        let ports = super::ports::free_ports(2 + self.settings.client_ports())?;
        let peer = Peer { id: myid(i), client_port: ports[0], quorum_port: ports[1], election_port: ports[2] };
        let mut peers = self.peers.clone();
        peers.push(peer);
        let config = ServerConfig {
            data_dir: PathBuf::new(),
            client_port: peer.client_port,
            secure_port: ports.get(3).copied(),
            timing: self.settings.timing.clone(),
            peers,
            extra: self.settings.extra_lines(),
            jaas: self.settings.jaas(),
            reconfig: true,
        };
        let label = format!("server {i} (myid {})", peer.id);
        let instance = Instance::new(label, self.settings.installation()?, config, Some(peer.id))?;
        self.servers.push(Node::Local(instance));
        self.peers.push(peer);
        self.servers[i].spawn().await?;
        let deadline = Instant::now() + self.start_timeout;
        self.servers[i].wait_until(deadline, ServerMode::is_quorum_member).await?;
        Ok(i)
    }

    /// ZooKeeper's incremental `reconfig`: servers `add` join the ensemble as participants
    /// (started with [`add_server`](Self::add_server)), servers `remove` leave it. Sent through
    /// a client of a running server that stays. Returns the new configuration, as
    /// `/zookeeper/config` holds it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown server or when no running server stays;
    /// [`Error::Unsupported`] without [`reconfig_enabled`](crate::TestingClusterBuilder::reconfig_enabled);
    /// [`Error::Recipes`] when the ensemble refuses (no quorum for the new configuration...).
    ///
    /// # Cancel safety
    /// Not cancel safe: the reconfiguration may be applied.
    pub async fn reconfigure(&self, add: &[usize], remove: &[usize]) -> Result<String> {
        if !self.reconfig {
            return Err(Error::Unsupported("only clusters started with reconfig_enabled(true) reconfigure"));
        }
        let peer =
            |i: usize| self.peers.get(i).ok_or_else(|| Error::InvalidArgument(format!("no server {i} in the cluster")));
        let joinings = add
            .iter()
            .map(|&i| peer(i).map(|p| format!("server.{}={}", p.id, p.spec(true))))
            .collect::<Result<Vec<_>>>()?;
        let leavings = remove.iter().map(|&i| peer(i).map(|p| p.id.to_string())).collect::<Result<Vec<_>>>()?;
        let staying: Vec<&str> = (0..self.servers.len())
            .filter(|i| !remove.contains(i) && self.is_running(*i))
            .filter_map(|i| self.server_connect_string(i).ok())
            .collect();
        if staying.is_empty() {
            return Err(Error::InvalidArgument("no running server stays in the ensemble".into()));
        }
        let client = zookeeper_client::Client::connector()
            .with_session_timeout(Duration::from_secs(4))
            .connect(&staying.join(","))
            .await
            .map_err(zk_recipes::Error::from)?;
        let update = EnsembleUpdate::Incremental {
            joinings: joinings.iter().map(String::as_str),
            leavings: leavings.iter().map(String::as_str),
        };
        let (config, _) = client.update_ensemble(update, None).await.map_err(zk_recipes::Error::from)?;
        Ok(String::from_utf8_lossy(&config).into_owned())
    }
}
