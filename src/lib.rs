//! zk-recipes: Curator-compatible ZooKeeper recipes for tokio.
#![deny(missing_docs)]

mod error;
mod framework;
mod recipes;
pub use recipes::*;

#[cfg(feature = "testing")]
pub mod testing;

pub use error::{Error, Result};
pub use framework::{
    is_retryable, validate_path, BoundedExponentialBackoff, ConnectionState, CreatedNode, ErrorPolicy,
    ExponentialBackoff, Framework, FrameworkBuilder, NoRetryOnSessionExpiry, RetryForever, RetryNTimes, RetryOneTime,
    RetryPolicy, RetryUntilElapsed, SessionStatus, MAX_EXPONENTIAL_RETRIES,
};
/// The underlying `zookeeper-client` crate, re-exported for its types (`Acl`, `Stat`,
/// `CreateMode`, `Client`, ...).
pub use zookeeper_client as zk;
