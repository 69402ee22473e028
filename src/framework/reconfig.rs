//! The ensemble's configuration (`/zookeeper/config`) and ZooKeeper 3.5+ dynamic
//! reconfiguration, from the framework (Curator's `getConfig()` and `reconfig()`).

use super::request::EnsembleChange;
use super::session::Framework;
use crate::ZooKeeperError;
use crate::{Error, Result};

/// Where ZooKeeper keeps the ensemble's configuration.
const CONFIG_NODE: &str = "/zookeeper/config";

/// The role of a server in the ensemble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerRole {
    /// A voting member (the default when the line names no role).
    Participant,
    /// A non-voting member that serves clients.
    Observer,
}

/// One `server.N=host:quorumPort:electionPort[:role][;[clientHost:]clientPort]` line of the
/// ensemble's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnsembleServer {
    /// The server's id (`myid`, the `N` of `server.N`).
    pub id: u64,
    /// The host of its quorum and election ports.
    pub host: String,
    /// The port followers use to talk to the leader.
    pub quorum_port: u16,
    /// The port of leader election.
    pub election_port: u16,
    /// Participant or observer.
    pub role: ServerRole,
    /// Its client address as the line writes it (`clientPort` or `clientHost:clientPort`),
    /// `None` when the line names none (a static configuration).
    pub client_address: Option<String>,
}

impl EnsembleServer {
    /// The server's line in the form [`ReconfigChange::add`] and [`ReconfigChange::replace`]
    /// take (`server.N=host:quorum:election:role[;client]`).
    ///
    /// ```
    /// # fn demo(config: &zk_recipes::ops::EnsembleConfig) {
    /// for server in &config.servers {
    ///     println!("{}", server.spec());
    /// }
    /// # }
    /// ```
    pub fn spec(&self) -> String {
        let role = match self.role {
            ServerRole::Participant => "participant",
            ServerRole::Observer => "observer",
        };
        let mut line = format!("server.{}={}:{}:{}:{role}", self.id, self.host, self.quorum_port, self.election_port);
        if let Some(client) = &self.client_address {
            line.push(';');
            line.push_str(client);
        }
        line
    }
}

/// The ensemble's configuration, as `/zookeeper/config` holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnsembleConfig {
    /// The servers, in the order of the configuration.
    pub servers: Vec<EnsembleServer>,
    /// The configuration's version (its `version=` line, a zxid written in hex), `None` when
    /// there is none (a static configuration). The expected version of
    /// [`Framework::reconfig`].
    pub version: Option<u64>,
    /// The configuration's text as the server sent it.
    pub raw: String,
}

impl EnsembleConfig {
    /// The server with id `id`, if it is in the configuration.
    pub fn server(&self, id: u64) -> Option<&EnsembleServer> {
        self.servers.iter().find(|s| s.id == id)
    }

    /// Parses a configuration's text.
    fn parse(raw: Vec<u8>) -> Result<EnsembleConfig> {
        let corrupt = |reason: String| Error::CorruptData { path: CONFIG_NODE.to_owned(), reason };
        let raw = String::from_utf8(raw).map_err(|_| corrupt("not UTF-8".to_owned()))?;
        let mut servers = Vec::new();
        let mut version = None;
        for line in raw.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if let Some(v) = line.strip_prefix("version=") {
                let parsed = u64::from_str_radix(v.trim(), 16);
                version = Some(parsed.map_err(|_| corrupt(format!("bad version line {line:?}")))?);
            } else if line.starts_with("server.") {
                servers.push(parse_server(line).ok_or_else(|| corrupt(format!("bad server line {line:?}")))?);
            }
            // other lines (a static configuration's settings) are kept in `raw` only
        }
        Ok(EnsembleConfig { servers, version, raw })
    }
}

/// One `server.N=...` line.
fn parse_server(line: &str) -> Option<EnsembleServer> {
    let (key, spec) = line.split_once('=')?;
    let id = key.strip_prefix("server.")?.trim().parse().ok()?;
    let (addresses, client) = match spec.split_once(';') {
        Some((addresses, client)) => (addresses.trim(), Some(client.trim())),
        None => (spec.trim(), None),
    };
    // host:quorum:election[:role], the host possibly a bracketed IPv6 address
    let (host, rest) = match addresses.strip_prefix('[') {
        Some(bracketed) => {
            let (host, rest) = bracketed.split_once(']')?;
            (format!("[{host}]"), rest.strip_prefix(':')?)
        }
        None => {
            let (host, rest) = addresses.split_once(':')?;
            (host.to_owned(), rest)
        }
    };
    let mut parts = rest.split(':');
    let quorum_port = parts.next()?.parse().ok()?;
    let election_port = parts.next()?.parse().ok()?;
    let role = match parts.next() {
        None | Some("participant") => ServerRole::Participant,
        Some("observer") => ServerRole::Observer,
        Some(_) => return None,
    };
    if host.is_empty() || parts.next().is_some() {
        return None;
    }
    let client_address = match client {
        Some(client) => {
            let port = client.rsplit_once(':').map_or(client, |(_, port)| port);
            port.parse::<u16>().ok()?;
            Some(client.to_owned())
        }
        None => None,
    };
    Some(EnsembleServer { id, host, quorum_port, election_port, role, client_address })
}

