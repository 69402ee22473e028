//! The framework's builder.

use std::sync::Arc;
use std::time::Duration;

use super::acl::Acl;
use super::acl_provider::{AclChoice, AclProvider, AclSetting};
use super::paths::normalize_namespace;
use super::retry::{ExponentialBackoff, RetryPolicy};
use super::state::ErrorPolicy;
use super::Framework;
use crate::error::{Error, Result};

/// Where transaction markers live by default, under the namespace (a persistent node, created
/// on first use).
pub(crate) const MARKERS: &str = "/zk-recipes-txn";

/// The authentication entries of [`FrameworkBuilder::auth`] (scheme, credentials). `Debug`
/// names the schemes only: credentials never reach a log through a builder's or a framework's
/// `Debug`.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Credentials(pub Vec<(String, Vec<u8>)>);

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(scheme, _)| Redacted(scheme))).finish()
    }
}

/// `scheme:<redacted>`.
struct Redacted<'a>(&'a str);

impl std::fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:<redacted>", self.0)
    }
}

/// Everything a [`Framework`] was built with.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub connect_string: String,
    pub session_timeout: Duration,
    pub connection_timeout: Duration,
    pub operation_timeout: Duration,
    pub retry: Arc<dyn RetryPolicy>,
    pub namespace: Option<String>,
    /// How a create's ACL is chosen.
    pub acl: AclChoice,
    pub auth: Credentials,
    pub default_data: Vec<u8>,
    /// The provider of compressed handles (gzip by default).
    pub compression: super::compression::Codec,
    /// Every handle compresses unless it opts out (Curator's `enableCompression`).
    pub compression_enabled: bool,
    pub error_policy: ErrorPolicy,
    pub read_only: bool,
    /// Sessions re-created after a reconfiguration use the servers of `/zookeeper/config`.
    pub ensemble_tracker: bool,
    /// Lock, cache and queue metrics carry a `path` label (feature `metrics`).
    pub metrics_path_labels: bool,
    /// The parent of the transaction markers, under the namespace.
    pub txn_markers: String,
    /// The largest request sent to the server, in bytes as it reads them.
    pub max_request_size: usize,
    /// The TLS settings in use, shared by every session (replaced by `Framework::reload`).
    #[cfg(feature = "tls")]
    pub tls: Option<super::security::LiveTls>,
    /// Endpoints without a scheme are TLS (set with TLS, see [`FrameworkBuilder::tls`]).
    #[cfg(feature = "tls")]
    pub tls_everywhere: bool,
    #[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
    pub sasl: Option<super::security::SaslConfig>,
}

/// How long a framework operation made outside any [`with_deadline`](crate::with_deadline)
/// scope may take, by default (see [`FrameworkBuilder::operation_timeout`]).
pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest request a framework sends by default
/// ([`FrameworkBuilder::max_request_size`]): ZooKeeper's default `jute.maxbuffer`, 0xfffff
/// bytes (1 MiB less one byte). A server closes the connection of a client that sends more.
pub const DEFAULT_MAX_REQUEST_SIZE: usize = 0xF_FFFF;

/// A limit under which the recipes could not work (a lock's create with its ACL and a long
/// path takes a few hundred bytes): [`FrameworkBuilder::max_request_size`] refuses less.
const MIN_MAX_REQUEST_SIZE: usize = 4096;

