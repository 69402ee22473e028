//! [`TestingCluster`]: a ZooKeeper ensemble on loopback ports.

use std::path::PathBuf;
use std::time::Duration;

use futures_util::future::{join_all, try_join_all};
use tokio::time::Instant;

use super::backend::Backend;
use super::builder::{Ensemble, TestingBuilder};
use super::config::{Peer, ServerConfig};
use super::four_letter::{server_mode, ServerMode};
use super::instance::Instance;
use super::links::PeerLinks;
use super::node::{self, Node};
use super::ports::{on_free_ports, StartFailure};
use crate::{Error, Result};

/// How long a `srvr` probe of [`TestingCluster::leader`] may take.
const MODE_PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// How often [`TestingCluster::wait_for_leader`] asks.
const LEADER_POLL: Duration = Duration::from_millis(50);
/// The largest ensemble the kit starts.
const MAX_SERVERS: usize = 32;

/// A ZooKeeper ensemble for tests, in the spirit of Curator's `TestingCluster`.
///
/// `n` real ZooKeeper JVMs on 127.0.0.1, each with its own client, quorum and election port,
/// its own temp dir and `myid` (with the [`Backend::Docker`] backend: `n` containers on a
/// private network, their client ports published on 127.0.0.1). Servers are addressed by index
/// `0..n` (server `i` has `myid` `i + 1`). Any of them can be stopped, killed, restarted or
/// paused to test failover, and cut off from its peers while its clients stay connected
/// ([`partition`](Self::partition): Docker, or local with
/// [`peer_proxies`](TestingClusterBuilder::peer_proxies)).
///
/// The default timing suits a small, busy machine while keeping failover fast: `tickTime`
/// 200 ms, `initLimit` 20 ticks, `syncLimit` 10 ticks, and election notifications re-sent at
/// least every second.
///
/// Dropping the cluster kills every server (`SIGKILL`), waits for them and removes their
/// temp dirs (Docker: removes the containers and the network).
///
/// # Examples
/// ```no_run
/// # async fn demo() -> zk_recipes_testing::Result<()> {
/// use std::time::Duration;
/// use zk_recipes_testing::TestingCluster;
///
/// let cluster = TestingCluster::start(3).await?;
/// let leader = cluster.wait_for_leader(Duration::from_secs(10)).await?;
/// cluster.kill(leader)?;
/// let new_leader = cluster.wait_for_leader(Duration::from_secs(10)).await?;
/// assert_ne!(leader, new_leader);
/// cluster.restart(leader).await?; // rejoins as a follower
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TestingCluster {
    pub(crate) servers: Vec<Node>,
    connect_string: String,
    secure_connect_string: Option<String>,
    #[cfg(feature = "tls")]
    tls: Option<std::sync::Arc<super::tls::TestCertificates>>,
    pub(crate) start_timeout: Duration,
    /// The proxies between the servers (local backend, [`TestingClusterBuilder::peer_proxies`]).
    links: Option<PeerLinks>,
    /// Every server ever started (`server.N=` lines; local backend), for servers that join.
    pub(crate) peers: Vec<Peer>,
    /// What the servers were started with, for servers that join.
    pub(crate) settings: super::config::Settings,
    /// Whether dynamic reconfiguration is enabled.
    pub(crate) reconfig: bool,
}

/// Configures and starts a [`TestingCluster`]; made by [`TestingCluster::builder`]. The settings
/// it shares with [`TestingServerBuilder`](super::TestingServerBuilder) are
/// [`TestingBuilder`]'s.
pub type TestingClusterBuilder = TestingBuilder<Ensemble>;

impl TestingClusterBuilder {
    /// The number of servers (default 3).
    pub fn servers(mut self, n: usize) -> Self {
        self.kind.servers = n;
        self
    }

    /// `initLimit`, in ticks: how long a follower may take to connect and sync to a new leader
    /// (default 20).
    pub fn init_limit(mut self, ticks: u32) -> Self {
        self.settings.timing.init_limit = ticks;
        self
    }

