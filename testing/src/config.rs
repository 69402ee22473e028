//! Writing a test server's configuration directory: `zoo.cfg`, `myid` and logging files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::backend::Backend;
use super::install::Installation;
#[cfg(feature = "tls")]
use super::tls::TlsSettings;
use crate::{Error, Result};

/// Without the `tls` feature there are no TLS settings: an empty enum, so that
/// [`Settings::tls`] is always `None` and the code that reads it stays the same.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone)]
pub(crate) enum TlsSettings {}

#[cfg(not(feature = "tls"))]
impl TlsSettings {
    pub fn zoo_cfg(&self) -> Vec<(String, String)> {
        match *self {}
    }
}

/// Log configuration for ZooKeeper releases that log through log4j 1.2 (Debian's package, and
/// Apache releases before 3.8): warnings and errors to the console, which the kit sends to the
/// server's log file.
const LOG4J_PROPERTIES: &str = "\
log4j.rootLogger=WARN, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
";

/// The same for Apache releases from 3.8 on, which log through logback.
const LOGBACK_XML: &str = r#"<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="CONSOLE"/></root>
</configuration>
"#;

/// The JAAS configuration's file name in a server's configuration directory.
pub(crate) const JAAS_FILE: &str = "jaas.conf";

/// One member of an ensemble, as written on a `server.N=` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Peer {
    /// The server's `myid` (1-based).
    pub id: u32,
    /// Port followers connect to the leader on.
    pub quorum_port: u16,
    /// Port of leader election.
    pub election_port: u16,
    /// The client port, named on the `server.N=` line in ensembles that can be reconfigured
    /// (so that `/zookeeper/config` lists the clients' addresses).
    pub client_port: u16,
}

impl Peer {
    /// The `server.N=` value: `127.0.0.1:quorum:election`, and with `reconfig` the role and
    /// the client address (`:participant;127.0.0.1:client`).
    pub fn spec(&self, reconfig: bool) -> String {
        let base = format!("127.0.0.1:{}:{}", self.quorum_port, self.election_port);
        match reconfig {
            true => format!("{base}:participant;127.0.0.1:{}", self.client_port),
            false => base,
        }
    }
}

/// Timing and session settings shared by every server of a test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Timing {
    pub tick_time: Duration,
    pub init_limit: u32,
    pub sync_limit: u32,
    pub min_session_timeout: Option<Duration>,
    pub max_session_timeout: Option<Duration>,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            tick_time: Duration::from_millis(200),
            init_limit: 20,
            sync_limit: 10,
            min_session_timeout: None,
            max_session_timeout: None,
        }
    }
}

impl Timing {
    /// Checks the ranges ZooKeeper accepts.
    pub fn validate(&self) -> Result<()> {
        let ms = |d: Duration| d.as_millis();
        if ms(self.tick_time) == 0 || ms(self.tick_time) > i32::MAX as u128 {
            return Err(Error::InvalidArgument(format!(
                "tick time must be between 1 ms and {} ms, got {:?}",
                i32::MAX,
                self.tick_time
            )));
        }
        if self.init_limit == 0 || self.sync_limit == 0 {
            return Err(Error::InvalidArgument("initLimit and syncLimit must be at least 1 tick".into()));
        }
        if let (Some(min), Some(max)) = (self.min_session_timeout, self.max_session_timeout) {
            if min > max {
                return Err(Error::InvalidArgument(format!(
                    "min session timeout {min:?} exceeds max session timeout {max:?}"
                )));
            }
        }
        Ok(())
    }
}

/// What both builders collect: timing, start deadline, backend, installation or image, and extra
/// `zoo.cfg` lines.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub timing: Timing,
    pub start_timeout: Duration,
    /// `None`: [`Backend::from_env`].
    pub backend: Option<Backend>,
    pub zookeeper_home: Option<PathBuf>,
    /// The Docker backend's image; `None`: [`Backend::image_from_env`].
    pub image: Option<String>,
    pub extra: Vec<(String, String)>,
    /// TLS on a secure client port besides the plaintext one.
    pub tls: Option<TlsSettings>,
    /// SASL DIGEST-MD5 users and their passwords.
    pub sasl_users: Vec<(String, String)>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            timing: Timing::default(),
            start_timeout: Duration::from_secs(30),
            backend: None,
            zookeeper_home: None,
            image: None,
            extra: Vec::new(),
            tls: None,
            sasl_users: Vec::new(),
        }
    }
}

