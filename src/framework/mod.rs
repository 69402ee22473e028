//! The framework: a session manager over one ZooKeeper session (connect, retry, connection
//! states, re-creation after expiry) and the building blocks every recipe shares.

mod acl;
mod acl_provider;
mod api;
pub(crate) mod backoff;
mod builder;
mod capabilities;
mod circuit;
mod compression;
mod connect;
pub(crate) mod deadline;
mod delete_tree;
mod ensemble;
mod extensions;
mod missing;
mod mode;
mod nodelay;
mod ops;
pub(crate) mod paths;
mod persistent;
mod reconfig;
mod request;
mod retry;
mod security;
mod session;
mod stat;
mod state;
mod supervise;
#[cfg(feature = "tls")]
mod tls_probe;
mod transaction;
mod update;
pub(crate) mod wait;
mod watch_event;
mod watches;

pub use acl::{Acl, AuthUser, Permissions};
pub use acl_provider::AclProvider;
pub(crate) use api::{validate_ttl, TTL_UNSUPPORTED};
pub use api::{ReadOp, ReadResult};
pub use builder::{FrameworkBuilder, DEFAULT_MAX_REQUEST_SIZE, DEFAULT_OPERATION_TIMEOUT};
pub use capabilities::Capabilities;
pub use circuit::circuit_breaking;
pub use compression::{CompressionProvider, GzipCompression};
pub use deadline::{current_deadline, with_deadline, Deadline};
pub(crate) use missing::IfExists;
pub use mode::CreateMode;
pub use ops::CreatedNode;
pub(crate) use ops::ProtectedName;
pub use paths::validate_path;
pub(crate) use persistent::{PersistentChange, PersistentWatch};
pub use reconfig::{EnsembleConfig, EnsembleServer, ReconfigChange, ServerRole};
pub(crate) use request::{Conn, MultiError, WriteAnswer, WriteOp};
pub use retry::{
    BoundedExponentialBackoff, ExponentialBackoff, NoRetryOnSessionExpiry, RetryAttempt, RetryForever, RetryNTimes,
    RetryOneTime, RetryPolicy, RetryUntilElapsed, MAX_EXPONENTIAL_RETRIES,
};
#[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
pub use security::SaslConfig;
#[cfg(feature = "tls")]
pub use security::TlsConfig;
pub use session::Framework;
pub use stat::Stat;
pub use state::{ConnectionState, ErrorPolicy, LossReason, SessionStatus};
pub use transaction::{Transaction, TxnResult};
pub use watch_event::{ResetReason, WatchEvent};
pub use watches::OneShotWatch;