    /// `syncLimit`, in ticks: how far a follower may fall behind the leader before it is dropped
    /// (default 10).
    pub fn sync_limit(mut self, ticks: u32) -> Self {
        self.settings.timing.sync_limit = ticks;
        self
    }

    /// Puts a [`TcpProxy`](super::TcpProxy) on each direction of each link between two
    /// servers, quorum and election ports alike (local backend; default off), so that
    /// [`TestingCluster::partition`] can cut a server off its peers while its clients stay
    /// connected to it. With the Docker backend the setting is ignored: there `partition` does
    /// the same with iptables rules in the server's container, always available.
    pub fn peer_proxies(mut self, on: bool) -> Self {
        self.kind.peer_proxies = on;
        self
    }

    /// Starts all servers in parallel and waits until each reports `Mode: leader` or
    /// `Mode: follower`.
    ///
    /// # Errors
    /// - [`Error::InvalidArgument`] for zero servers (or more than 32), or bad settings.
    /// - [`Error::ZooKeeperNotInstalled`] if no installation or `java` is found (Docker: the
    ///   default image is not there).
    /// - [`Error::Unsupported`] for the Docker backend without the `docker` feature;
    ///   [`Error::Docker`] when the Docker daemon cannot be reached or refuses.
    /// - [`Error::TestServerFailed`], with the end of that server's log, if a server exits or
    ///   does not join a quorum within the start timeout (a start that failed because a port
    ///   was taken meanwhile is retried on other ports first).
    /// - [`Error::Io`] if temp dirs or configuration cannot be written.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future kills every JVM started so far (Docker: removes the
    /// containers and the network).
    pub async fn start(self) -> Result<TestingCluster> {
        let n = self.kind.servers;
        if n == 0 || n > MAX_SERVERS {
            return Err(Error::InvalidArgument(format!("a cluster needs 1 to {MAX_SERVERS} servers, not {n}")));
        }
        let (servers, links, peers) = match self.settings.validate()? {
            Backend::Local => self.start_local().await?,
            Backend::Docker if self.kind.reconfig => {
                return Err(Error::Unsupported("reconfigurable test clusters run on the local backend only"))
            }
            Backend::Docker => (self.start_docker().await?, None, Vec::new()),
        };
        let secure_ports: Option<Vec<u16>> = servers.iter().map(Node::secure_port).collect();
        #[cfg(feature = "tls")]
        if let (Some(tls), Some(ports)) = (&self.settings.tls, &secure_ports) {
            for (server, port) in servers.iter().zip(ports) {
                let plain = server.connect_string().to_owned();
                super::tls::register_secure_port(format!("127.0.0.1:{port}"), plain, tls.certs.clone());
            }
        }
        Ok(TestingCluster {
            secure_connect_string: secure_ports
                .map(|ports| ports.iter().map(|p| format!("127.0.0.1:{p}")).collect::<Vec<_>>().join(",")),
            #[cfg(feature = "tls")]
            tls: self.settings.tls.as_ref().map(|t| t.certs.clone()),
            connect_string: servers.iter().map(Node::connect_string).collect::<Vec<_>>().join(","),
            servers,
            start_timeout: self.settings.start_timeout,
            links,
            peers,
            settings: self.settings,
            reconfig: self.kind.reconfig,
        })
    }

    #[cfg(feature = "docker")]
    async fn start_docker(&self) -> Result<Vec<Node>> {
        let servers = super::docker::start_cluster(&self.settings, self.kind.servers).await?;
        Ok(servers.into_iter().map(Node::Docker).collect())
    }

    #[cfg(not(feature = "docker"))]
    async fn start_docker(&self) -> Result<Vec<Node>> {
        Err(Error::Unsupported("the Docker backend needs zk-recipes-testing built with its `docker` feature"))
    }