/// Builds a [`Framework`]. Obtain one with [`Framework::builder`].
///
/// Its `Debug` output is safe to log: the credentials of [`auth`](Self::auth), a SASL
/// password and a TLS private key are shown as `<redacted>`.
///
/// Defaults follow Curator: session timeout 60 s (the server may negotiate it down or up),
/// connection timeout 15 s, [`ExponentialBackoff`] from 1 s with 3 retries, no namespace,
/// an [`operation_timeout`](Self::operation_timeout) of 30 s (Curator has none),
/// open ACL (`world:anyone` all permissions), no auth, the standard error policy.
/// One difference: the default node data is empty (Curator writes the local IP address; use
/// [`default_data`](Self::default_data) for the same).
///
/// # Examples
/// ```no_run
/// # async fn demo() -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::{ErrorPolicy, Framework, RetryNTimes};
///
/// let fw = Framework::builder()
///     .connect_string("zk1:2181,zk2:2181,zk3:2181")
///     .session_timeout(Duration::from_secs(20))
///     .connection_timeout(Duration::from_secs(5))
///     .retry_policy(RetryNTimes::new(5, Duration::from_millis(200)))
///     .namespace("billing")                       // every path is under /billing
///     .auth("digest", "billing:secret")
///     .error_policy(ErrorPolicy::Standard)
///     .connect()
///     .await?;
/// # drop(fw);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `connect` is called"]
pub struct FrameworkBuilder {
    connect_string: String,
    session_timeout: Duration,
    connection_timeout: Duration,
    operation_timeout: Duration,
    retry: Arc<dyn RetryPolicy>,
    namespace: String,
    acl: AclSetting,
    auth: Credentials,
    default_data: Vec<u8>,
    compression: super::compression::Codec,
    compression_enabled: bool,
    error_policy: ErrorPolicy,
    read_only: bool,
    ensemble_tracker: bool,
    metrics_path_labels: bool,
    txn_markers: String,
    max_request_size: usize,
    #[cfg(feature = "tls")]
    tls: Option<super::security::TlsConfig>,
    tls_everywhere: bool,
    #[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
    sasl: Option<super::security::SaslConfig>,
}

impl Default for FrameworkBuilder {
    fn default() -> Self {
        Self {
            connect_string: String::new(),
            session_timeout: Duration::from_secs(60),
            connection_timeout: Duration::from_secs(15),
            operation_timeout: DEFAULT_OPERATION_TIMEOUT,
            retry: Arc::new(ExponentialBackoff::new(Duration::from_secs(1), 3)),
            namespace: String::new(),
            acl: AclSetting::Fixed(Acl::anyone_all()),
            auth: Credentials::default(),
            default_data: Vec::new(),
            compression: super::compression::Codec::default(),
            compression_enabled: false,
            error_policy: ErrorPolicy::Standard,
            read_only: false,
            ensemble_tracker: true,
            metrics_path_labels: false,
            txn_markers: MARKERS.to_string(),
            max_request_size: DEFAULT_MAX_REQUEST_SIZE,
            #[cfg(feature = "tls")]
            tls: None,
            tls_everywhere: false,
            #[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
            sasl: None,
        }
    }
}

impl FrameworkBuilder {
    /// The ensemble: `host:port[,host:port...]` (an optional `/chroot` suffix is passed to the
    /// client as is).
    pub fn connect_string(mut self, hosts: impl Into<String>) -> Self {
        self.connect_string = hosts.into();
        self
    }