impl Settings {
    /// Validates the settings and picks the backend: the builder's choice, else the
    /// environment's. A ZooKeeper home given to the builder means the local backend.
    pub fn validate(&self) -> Result<Backend> {
        self.timing.validate()?;
        if self.start_timeout.is_zero() {
            return Err(Error::InvalidArgument("start timeout must not be zero".into()));
        }
        for (key, value) in &self.extra {
            let bad = |s: &str| s.is_empty() || s.contains(['\n', '\r']);
            if bad(key) || key.contains('=') || value.contains(['\n', '\r']) {
                return Err(Error::InvalidArgument(format!("invalid zoo.cfg setting {key:?}={value:?}")));
            }
        }
        let backend = match (self.backend, &self.zookeeper_home) {
            (Some(backend), _) => backend,
            (None, Some(_)) => Backend::Local,
            (None, None) => Backend::from_env()?,
        };
        if (self.tls.is_some() || !self.sasl_users.is_empty()) && backend != Backend::Local {
            return Err(Error::Unsupported("TLS and SASL test servers run on the local backend only"));
        }
        for (user, password) in &self.sasl_users {
            let bad = |s: &str| s.is_empty() || s.contains(['"', '\\', '\n', '\r', ' ', ';']);
            if bad(user) || password.contains(['"', '\\', '\n', '\r']) {
                return Err(Error::InvalidArgument(format!("invalid SASL user {user:?} or password")));
            }
        }
        Ok(backend)
    }

    /// The `zoo.cfg` lines beyond the kit's own: TLS first, then the builder's.
    pub fn extra_lines(&self) -> Vec<(String, String)> {
        let tls = self.tls.as_ref().map(TlsSettings::zoo_cfg).unwrap_or_default();
        let sasl = (!self.sasl_users.is_empty()).then(|| {
            ("authProvider.1".to_owned(), "org.apache.zookeeper.server.auth.SASLAuthenticationProvider".to_owned())
        });
        tls.into_iter().chain(sasl).chain(self.extra.iter().cloned()).collect()
    }

    /// The JAAS configuration of a server with SASL users: DIGEST-MD5 logins for each.
    pub fn jaas(&self) -> Option<String> {
        if self.sasl_users.is_empty() {
            return None;
        }
        let users: String = self.sasl_users.iter().map(|(u, p)| format!("\n  user_{u}=\"{p}\"")).collect();
        Some(format!("Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required{users};\n}};\n"))
    }

    /// How many client ports each server needs: the plaintext one, and a secure one with TLS.
    pub fn client_ports(&self) -> usize {
        1 + usize::from(self.tls.is_some())
    }

    /// The local installation to run (local backend).
    pub fn installation(&self) -> Result<Installation> {
        match &self.zookeeper_home {
            Some(home) => Installation::from_zookeeper_home(home),
            None => Installation::discover(),
        }
    }
}

/// Everything one server's `zoo.cfg` says.
#[derive(Debug, Clone)]
pub(crate) struct ServerConfig {
    pub data_dir: PathBuf,
    pub client_port: u16,
    /// `secureClientPort` (TLS), if any.
    pub secure_port: Option<u16>,
    pub timing: Timing,
    /// The ensemble; empty for a standalone server.
    pub peers: Vec<Peer>,
    /// Extra `key=value` lines, written last.
    pub extra: Vec<(String, String)>,
    /// The JAAS configuration (SASL), written to `jaas.conf` beside `zoo.cfg`.
    pub jaas: Option<String>,
    /// Dynamic reconfiguration enabled (`reconfigEnabled`; ACLs skipped so that any client
    /// may reconfigure).
    pub reconfig: bool,
}