/// A change of the ensemble's members, for [`Framework::reconfig`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReconfigChange {
    /// Incremental: servers that join (their `server.N=...` lines, see
    /// [`EnsembleServer::spec`]) and servers that leave (by id).
    Incremental {
        /// The lines of the joining servers.
        joining: Vec<String>,
        /// The ids of the leaving servers.
        leaving: Vec<u64>,
    },
    /// Non-incremental: the ensemble becomes exactly these servers (their lines).
    Replace {
        /// The lines of every member of the new ensemble.
        members: Vec<String>,
    },
}

impl ReconfigChange {
    /// Servers that join, by their `server.N=...` lines.
    pub fn add<S: Into<String>>(joining: impl IntoIterator<Item = S>) -> ReconfigChange {
        ReconfigChange::Incremental { joining: joining.into_iter().map(Into::into).collect(), leaving: Vec::new() }
    }

    /// Servers that leave, by id.
    pub fn remove(leaving: impl IntoIterator<Item = u64>) -> ReconfigChange {
        ReconfigChange::Incremental { joining: Vec::new(), leaving: leaving.into_iter().collect() }
    }

    /// The ensemble becomes exactly these servers (their `server.N=...` lines).
    pub fn replace<S: Into<String>>(members: impl IntoIterator<Item = S>) -> ReconfigChange {
        ReconfigChange::Replace { members: members.into_iter().map(Into::into).collect() }
    }

    /// Whether `config` already has this change: every joining server with its line, no
    /// leaving one; or exactly the new members.
    fn is_in(&self, config: &EnsembleConfig) -> bool {
        let has = |line: &String| parse_server(line).is_some_and(|s| config.server(s.id) == Some(&s));
        match self {
            ReconfigChange::Incremental { joining, leaving } => {
                joining.iter().all(has) && leaving.iter().all(|&id| config.server(id).is_none())
            }
            ReconfigChange::Replace { members } => members.len() == config.servers.len() && members.iter().all(has),
        }
    }

    /// Refuses a change that names no server.
    fn validate(&self) -> Result<()> {
        let empty = match self {
            ReconfigChange::Incremental { joining, leaving } => joining.is_empty() && leaving.is_empty(),
            ReconfigChange::Replace { members } => members.is_empty(),
        };
        if empty {
            return Err(Error::invalid("change", "names no server"));
        }
        Ok(())
    }
}