    async fn start_local(&self) -> Result<(Vec<Node>, Option<PeerLinks>, Vec<Peer>)> {
        let n = self.kind.servers;
        let install = &self.settings.installation()?;
        let deadline = Instant::now() + self.settings.start_timeout;
        let per_server = 2 + self.settings.client_ports();
        on_free_ports(per_server * n, None, |ports| async move {
            let peers: Vec<Peer> = (0..n)
                .map(|i| Peer {
                    id: myid(i),
                    quorum_port: ports[n + i],
                    election_port: ports[2 * n + i],
                    client_port: ports[i],
                })
                .collect();
            let links = match self.kind.peer_proxies {
                true => {
                    Some(PeerLinks::start(&peers).await.map_err(|error| StartFailure { port_clash: false, error })?)
                }
                false => None,
            };
            let servers: Vec<Node> = (0..n)
                .map(|i| {
                    let config = ServerConfig {
                        data_dir: PathBuf::new(),
                        client_port: ports[i],
                        secure_port: ports.get(3 * n + i).copied(),
                        timing: self.settings.timing.clone(),
                        peers: links.as_ref().map_or_else(|| peers.clone(), |l| l.view(i, &peers)),
                        extra: self.settings.extra_lines(),
                        jaas: self.settings.jaas(),
                        reconfig: self.kind.reconfig,
                    };
                    let label = format!("server {i} (myid {})", myid(i));
                    Instance::new(label, install.clone(), config, Some(myid(i))).map(Node::Local)
                })
                .collect::<Result<Vec<_>>>()?;
            // Kills the JVMs if this future is dropped or fails.
            let guard = Disposer(servers);
            for spawned in join_all(guard.0.iter().map(Node::spawn)).await {
                spawned?;
            }
            let waits = guard.0.iter().map(|s| s.wait_until(deadline, ServerMode::is_quorum_member));
            // The first failure ends the wait; the others are killed with `guard`.
            match try_join_all(waits).await {
                Ok(_) => Ok((guard.into_inner(), links, peers)),
                Err(error) => Err(StartFailure { port_clash: guard.0.iter().any(Node::port_clash), error }),
            }
        })
        .await
    }
}