    /// Requested session timeout (the server clamps it to `[2, 20] × tickTime`). Checked by
    /// [`connect`](Self::connect): from 1 ms (ZooKeeper counts it in milliseconds; zero is
    /// refused) to `i32::MAX` ms, about 24 days (what the protocol carries; `Duration::MAX` is
    /// refused). zookeeper-client gives each connection attempt 2/5 of it until the server
    /// has answered, so a timeout shorter than a few round trips to the ensemble may not
    /// connect ([`Error::ConnectTimeout`]).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long to wait for a session (first connect) or a connection (before each
    /// operation attempt) before failing. Zero is refused by [`connect`](Self::connect);
    /// `Duration::MAX` is no bound: the first connect waits as long as it takes (an operation
    /// still ends by its own deadline).
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// How long an operation made outside any [`with_deadline`](crate::with_deadline) scope may
    /// take, all its attempts, pauses and waits for a connection included: past it the
    /// operation returns [`Error::Timeout`] (or, for a plain write that was sent and not
    /// answered, [`Error::OutcomeUnknown`]), whatever the server does (answers, refuses, or
    /// stops answering with the connection open). Also the time a `try_*` form of a recipe
    /// (`try_acquire`, `try_take`...) may take. Default
    /// [`DEFAULT_OPERATION_TIMEOUT`](crate::DEFAULT_OPERATION_TIMEOUT) (30 s): longer than a
    /// ZooKeeper leader election, shorter than the default session timeout. A recipe's wait
    /// without a timeout (`acquire()`) is not bounded by it, only each operation it makes.
    /// Zero is refused by [`connect`](Self::connect); `Duration::MAX` is no bound: an
    /// operation outside any scope takes as long as the server takes to answer.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// use zk_recipes::Framework;
    ///
    /// let fw = Framework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .operation_timeout(Duration::from_secs(5))
    ///     .connect()
    ///     .await?;
    /// # drop(fw); Ok(()) }
    /// ```
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// The largest request, in bytes, that the framework sends to the ensemble: what the
    /// servers accept, their `jute.maxbuffer`. Default
    /// [`DEFAULT_MAX_REQUEST_SIZE`](crate::DEFAULT_MAX_REQUEST_SIZE), ZooKeeper's own default
    /// (0xfffff bytes, 1 MiB less one byte).
    ///
    /// A ZooKeeper server closes the connection of a client that sends a larger request: every
    /// lock, lease and leadership held through that connection would be suspended, and the
    /// retry loop would send the request again. So the framework measures each request as the
    /// server will read it (the path with the namespace, the data as stored — compressed where
    /// the handle compresses —, the ACL, and for a [`transaction`](crate::Framework::transaction)
    /// every operation together) and refuses a larger one before sending it, with
    /// [`Error::TooLarge`] naming the size and this limit; it is never sent nor retried. Every
    /// write path checks it: creates, data writes, transactions, and the nodes every recipe
    /// writes (queue items, shared values, modeled nodes, registrations...).
    ///
    /// To store larger data, raise both together: start every server of the ensemble with
    /// `-Djute.maxbuffer=<bytes>` (in `SERVER_JVMFLAGS`, the same value on every server — a
    /// follower forwards a write to the leader, and a snapshot must load everywhere), then
    /// set this to the same value. Raising it here alone only moves the refusal to the server,
    /// which drops the connection.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// // the servers run with -Djute.maxbuffer=4194304
    /// let fw = zk_recipes::Framework::builder()
    ///     .connect_string("zk1:2181,zk2:2181,zk3:2181")
    ///     .max_request_size(4 * 1024 * 1024)
    ///     .connect()
    ///     .await?;
    /// # drop(fw); Ok(()) }
    /// ```
    pub fn max_request_size(mut self, bytes: usize) -> Self {
        self.max_request_size = bytes;
        self
    }