impl Framework {
    /// The ensemble's configuration, read from `/zookeeper/config` (whatever the
    /// framework's namespace) through the retry loop.
    ///
    /// # Errors
    /// [`Error::CorruptData`] when the configuration cannot be parsed; `NoAuth` as
    /// [`Error::ZooKeeper`]; the retry loop's errors (see [`retry`](crate::retry)).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Example
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let config = fw.config().await?;
    /// for server in &config.servers {
    ///     println!("{} {:?} {:?}", server.id, server.role, server.client_address);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn config(&self) -> Result<EnsembleConfig> {
        let (data, _) = self.request("get_config", CONFIG_NODE, |conn| async move { conn.config().await }).await?;
        EnsembleConfig::parse(data)
    }

    /// Changes the ensemble's members (ZooKeeper 3.5+ dynamic reconfiguration); with
    /// `expected_version` (an [`EnsembleConfig::version`]) only if the configuration is still
    /// that one. Returns the new configuration.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a change that names no server or a version beyond
    /// `i64`; as [`Error::ZooKeeper`]: `BadVersion` (an [`is_conflict`](Error::is_conflict))
    /// when the configuration is no longer `expected_version`, `ReconfigDisabled` (an
    /// [`is_unsupported`](Error::is_unsupported)) when the ensemble does not allow
    /// reconfiguration, `NoAuth` when this session may not, `NewConfigNoQuorum` or
    /// `BadArguments` when the server refuses the change; [`Error::OutcomeUnknown`] when the
    /// deadline passed after the change was sent and before it was answered (a change is not
    /// idempotent: read [`config`](Self::config) to know), or when an attempt went unanswered
    /// (the connection was lost, as it is when the session's own server leaves), its retry
    /// was refused and the configuration does not show the change (when it does, that
    /// configuration is the answer); [`Error::CorruptData`] when the new
    /// configuration cannot be parsed; the retry loop's errors (see [`retry`](crate::retry)).
    ///
    /// # Cancel safety
    /// Not cancel safe: the change may have been applied.
    ///
    /// # Example
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::ops::ReconfigChange;
    ///
    /// let before = fw.config().await?;
    /// // server 3 leaves, unless someone else changed the ensemble meanwhile
    /// let after = fw.reconfig(&ReconfigChange::remove([3]), before.version).await?;
    /// assert!(after.server(3).is_none());
    /// # Ok(()) }
    /// ```
    pub async fn reconfig(&self, change: &ReconfigChange, expected_version: Option<u64>) -> Result<EnsembleConfig> {
        change.validate()?;
        let expected = match expected_version {
            Some(v) => Some(
                i64::try_from(v).map_err(|_| Error::invalid("expected_version", format!("{v:#x} is beyond a zxid")))?,
            ),
            None => None,
        };
        let leaving: Vec<String> = match change {
            ReconfigChange::Incremental { leaving, .. } => leaving.iter().map(u64::to_string).collect(),
            ReconfigChange::Replace { .. } => Vec::new(),
        };
        let update = match change {
            ReconfigChange::Incremental { joining, .. } => EnsembleChange::Incremental { joining, leaving: &leaving },
            ReconfigChange::Replace { members } => EnsembleChange::Replace { members },
        };
        let mut attempts = 0u32;
        let outcome = self
            .request_write("reconfig", CONFIG_NODE, |conn| {
                attempts += 1;
                async move { conn.reconfig(update, expected).await }
            })
            .await;
        match outcome {
            Ok((data, _)) => EnsembleConfig::parse(data),
            // an attempt was lost (a leaving server drops its clients, the change applied):
            // the retry is refused because of it, or because another change came first
            Err(Error::ZooKeeper(ZooKeeperError::BadVersion | ZooKeeperError::BadArguments(_))) if attempts > 1 => {
                self.after_a_lost_attempt(change).await
            }
            Err(e) => Err(e),
        }
    }

    /// The outcome of a change whose first attempt went unanswered and whose retry was
    /// refused: the configuration if it already has the change, else
    /// [`Error::OutcomeUnknown`].
    async fn after_a_lost_attempt(&self, change: &ReconfigChange) -> Result<EnsembleConfig> {
        // best effort: the server the session now lives on catches up with the leader
        let _ = self.request("sync", CONFIG_NODE, |conn| async move { conn.sync("/").await }).await;
        let current = self.config().await?;
        if change.is_in(&current) {
            return Ok(current);
        }
        Err(Error::OutcomeUnknown { path: CONFIG_NODE.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_dynamic_configuration() {
        let text = "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n\
                    server.2=zk2:2889:3889:observer;2182\n\
                    server.3=[::1]:2890:3890\n\
                    version=10000000a\n";
        let config = EnsembleConfig::parse(text.as_bytes().to_vec()).expect("parses");
        assert_eq!(config.version, Some(0x1_0000_000a));
        assert_eq!(config.servers.len(), 3);
        let one = config.server(1).expect("server 1");
        assert_eq!((one.host.as_str(), one.quorum_port, one.election_port), ("127.0.0.1", 2888, 3888));
        assert_eq!(one.client_address.as_deref(), Some("0.0.0.0:2181"));
        assert_eq!(config.server(2).expect("server 2").role, ServerRole::Observer);
        let three = config.server(3).expect("server 3");
        assert_eq!(
            (three.host.as_str(), three.role, three.client_address.as_deref()),
            ("[::1]", ServerRole::Participant, None)
        );
        assert_eq!(one.spec(), "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181");
        assert_eq!(parse_server(&one.spec()).as_ref(), Some(one));
        assert_eq!(EnsembleConfig::parse(Vec::new()).expect("empty").servers, Vec::new());
    }

    #[test]
    fn garbage_is_corrupt_data_not_a_panic() {
        for bad in [
            &b"server.x=h:1:2"[..],
            b"server.1=h:1",
            b"server.1=h:1:2:leader",
            b"server.1=:1:2",
            b"server.1=h:1:2:participant;notaport",
            b"server.1=[::1:1:2",
            b"server.1",
            b"version=zz",
            b"\xff\xfe",
        ] {
            assert!(matches!(EnsembleConfig::parse(bad.to_vec()), Err(Error::CorruptData { .. })), "{bad:?}");
        }
    }

    #[test]
    fn an_empty_change_is_refused() {
        assert!(matches!(ReconfigChange::remove([]).validate(), Err(Error::InvalidArgument { .. })));
        assert!(matches!(ReconfigChange::replace(Vec::<String>::new()).validate(), Err(Error::InvalidArgument { .. })));
        assert!(ReconfigChange::add(["server.4=h:1:2"]).validate().is_ok());
    }

    #[test]
    fn a_change_is_seen_in_a_configuration() {
        let config = EnsembleConfig::parse(b"server.1=h:1:2:participant;3\nserver.2=h:4:5;6\nversion=1".to_vec())
            .expect("parses");
        assert!(ReconfigChange::remove([3]).is_in(&config));
        assert!(!ReconfigChange::remove([2]).is_in(&config));
        assert!(ReconfigChange::add(["server.2=h:4:5:participant;6"]).is_in(&config));
        assert!(!ReconfigChange::add(["server.2=h:4:5:observer;6"]).is_in(&config));
        assert!(!ReconfigChange::add(["garbage"]).is_in(&config));
        assert!(ReconfigChange::replace(["server.1=h:1:2;3", "server.2=h:4:5;6"]).is_in(&config));
        assert!(!ReconfigChange::replace(["server.1=h:1:2;3"]).is_in(&config));
    }
}