pub(crate) fn myid(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

impl TestingCluster {
    /// Starts `n` servers with the default settings and waits until all have joined the quorum.
    ///
    /// # Errors
    /// As [`TestingClusterBuilder::start`].
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future kills every JVM started so far.
    pub async fn start(n: usize) -> Result<TestingCluster> {
        Self::builder().servers(n).start().await
    }

    /// A builder for a cluster with chosen settings.
    pub fn builder() -> TestingClusterBuilder {
        TestingClusterBuilder::default()
    }

    fn server(&self, i: usize) -> Result<&Node> {
        self.servers
            .get(i)
            .ok_or_else(|| Error::InvalidArgument(format!("no server {i} in a cluster of {}", self.servers.len())))
    }

    /// The backend the servers run on.
    pub fn backend(&self) -> Backend {
        self.servers.first().map_or(Backend::Local, Node::backend)
    }

    /// The Docker container id of server `i`; `None` for the local backend or if there is no
    /// server `i`.
    pub fn container_id(&self, i: usize) -> Option<&str> {
        self.servers.get(i).and_then(Node::container_id)
    }

    /// The connect string naming every server: `"127.0.0.1:P1,127.0.0.1:P2,..."`.
    pub fn connect_string(&self) -> &str {
        &self.connect_string
    }

    /// The connect string of every server's TLS port, for a cluster started with
    /// `TestingClusterBuilder::tls` (the `tls` feature); otherwise `None`.
    pub fn secure_connect_string(&self) -> Option<&str> {
        self.secure_connect_string.as_deref()
    }

    /// The certificates of the servers' TLS ports (one CA, one server certificate for all), for
    /// a cluster started with [`tls`](TestingClusterBuilder::tls).
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls_certificates(&self) -> Option<&std::sync::Arc<super::tls::TestCertificates>> {
        self.tls.as_ref()
    }

    /// The connect string of server `i` alone.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no server `i`.
    pub fn server_connect_string(&self, i: usize) -> Result<&str> {
        Ok(self.server(i)?.connect_string())
    }

    /// The number of servers (running or not).
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Always `false`: a cluster has at least one server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Whether server `i`'s JVM is alive (paused counts as alive); `false` if there is no
    /// server `i`.
    pub fn is_running(&self, i: usize) -> bool {
        self.servers.get(i).is_some_and(Node::is_running)
    }

    /// The process id of server `i`, `None` if it is not running or does not exist.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.servers.get(i).and_then(Node::pid)
    }

    /// Kills server `i` with `SIGKILL` (Docker: `docker kill`) and waits until the process is
    /// gone. Does nothing if it
    /// is not running.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no server `i`.
    pub fn kill(&self, i: usize) -> Result<()> {
        self.server(i)?.kill();
        Ok(())
    }

    /// Stops server `i` gracefully (`SIGTERM`, then `SIGKILL` after a few seconds; Docker:
    /// `docker stop`). Does nothing
    /// if it is not running.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no server `i`.
    ///
    /// # Cancel safety
    /// Cancel safe: if the future is dropped, the process is killed.
    pub async fn stop(&self, i: usize) -> Result<()> {
        self.server(i)?.stop().await;
        Ok(())
    }

    /// Stops server `i` if it runs, starts it again with the same ports and data, and waits
    /// until it has rejoined the quorum (leader or follower).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no server `i`; [`Error::TestServerFailed`] if it
    /// does not rejoin within the start timeout (for example without a quorum of other
    /// servers running).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves server `i` either stopped or started.
    pub async fn restart(&self, i: usize) -> Result<()> {
        let server = self.server(i)?;
        server.stop().await;
        server.spawn().await?;
        let deadline = Instant::now() + self.start_timeout;
        server.wait_until(deadline, ServerMode::is_quorum_member).await?;
        Ok(())
    }

    /// Freezes server `i` with `SIGSTOP` (Docker: `docker pause`; connections stay open, nothing
    /// is answered).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no server `i` or it is not running.
    pub fn pause(&self, i: usize) -> Result<()> {
        self.server(i)?.pause()
    }

    /// Lets paused server `i` run again with `SIGCONT` (Docker: `docker unpause`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no server `i` or it is not running.
    pub fn resume(&self, i: usize) -> Result<()> {
        self.server(i)?.resume()
    }

    /// The mode server `i` reports (`srvr`), `None` if it is not serving: not running, paused,
    /// electing or unreachable.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no server `i`.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn mode(&self, i: usize) -> Result<Option<ServerMode>> {
        Ok(probe(self.server(i)?).await)
    }

    /// The modes of all servers, as [`mode`](Self::mode) reports them, asked in parallel.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn modes(&self) -> Vec<Option<ServerMode>> {
        join_all(self.servers.iter().map(probe)).await
    }

    /// The index of the server that reports `Mode: leader`, asking every running, unpaused
    /// server with `srvr` in parallel; `None` if none does (for example during an election).
    /// During a leader change two servers may briefly both say so; the lower index is returned.
    ///
    /// # Errors
    /// None at present: servers that cannot be asked count as not leading. The `Result` leaves
    /// room for backends where asking can fail as a whole.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn leader(&self) -> Result<Option<usize>> {
        let modes = self.modes().await;
        Ok(modes.iter().position(|m| *m == Some(ServerMode::Leader)))
    }

    /// Waits until some server reports `Mode: leader` and returns its index.
    ///
    /// # Errors
    /// [`Error::Timeout`] if there is no leader within `timeout`.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_leader(&self, timeout: Duration) -> Result<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(leader) = self.leader().await? {
                return Ok(leader);
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout(timeout));
            }
            tokio::time::sleep(LEADER_POLL).await;
        }
    }

    /// The last `lines` lines of server `i`'s log file.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no server `i`.
    pub fn log_tail(&self, i: usize, lines: usize) -> Result<String> {
        Ok(self.server(i)?.log_tail(lines))
    }

    /// Cuts server `i` off its peers while it keeps running and its clients stay connected to
    /// it: every byte between it and the other servers is dropped (quorum and election links,
    /// both ways, sockets kept open, as in a real partition), its client port keeps serving.
    /// A partitioned leader loses its quorum and stops serving its clients (they are
    /// disconnected and reconnect elsewhere, or are told it does not serve); the others elect a
    /// new one. Both backends mean the same:
    ///
    /// - Docker backend: iptables rules inside the server's container (it runs with the
    ///   `NET_ADMIN` capability) drop its TCP traffic to and from the quorum and election
    ///   ports; clients, which come through the published port, pass. The image needs iptables
    ///   (`docker/build-image.sh` puts it there). The partition holds across a restart of the
    ///   server until [`heal`](Self::heal).
    /// - Local backend, started with [`peer_proxies`](TestingClusterBuilder::peer_proxies): the
    ///   proxies on its peer links blackhole them.
    ///
    /// To cut a client off a server, put a [`TcpProxy`](super::TcpProxy) in front of it.
    /// Partitioning a partitioned server does nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no server `i`; [`Error::Unsupported`] with the
    /// local backend without peer proxies, or a Docker image without iptables (with the command
    /// that rebuilds it); [`Error::Docker`] if the daemon refuses or iptables fails (for example
    /// on a paused server).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves server `i` either cut off or not.
    pub async fn partition(&self, i: usize) -> Result<()> {
        match self.peer_links(i)? {
            Some(links) => {
                links.isolate(i, true);
                Ok(())
            }
            None => self.server(i)?.partition().await,
        }
    }

    /// Lets partitioned server `i` hear its peers again (Docker: the iptables rules removed,
    /// same address; local: its peer links pass again). Healing a connected server does
    /// nothing.
    ///
    /// # Errors
    /// As [`partition`](Self::partition).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves server `i` either cut off or not.
    pub async fn heal(&self, i: usize) -> Result<()> {
        match self.peer_links(i)? {
            Some(links) => {
                links.isolate(i, false);
                Ok(())
            }
            None => self.server(i)?.heal().await,
        }
    }

    /// The proxies between the servers of a local cluster that has them, once there is a
    /// server `i`.
    fn peer_links(&self, i: usize) -> Result<Option<&PeerLinks>> {
        self.server(i)?;
        Ok(self.links.as_ref().filter(|_| self.backend() == Backend::Local))
    }
}

/// The mode of a running, unpaused server; `None` otherwise.
async fn probe(server: &Node) -> Option<ServerMode> {
    if !server.may_serve() {
        return None;
    }
    server_mode(server.connect_string(), MODE_PROBE_TIMEOUT).await.ok().flatten()
}

impl Drop for TestingCluster {
    fn drop(&mut self) {
        #[cfg(feature = "tls")]
        for port in self.servers.iter().filter_map(Node::secure_port) {
            super::tls::forget_secure_port(&format!("127.0.0.1:{port}"));
        }
        node::dispose(&mut self.servers);
    }
}

/// Servers being started: disposed of unless handed out.
struct Disposer(Vec<Node>);

impl Disposer {
    fn into_inner(mut self) -> Vec<Node> {
        std::mem::take(&mut self.0)
    }
}

impl Drop for Disposer {
    fn drop(&mut self) {
        node::dispose(&mut self.0);
    }
}

// A cluster can be shared between tasks and kept in a `static`.
const _: () = {
    fn check<T: Send + Sync + 'static>() {}
    let _ = check::<TestingCluster>;
};
