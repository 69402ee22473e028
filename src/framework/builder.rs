//! The framework's builder.

use std::sync::Arc;
use std::time::Duration;

use zookeeper_client::Acl;

use super::paths::normalize_namespace;
use super::retry::{ExponentialBackoff, RetryPolicy};
use super::state::ErrorPolicy;
use super::Framework;
use crate::error::{Error, Result};

/// Everything a [`Framework`] was built with.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub connect_string: String,
    pub session_timeout: Duration,
    pub connection_timeout: Duration,
    pub retry: Arc<dyn RetryPolicy>,
    pub namespace: Option<String>,
    pub default_acl: Vec<Acl>,
    pub auth: Vec<(String, Vec<u8>)>,
    pub default_data: Vec<u8>,
    pub error_policy: ErrorPolicy,
    pub read_only: bool,
}

/// Builds a [`Framework`]. Obtain one with [`Framework::builder`].
///
/// Defaults follow Curator: session timeout 60 s (the server may negotiate it down or up),
/// connection timeout 15 s, [`ExponentialBackoff`] from 1 s with 3 retries, no namespace,
/// open ACL (`world:anyone` all permissions), no auth, the standard error policy.
/// One difference: the default node data is empty (Curator writes the local IP address; use
/// [`default_data`](Self::default_data) for the same).
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `connect` is called"]
pub struct FrameworkBuilder {
    connect_string: String,
    session_timeout: Duration,
    connection_timeout: Duration,
    retry: Arc<dyn RetryPolicy>,
    namespace: String,
    default_acl: Vec<Acl>,
    auth: Vec<(String, Vec<u8>)>,
    default_data: Vec<u8>,
    error_policy: ErrorPolicy,
    read_only: bool,
}

impl Default for FrameworkBuilder {
    fn default() -> Self {
        Self {
            connect_string: String::new(),
            session_timeout: Duration::from_secs(60),
            connection_timeout: Duration::from_secs(15),
            retry: Arc::new(ExponentialBackoff::new(Duration::from_secs(1), 3)),
            namespace: String::new(),
            default_acl: zookeeper_client::Acls::anyone_all().to_vec(),
            auth: Vec::new(),
            default_data: Vec::new(),
            error_policy: ErrorPolicy::Standard,
            read_only: false,
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

    /// Requested session timeout (the server clamps it to `[2, 20] × tickTime`).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long to wait for a session (first connect) or a connection (before each
    /// operation attempt) before failing.
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
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

    /// The ACL for every node the framework and its recipes create.
    pub fn default_acl(mut self, acl: Vec<Acl>) -> Self {
        self.default_acl = acl;
        self
    }

    /// Adds authentication, e.g. `("digest", b"user:password")`, sent on every (re)connect.
    pub fn auth(mut self, scheme: impl Into<String>, auth: impl Into<Vec<u8>>) -> Self {
        self.auth.push((scheme.into(), auth.into()));
        self
    }

    /// Data written into recipe nodes that have no data of their own.
    pub fn default_data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.default_data = data.into();
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

    pub(crate) fn validate(self) -> Result<Config> {
        if self.connect_string.trim().is_empty() {
            return Err(Error::InvalidArgument("connect string is empty".into()));
        }
        if self.session_timeout.is_zero() {
            return Err(Error::InvalidArgument("session timeout must be greater than zero".into()));
        }
        if self.connection_timeout.is_zero() {
            return Err(Error::InvalidArgument("connection timeout must be greater than zero".into()));
        }
        if self.session_timeout > Duration::from_millis(i32::MAX as u64) {
            return Err(Error::InvalidArgument("session timeout is too large".into()));
        }
        if self.default_acl.is_empty() {
            return Err(Error::InvalidArgument("default ACL must not be empty".into()));
        }
        Ok(Config {
            connect_string: self.connect_string,
            session_timeout: self.session_timeout,
            connection_timeout: self.connection_timeout,
            retry: self.retry,
            namespace: normalize_namespace(&self.namespace)?,
            default_acl: self.default_acl,
            auth: self.auth,
            default_data: self.default_data,
            error_policy: self.error_policy,
            read_only: self.read_only,
        })
    }

    /// Connects and waits for the first session.
    ///
    /// # Errors
    /// * [`Error::InvalidArgument`] / [`Error::InvalidPath`] for a bad configuration (empty
    ///   connect string, zero timeouts, empty ACL, invalid namespace);
    /// * [`Error::ConnectTimeout`] when no session is established within the connection
    ///   timeout;
    /// * [`Error::ZooKeeper`] for a refusal by the server (e.g. `AuthFailed`).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future abandons the half-built session.
    pub async fn connect(self) -> Result<Framework> {
        Framework::connect_with(self.validate()?).await
    }
}
