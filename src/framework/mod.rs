//! The framework: a session manager over one ZooKeeper session (connect, retry, connection
//! states, re-creation after expiry) and the building blocks every recipe shares.

mod api;
pub(crate) mod backoff;
mod builder;
mod capabilities;
mod connect;
mod ensemble;
mod extensions;
mod missing;
mod nodelay;
mod ops;
pub(crate) mod paths;
mod retry;
mod security;
mod session;
mod state;
mod supervise;
#[cfg(feature = "tls")]
mod tls_probe;
mod transaction;
mod update;
pub(crate) mod wait;
mod watches;

pub(crate) use api::{validate_ttl, TTL_UNSUPPORTED};
pub use api::{ReadOp, ReadResult};
pub use builder::FrameworkBuilder;
pub use capabilities::Capabilities;
pub(crate) use missing::IfExists;
pub use ops::CreatedNode;
pub(crate) use ops::ProtectedName;
pub use paths::validate_path;
pub(crate) use retry::{caught_up, is_retryable};
pub use retry::{
    BoundedExponentialBackoff, ExponentialBackoff, NoRetryOnSessionExpiry, RetryForever, RetryNTimes, RetryOneTime,
    RetryPolicy, RetryUntilElapsed, MAX_EXPONENTIAL_RETRIES,
};
#[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
pub use security::SaslConfig;
#[cfg(feature = "tls")]
pub use security::TlsConfig;
pub use session::Framework;
pub use state::{ConnectionState, ErrorPolicy, LossReason, SessionStatus};
pub use transaction::{Transaction, TxnResult};
pub use watches::OneShotWatch;
