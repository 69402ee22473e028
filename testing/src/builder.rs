//! [`TestingBuilder`]: the settings a [`TestingServer`](super::TestingServer) and a
//! [`TestingCluster`](super::TestingCluster) are both started with.

use std::path::PathBuf;
use std::time::Duration;

use super::backend::Backend;
use super::config::Settings;
#[cfg(feature = "tls")]
use {
    super::tls::{TestCertificates, TlsSettings},
    crate::Result,
    std::sync::Arc,
};

/// Configures and starts test servers: the settings every server of the kit takes, plus `K`,
/// what only one kind of start has. Used as [`TestingServerBuilder`](super::TestingServerBuilder)
/// (`K` = [`Standalone`]) and [`TestingClusterBuilder`](super::TestingClusterBuilder)
/// (`K` = [`Ensemble`]), made by [`TestingServer::builder`](super::TestingServer::builder) and
/// [`TestingCluster::builder`](super::TestingCluster::builder).
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `start` is awaited"]
pub struct TestingBuilder<K> {
    pub(super) settings: Settings,
    pub(super) kind: K,
}

/// What only a standalone [`TestingServer`](super::TestingServer) is started with (see
/// [`TestingServerBuilder::port`](super::TestingServerBuilder::port)).
#[derive(Debug, Clone, Default)]
pub struct Standalone {
    pub(super) port: Option<u16>,
}

/// What only a [`TestingCluster`](super::TestingCluster) is started with (see
/// [`TestingClusterBuilder::servers`](super::TestingClusterBuilder::servers)).
#[derive(Debug, Clone)]
pub struct Ensemble {
    pub(super) servers: usize,
    pub(super) peer_proxies: bool,
    pub(super) reconfig: bool,
}

impl Default for Ensemble {
    fn default() -> Self {
        Ensemble { servers: 3, peer_proxies: false, reconfig: false }
    }
}

impl<K> TestingBuilder<K> {
    /// ZooKeeper's `tickTime` (default 200 ms, so that tests run fast). A server bounds session
    /// timeouts to 2-20 ticks unless [`min_session_timeout`](Self::min_session_timeout) /
    /// [`max_session_timeout`](Self::max_session_timeout) say otherwise: with the default tick a
    /// client gets at most a 4 s session.
    pub fn tick_time(mut self, tick: Duration) -> Self {
        self.settings.timing.tick_time = tick;
        self
    }

    /// The smallest session timeout the servers grant (`minSessionTimeout`).
    pub fn min_session_timeout(mut self, timeout: Duration) -> Self {
        self.settings.timing.min_session_timeout = Some(timeout);
        self
    }

    /// The largest session timeout the servers grant (`maxSessionTimeout`).
    pub fn max_session_timeout(mut self, timeout: Duration) -> Self {
        self.settings.timing.max_session_timeout = Some(timeout);
        self
    }

    /// How long `start` and a restart ([`TestingServer::restart`](super::TestingServer::restart),
    /// [`TestingCluster::restart`](super::TestingCluster::restart)) wait for the servers to
    /// serve (default 30 s).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.settings.start_timeout = timeout;
        self
    }

    /// Where the servers run (default: [`Backend::from_env`], which reads `ZK_TEST_BACKEND`).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.settings.backend = Some(backend);
        self
    }

    /// The image of the Docker backend (default: `ZK_TEST_IMAGE`, else
    /// [`DEFAULT_IMAGE`](super::DEFAULT_IMAGE)).
    pub fn image(mut self, image: impl Into<String>) -> Self {
        self.settings.image = Some(image.into());
        self
    }

    /// Run the release-tarball installation in `home` instead of discovering one (see
    /// [`Installation::from_zookeeper_home`](super::Installation::from_zookeeper_home)); the
    /// `ZOOKEEPER_HOME` environment variable is then ignored. Implies the local backend unless
    /// [`backend`](Self::backend) says otherwise.
    pub fn zookeeper_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.settings.zookeeper_home = Some(home.into());
        self
    }

    /// Lets the servers create TTL nodes (`zookeeper.extendedTypesEnabled`, off by default in
    /// ZooKeeper): a server without it refuses them with `Unimplemented`. The kit's servers
    /// reap expired TTL nodes and empty containers every 100 ms.
    pub fn extended_types(self, enabled: bool) -> Self {
        self.config("extendedTypesEnabled", enabled.to_string())
    }
}

// TLS test servers: the `tls` feature.
#[cfg(feature = "tls")]
impl<K> TestingBuilder<K> {
    /// Serves TLS too: each server gets a `secureClientPort` on 127.0.0.1 (served by the Netty
    /// connection factory, with PEM key and trust stores from a fresh [`TestCertificates`])
    /// besides its plaintext client port, which stays for the kit's own probes and for tests that
    /// reach a plaintext port. Clients need no certificate unless
    /// [`tls_client_auth`](Self::tls_client_auth) says so. Local backend only.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when the certificates cannot be made.
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(self) -> Result<Self> {
        Ok(self.tls_certificates(Arc::new(TestCertificates::generate()?)))
    }

    /// As [`tls`](Self::tls), with these certificates (for example
    /// [`TestCertificates::generate_expired`], or one CA shared by several servers).
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls_certificates(mut self, certs: Arc<TestCertificates>) -> Self {
        let client_auth = self.settings.tls.as_ref().is_some_and(|t| t.client_auth);
        self.settings.tls = Some(TlsSettings { certs, client_auth });
        self
    }

    /// Whether clients must present a certificate signed by the CA (mutual TLS:
    /// `ssl.clientAuth=need`; otherwise `none`). Call after [`tls`](Self::tls) or
    /// [`tls_certificates`](Self::tls_certificates); without TLS it does nothing.
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls_client_auth(mut self, required: bool) -> Self {
        if let Some(tls) = &mut self.settings.tls {
            tls.client_auth = required;
        }
        self
    }
}

impl<K> TestingBuilder<K> {
    /// SASL DIGEST-MD5: the servers accept these `(user, password)` logins (a JAAS `Server`
    /// section with `DigestLoginModule`, and `authProvider.1=...SASLAuthenticationProvider`).
    /// A client whose SASL login fails is refused (`AUTH_FAILED`); clients without SASL are
    /// still served. Local backend only.
    pub fn sasl_digest<U: Into<String>, P: Into<String>>(mut self, users: impl IntoIterator<Item = (U, P)>) -> Self {
        self.settings.sasl_users = users.into_iter().map(|(u, p)| (u.into(), p.into())).collect();
        self
    }

    /// Adds a `key=value` line to every server's `zoo.cfg` (after the kit's own, so it wins),
    /// for example `("localSessionsEnabled", "true")`.
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.extra.push((key.into(), value.into()));
        self
    }
}