    /// The retry policy for retryable failures.
    pub fn retry_policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.retry = Arc::new(policy);
        self
    }

    /// A namespace: every path used through the framework is under `/<namespace>`, which is
    /// created on demand.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The ACL for every node the framework and its recipes create (default:
    /// [`Acl::anyone_all`], ZooKeeper's `OPEN_ACL_UNSAFE`). An empty list is refused by
    /// [`connect`](Self::connect) with [`Error::InvalidArgument`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// use zk_recipes::{Acl, Framework};
    ///
    /// let fw = Framework::builder()
    ///     .connect_string("zk1:2181")
    ///     .auth("digest", "svc:s3cret")
    ///     .default_acl(Acl::creator_all())
    ///     .connect()
    ///     .await?;
    /// # drop(fw);
    /// # Ok(()) }
    /// ```
    pub fn default_acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = AclSetting::Fixed(acl);
        self
    }

    /// Chooses the ACL of each node the framework and its recipes create by its path
    /// (Curator's `aclProvider`); replaces [`default_acl`](Self::default_acl) (the last one set
    /// wins). See [`AclProvider`] for what it is asked and when. A provider whose
    /// [`default_acl`](AclProvider::default_acl) is empty is refused by
    /// [`connect`](Self::connect) with [`Error::InvalidArgument`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(provider: impl zk_recipes::AclProvider) -> zk_recipes::Result<()> {
    /// let fw = zk_recipes::Framework::builder().connect_string("zk1:2181").acl_provider(provider).connect().await?;
    /// # drop(fw);
    /// # Ok(()) }
    /// ```
    pub fn acl_provider(mut self, provider: impl AclProvider) -> Self {
        self.acl = AclSetting::Provider(Arc::new(provider));
        self
    }

    /// Adds authentication, e.g. `("digest", b"user:password")`, sent on every (re)connect.
    /// `Debug` shows the scheme only. An empty scheme is refused by [`connect`](Self::connect)
    /// ([`Error::InvalidArgument`], argument `auth`): the server would refuse the session.
    pub fn auth(mut self, scheme: impl Into<String>, auth: impl Into<Vec<u8>>) -> Self {
        self.auth.0.push((scheme.into(), auth.into()));
        self
    }

    /// Data written into recipe nodes that have no data of their own.
    pub fn default_data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.default_data = data.into();
        self
    }

    /// The [`CompressionProvider`](crate::CompressionProvider) of
    /// [`compressed`](Framework::compressed) handles and of
    /// [`enable_compression`](Self::enable_compression): Curator's `compressionProvider`.
    /// The default is [`GzipCompression`](crate::GzipCompression), Curator's default.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// use zk_recipes::{Framework, GzipCompression};
    ///
    /// let fw = Framework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .compression_provider(GzipCompression::default()) // or a provider of your own
    ///     .connect()
    ///     .await?;
    /// # drop(fw); Ok(()) }
    /// ```
    pub fn compression_provider(mut self, provider: impl crate::CompressionProvider) -> Self {
        self.compression = super::compression::Codec(Arc::new(provider));
        self
    }

    /// Compresses all node data the framework writes and decompresses all it reads, unless a
    /// handle opts out with [`Framework::uncompressed`]: Curator 5.8's `enableCompression()`.
    /// Off by default.
    ///
    /// It applies to the framework's data operations ([`create`](Framework::create),
    /// [`create_protected`](Framework::create_protected), [`get_data`](Framework::get_data),
    /// [`set_data`](Framework::set_data), a [`transaction`](Framework::transaction)'s creates
    /// and writes, and the others [`Framework::compressed`] lists) and to the values of the recipes that read and write them through those:
    /// [`SharedValue`](crate::SharedValue) and [`SharedCount`](crate::SharedCount), and the
    /// items of the distributed queues. The other recipes keep their data uncompressed (see
    /// the guide, docs/guide/framework.md). Like Curator, a compressing read of a node that
    /// was written uncompressed fails with [`Error::CorruptData`](crate::Error::CorruptData).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// use zk_recipes::Framework;
    ///
    /// let fw = Framework::builder().connect_string("127.0.0.1:2181").enable_compression().connect().await?;
    /// assert!(fw.compression_enabled());
    /// assert!(!fw.uncompressed().compression_enabled());
    /// # Ok(()) }
    /// ```
    pub fn enable_compression(mut self) -> Self {
        self.compression_enabled = true;
        self
    }

    /// Which connection states recipes treat as the loss of what they hold.
    pub fn error_policy(mut self, policy: ErrorPolicy) -> Self {
        self.error_policy = policy;
        self
    }

    /// Allow connecting to read-only servers (reported as `READ_ONLY`).
    pub fn can_be_read_only(mut self, allow: bool) -> Self {
        self.read_only = allow;
        self
    }

    /// Whether to follow dynamic reconfigurations of the ensemble (Curator's
    /// `EnsembleTracker`; on by default): the framework reads `/zookeeper/config` with a watch on
    /// every session, and once it differs from the configuration first read, every session
    /// the framework re-creates after a loss connects to the client addresses listed there
    /// instead of the connect string given here ([`Framework::ensemble_connect_string`]).
    /// zookeeper-client itself keeps its connect string. Not followed over TLS
    /// (`/zookeeper/config` names the plaintext client ports only), nor for an ensemble whose
    /// configuration names no client addresses.
    pub fn ensemble_tracker(mut self, follow: bool) -> Self {
        self.ensemble_tracker = follow;
        self
    }

    /// Whether the lock, cache and queue metrics of this framework's recipes carry a `path`
    /// label (off by default; feature `metrics`, without which nothing is recorded).
    ///
    /// Off, their labels are low-cardinality — the recipe kind, an outcome, a reason — so a
    /// service that locks a path per order or per tenant does not create a time series per
    /// path in its monitoring system. Turn it on where the paths are a small fixed set and a
    /// dashboard per path is wanted. Leadership metrics always carry their path (see
    /// `docs/guide/observability.md`).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// let fw = zk_recipes::Framework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .metrics_path_labels(true)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_path_labels(mut self, per_path: bool) -> Self {
        self.metrics_path_labels = per_path;
        self
    }

    /// Where [`Transaction`](crate::Transaction) commits write their marker nodes
    /// (`<root>/<uuid>`, a persistent node deleted once the commit's outcome is known; see
    /// [`Transaction::without_marker`](crate::Transaction::without_marker)): a path under the
    /// namespace, `/zk-recipes-txn` by default. `<root>` is created (persistent, its missing
    /// ancestors as containers) by the first commit; give the framework's ACL the right to.
    /// Checked by [`connect`](Self::connect): a valid path, not `/`.
    ///
    /// ```no_run
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// let fw = zk_recipes::Framework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .namespace("orders")
    ///     .transaction_marker_root("/internal/txn") // markers at /orders/internal/txn/<uuid>
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn transaction_marker_root(mut self, root: impl Into<String>) -> Self {
        self.txn_markers = root.into();
        self
    }

    /// TLS to the ensemble (feature `tls`): `tls` names the CA and, for mutual TLS, the client
    /// certificate. Every server of the connect string is then TLS (`host:port` means
    /// `tcp+tls://host:port`); a plaintext `tcp://` endpoint is refused by
    /// [`connect`](Self::connect). To mix, use [`tls_for_marked_endpoints`](Self::tls_for_marked_endpoints).
    /// The settings serve every session the framework opens, also those it re-creates after a
    /// loss; certificates read from files are read again by
    /// [`Framework::reload`](crate::Framework::reload).
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, tls: super::security::TlsConfig) -> Self {
        self.tls = Some(tls);
        self.tls_everywhere = true;
        self
    }

    /// TLS (feature `tls`) only for the endpoints written `tcp+tls://host:port`; the others
    /// stay plaintext, as zookeeper-client reads a connect string.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls_for_marked_endpoints(mut self, tls: super::security::TlsConfig) -> Self {
        self.tls = Some(tls);
        self.tls_everywhere = false;
        self
    }

    /// SASL authentication of every session (features `sasl`, `sasl-gssapi`).
    #[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "sasl", feature = "sasl-gssapi"))))]
    pub fn sasl(mut self, sasl: super::security::SaslConfig) -> Self {
        self.sasl = Some(sasl);
        self
    }

    /// Checks the connect string's schemes against the TLS settings.
    fn validate_schemes(&self) -> Result<()> {
        let bad = |reason: &str| {
            Err(Error::invalid("connect_string", format!("connect string {:?}: {reason}", self.connect_string)))
        };
        let has = |scheme: &str| self.connect_string.split(',').any(|h| h.trim().starts_with(scheme));
        #[cfg(feature = "tls")]
        let tls = self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        let tls = false;
        if has("tcp+tls://") && !tls {
            return bad("a tcp+tls:// endpoint needs TLS settings (`FrameworkBuilder::tls`, feature `tls`)");
        }
        if has("tcp://") && self.tls_everywhere {
            return bad("a plaintext tcp:// endpoint, but every endpoint must be TLS (`FrameworkBuilder::tls`)");
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            tls.certs()?;
        }
        Ok(())
    }

    pub(crate) fn validate(self) -> Result<Config> {
        if self.connect_string.trim().is_empty() {
            return Err(Error::invalid("connect_string", "connect string is empty"));
        }
        // ZooKeeper counts it in milliseconds: less than one is zero
        if self.session_timeout < Duration::from_millis(1) {
            return Err(Error::invalid("session_timeout", "session timeout must be at least 1 ms"));
        }
        if self.connection_timeout.is_zero() {
            return Err(Error::invalid("connection_timeout", "connection timeout must be greater than zero"));
        }
        if self.operation_timeout.is_zero() {
            return Err(Error::invalid("operation_timeout", "operation timeout must be greater than zero"));
        }
        if self.session_timeout > Duration::from_millis(i32::MAX as u64) {
            return Err(Error::invalid("session_timeout", "session timeout is too large"));
        }
        if self.max_request_size < MIN_MAX_REQUEST_SIZE {
            return Err(Error::invalid(
                "max_request_size",
                format!(
                    "{} bytes is less than the smallest request a recipe sends ({MIN_MAX_REQUEST_SIZE} bytes)",
                    self.max_request_size
                ),
            ));
        }
        if self.auth.0.iter().any(|(scheme, _)| scheme.trim().is_empty()) {
            return Err(Error::invalid("auth", "an authentication scheme must not be empty"));
        }
        let acl = self.acl.build()?;
        self.validate_schemes()?;
        super::paths::validate_path(&self.txn_markers)?;
        if self.txn_markers == "/" {
            return Err(Error::InvalidPath {
                path: self.txn_markers,
                reason: "the transaction markers need a node of their own, not the namespace's root",
            });
        }
        Ok(Config {
            connect_string: self.connect_string,
            session_timeout: self.session_timeout,
            connection_timeout: self.connection_timeout,
            operation_timeout: self.operation_timeout,
            retry: self.retry,
            namespace: normalize_namespace(&self.namespace)?,
            acl,
            auth: self.auth,
            default_data: self.default_data,
            compression: self.compression,
            compression_enabled: self.compression_enabled,
            error_policy: self.error_policy,
            read_only: self.read_only,
            ensemble_tracker: self.ensemble_tracker,
            metrics_path_labels: self.metrics_path_labels,
            txn_markers: self.txn_markers,
            max_request_size: self.max_request_size,
            #[cfg(feature = "tls")]
            tls: self.tls.map(super::security::LiveTls::new).transpose()?,
            #[cfg(feature = "tls")]
            tls_everywhere: self.tls_everywhere,
            #[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
            sasl: self.sasl,
        })
    }

    /// Connects and waits for the first session.
    ///
    /// # Errors
    /// * [`Error::InvalidArgument`] / [`Error::InvalidPath`] for a bad configuration (empty
    ///   connect string, zero timeouts, empty ACL, invalid namespace or transaction marker
    ///   root, unreadable TLS
    ///   certificates, a `tcp+tls://` endpoint without TLS settings);
    /// * [`Error::ConnectTimeout`] when no session is established within the connection
    ///   timeout (the ensemble is unreachable);
    /// * [`Error::Tls`] when every server is reachable but fails the TLS handshake (feature
    ///   `tls`), usually well before the connection timeout;
    /// * [`Error::AuthFailed`] when the server refuses the SASL authentication;
    /// * [`Error::ZooKeeper`] for another refusal by the server.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future abandons the half-built session.
    pub async fn connect(self) -> Result<Framework> {
        Framework::connect_with(self.validate()?).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRETS: [&str; 3] = ["s3cr3t-digest", "s3cr3t-sasl", "s3cr3t-key"];

    fn assert_redacted(debug: &str) {
        for secret in SECRETS {
            assert!(!debug.contains(secret), "{secret} printed: {debug}");
        }
        // nor as bytes (a `Vec<u8>`'s Debug)
        let bytes = format!("{:?}", b"app:s3cr3t-digest".to_vec());
        assert!(!debug.contains(bytes.trim_matches(['[', ']'])), "credential bytes printed: {debug}");
    }

    fn builder() -> FrameworkBuilder {
        let b = Framework::builder().connect_string("127.0.0.1:2181").auth("digest", "app:s3cr3t-digest");
        #[cfg(feature = "sasl")]
        let b = b.sasl(super::super::SaslConfig::digest_md5("app", "s3cr3t-sasl"));
        b
    }

    #[test]
    fn debug_never_prints_credentials() {
        let b = builder();
        let debug = format!("{b:?}");
        assert_redacted(&debug);
        assert!(debug.contains("digest:<redacted>"), "{debug}");
        let config = b.validate().expect("a valid configuration");
        let debug = format!("{config:?} {config:#?}");
        assert_redacted(&debug);
        assert!(debug.contains("digest:<redacted>"), "{debug}");
    }

    #[cfg(feature = "tls")]
    #[test]
    fn debug_never_prints_a_tls_key() {
        let tls = super::super::TlsConfig::new("-----BEGIN CERTIFICATE-----")
            .with_client_identity("-----BEGIN CERTIFICATE-----", "-----BEGIN PRIVATE KEY----- s3cr3t-key");
        let debug = format!("{:?}", builder().tls(tls));
        assert_redacted(&debug);
        assert!(!debug.contains("PRIVATE KEY"), "{debug}");
    }
}
