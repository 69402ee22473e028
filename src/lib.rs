//! Curator's ZooKeeper recipes for tokio, wire-compatible with Apache Curator 5.x.
//!
//! # A tour
//!
//! Everything starts with a [`Framework`]: one cloneable handle over a ZooKeeper session that
//! retries retryable failures ([`RetryPolicy`]), reports connection states
//! ([`Framework::connection_states`]) and builds a new session after the old one is lost.
//!
//! ```no_run
//! # async fn demo() -> zk_recipes::Result<()> {
//! use std::time::Duration;
//! use zk_recipes::{ExponentialBackoff, Framework};
//!
//! let fw = Framework::builder()
//!     .connect_string("zk1:2181,zk2:2181,zk3:2181")
//!     .session_timeout(Duration::from_secs(30))
//!     .retry_policy(ExponentialBackoff::new(Duration::from_millis(100), 5))
//!     .namespace("my-service")
//!     .connect()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! Recipes take the framework and a path:
//!
//! * Locks — [`InterProcessMutex`] (re-entrant per task), [`InterProcessSemaphoreMutex`],
//!   [`InterProcessReadWriteLock`], [`InterProcessMultiLock`], and the counting
//!   [`InterProcessSemaphoreV2`] with [`Lease`]s. Acquire returns an owned guard that derefs to
//!   [`HeldNode`]: its [`fencing_token`](HeldNode::fencing_token) and its
//!   [`lost`](HeldNode::lost) signal.
//! * Leader election — [`LeaderLatch`] (await, observe, fencing token per leadership) and
//!   [`LeaderSelector`] (runs a task while leading, cancels it when leadership is lost).
//! * Counters — [`DistributedAtomicLong`], [`DistributedAtomicInteger`],
//!   [`DistributedAtomicValue`].
//!
//! ```no_run
//! # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
//! use zk_recipes::{DistributedAtomicLong, InterProcessSemaphoreV2, LeaderLatch};
//!
//! // at most 3 workers at a time, across all processes
//! let pool = InterProcessSemaphoreV2::new(&fw, "/pools/render", 3)?;
//! let lease = pool.acquire().await?;
//! lease.release().await?;
//!
//! // one leader among the replicas
//! let latch = LeaderLatch::new(&fw, "/elections/scheduler", "replica-1")?;
//! latch.start()?;
//! latch.await_leadership().await?;
//!
//! // a counter shared with Curator's DistributedAtomicLong
//! let orders = DistributedAtomicLong::new(&fw, "/counters/orders")?;
//! let result = orders.increment().await?;
//! assert!(result.succeeded);
//! # Ok(()) }
//! ```
//!
//! # Notable behaviors
//! * **Lost signal**: every guard, lease and leadership resolves [`HeldNode::lost`] when it can
//!   no longer be trusted (suspended under the standard [`ErrorPolicy`], session lost, node
//!   deleted). Curator leaves this to its users.
//! * **Fencing**: tokens are the node's `czxid`, strictly increasing over time per path.
//! * **Cancel safety**: dropping an acquire future leaves no node behind.
//! * **Session expiry** is survived: waiting recipes re-create their nodes on the new session;
//!   holders are told they lost, never silently re-acquired.
//!
//! # Feature flags
//! * `cli` (default): builds the `zkr` command-line tool (`cargo install --path .`; see the
//!   README). It adds `clap` and `libc`; turn default features off for the library alone.
//! * `testing`: the [`testing`] kit — real ZooKeeper servers (standalone and ensembles) from a
//!   local installation, session expiry, a TCP proxy for partitions, a Curator peer.
//! * `docker` (implies `testing`): the kit's Docker backend — the same servers and ensembles in
//!   containers (image `zk-recipes/zookeeper:3.8`, built by `docker/build-image.sh`), chosen
//!   with `ZK_TEST_BACKEND=docker`, with network partitions of single servers.
#![deny(missing_docs)]

mod error;
mod framework;
mod recipes;
mod sync;
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