impl ServerConfig {
    /// The text of `zoo.cfg`.
    pub fn render(&self) -> String {
        let t = &self.timing;
        let mut out = String::new();
        let mut line = |key: &str, value: &dyn std::fmt::Display| {
            let _ = writeln!(out, "{key}={value}");
        };
        line("tickTime", &t.tick_time.as_millis());
        line("initLimit", &t.init_limit);
        line("syncLimit", &t.sync_limit);
        line("dataDir", &self.data_dir.display());
        line("clientPort", &self.client_port);
        line("clientPortAddress", &"127.0.0.1");
        if let Some(port) = self.secure_port {
            line("secureClientPort", &port);
            line("secureClientPortAddress", &"127.0.0.1");
        }
        if let Some(min) = t.min_session_timeout {
            line("minSessionTimeout", &min.as_millis());
        }
        if let Some(max) = t.max_session_timeout {
            line("maxSessionTimeout", &max.as_millis());
        }
        line("admin.enableServer", &false);
        line("4lw.commands.whitelist", &"*");
        // Test data is thrown away: skip the fsync on every write.
        line("forceSync", &"no");
        if !self.peers.is_empty() {
            // A one-server ensemble still runs as a quorum (Mode: leader), like a bigger one.
            line("standaloneEnabled", &false);
            line("quorumListenOnAllIPs", &false);
            line("reconfigEnabled", &self.reconfig);
            if self.reconfig {
                line("skipACL", &"yes");
            }
            for p in &self.peers {
                line(&format!("server.{}", p.id), &p.spec(self.reconfig));
            }
        }
        for (key, value) in &self.extra {
            line(key, value);
        }
        out
    }

    /// Writes `zoo.cfg` (and the logging configuration) into `conf_dir`, and `myid` into the data
    /// directory when `my_id` is given. Creates both directories. Returns the path of `zoo.cfg`.
    pub fn write(&self, conf_dir: &Path, my_id: Option<u32>) -> Result<PathBuf> {
        std::fs::create_dir_all(conf_dir)?;
        std::fs::create_dir_all(&self.data_dir)?;
        let cfg = conf_dir.join("zoo.cfg");
        std::fs::write(&cfg, self.render())?;
        std::fs::write(conf_dir.join("log4j.properties"), LOG4J_PROPERTIES)?;
        std::fs::write(conf_dir.join("logback.xml"), LOGBACK_XML)?;
        if let Some(jaas) = &self.jaas {
            std::fs::write(conf_dir.join(JAAS_FILE), jaas)?;
        }
        if let Some(id) = my_id {
            std::fs::write(self.data_dir.join("myid"), format!("{id}\n"))?;
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(peers: Vec<Peer>) -> ServerConfig {
        ServerConfig {
            data_dir: PathBuf::from("/tmp/x/data"),
            client_port: 2181,
            secure_port: None,
            timing: Timing::default(),
            peers,
            extra: vec![("localSessionsEnabled".into(), "false".into())],
            jaas: None,
            reconfig: false,
        }
    }

    #[test]
    fn standalone_has_no_server_lines() {
        let text = config(vec![]).render();
        assert!(text.contains("tickTime=200\n"));
        assert!(text.contains("clientPort=2181\n"));
        assert!(text.contains("clientPortAddress=127.0.0.1\n"));
        assert!(text.contains("4lw.commands.whitelist=*\n"));
        assert!(text.ends_with("localSessionsEnabled=false\n"));
        assert!(!text.contains("server."));
    }

    #[test]
    fn ensemble_lists_every_peer_on_loopback() {
        let peers = vec![
            Peer { id: 1, quorum_port: 3001, election_port: 4001, client_port: 2181 },
            Peer { id: 2, quorum_port: 3002, election_port: 4002, client_port: 2182 },
        ];
        let text = config(peers).render();
        assert!(text.contains("server.1=127.0.0.1:3001:4001\n"));
        assert!(text.contains("server.2=127.0.0.1:3002:4002\n"));
        assert!(text.contains("standaloneEnabled=false\n"));
    }

    #[test]
    fn timing_is_validated() {
        let mut t = Timing::default();
        assert!(t.validate().is_ok(), "{:?}", t.validate());
        t.tick_time = Duration::ZERO;
        assert!(matches!(t.validate(), Err(Error::InvalidArgument(_))));
        let t = Timing {
            min_session_timeout: Some(Duration::from_secs(5)),
            max_session_timeout: Some(Duration::from_secs(1)),
            ..Timing::default()
        };
        assert!(matches!(t.validate(), Err(Error::InvalidArgument(_))));
    }
}
