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
//! * Locks — [`InterProcessMutex`] (re-entrant through its guard), [`InterProcessSemaphoreMutex`],
//!   [`InterProcessReadWriteLock`], [`InterProcessMultiLock`], and the counting
//!   [`InterProcessSemaphoreV2`] with [`Lease`]s. Acquire returns an owned guard that derefs to
//!   [`HeldNode`]: its [`fencing_token`](HeldNode::fencing_token) and its
//!   [`lost`](HeldNode::lost) signal. Every exclusive kind (and each side of the read-write
//!   lock) is an [`InterProcessLock`]: one shape, one guard ([`HeldLock`]), usable as
//!   `dyn InterProcessLock` and as a member of a multi-lock.
//! * Expirable semaphore permits — [`ExpiringPermit`] from
//!   [`InterProcessSemaphoreV2::acquire_with_expiry`], released by id from any process,
//!   reclaimed after their deadline.
//! * Barriers — [`DistributedBarrier`], [`DistributedDoubleBarrier`], and the
//!   [`DistributedCountDownLatch`] (per-participant count-downs, generations).
//! * Leader election — [`LeaderLatch`] (await, observe, fencing token per leadership) and
//!   [`LeaderSelector`] (runs a task while leading, cancels it when leadership is lost).
//! * Counters — [`DistributedAtomicLong`], [`DistributedAtomicInteger`],
//!   [`DistributedAtomicValue`].
//! * Caches — [`Cache`] (a tree, a node's children or one node, kept current by a persistent
//!   watch — or one-shot watches on servers before 3.6, see [`WatchMode`] — with an exact
//!   resync after every gap) and the [`PersistentWatcher`] under it.
//! * Registrations — [`PersistentNode`] (kept in place through deletes, reconnects and new
//!   sessions; a stale node of our dead session replaced), [`PersistentTtlNode`] and
//!   [`GroupMember`].
//! * Scheduled jobs — [`Scheduled`] (an interval or cron job run once per tick across all
//!   replicas) over [`ShedLock`], a lock byte-compatible with ShedLock's ZooKeeper provider
//!   (Java replicas using ShedLock share the jobs); see `docs/scheduled-jobs.md`.
//! * Queues — [`SimpleDistributedQueue`], [`DistributedQueue`], [`DistributedIdQueue`],
//!   [`DistributedPriorityQueue`], [`DistributedDelayQueue`] (Curator's layouts and framing):
//!   each item consumed once, at most once ([`Queue::take`]) or at least once
//!   ([`Queue::take_safe`] then [`Delivery::complete`]).
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
//! latch.start().await?;
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
//! # Companion crates
//! * [`zk-recipes-testing`](https://docs.rs/zk-recipes-testing): real ZooKeeper servers and
//!   ensembles (local JVMs or Docker containers), session expiry, a TCP proxy for partitions, a
//!   Curator peer — for your tests, as Curator ships `curator-test`.
//! * [`zkr`](https://docs.rs/zkr): the command-line tool — locks, leases, elections, barriers and
//!   counters from the shell, `zkr inspect`, and `zkr bench` for your own ensemble.
//!
//! Its dependencies are the ZooKeeper client, tokio (`rt`, `sync`, `time`, `net`, `macros`),
//! and a few small crates. Features, all off by default: `tls` (TLS and mutual TLS to the
//! ensemble, [`FrameworkBuilder::tls`], rustls), `sasl` (SASL DIGEST-MD5,
//! [`FrameworkBuilder::sasl`]), `sasl-gssapi` (Kerberos; needs the
//! system's GSSAPI library), and `fips` (`tls` with the FIPS-validated AWS-LC module; building
//! it needs cmake and Go). See the README's "Security" section.
#![deny(missing_docs)]

mod error;
mod framework;
mod recipes;
mod sync;
pub use recipes::*;

pub use error::{Error, Result, TlsFailure};
#[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
pub use framework::SaslConfig;
#[cfg(feature = "tls")]
pub use framework::TlsConfig;
pub use framework::{
    validate_path, BoundedExponentialBackoff, Capabilities, ConnectionState, CreatedNode, ErrorPolicy,
    ExponentialBackoff, Framework, FrameworkBuilder, LossReason, NoRetryOnSessionExpiry, OneShotWatch, ReadOp,
    ReadResult, RetryForever, RetryNTimes, RetryOneTime, RetryPolicy, RetryUntilElapsed, SessionStatus, Transaction,
    TxnResult, MAX_EXPONENTIAL_RETRIES,
};
/// The underlying `zookeeper-client` crate, re-exported for its types (`Acl`, `Stat`,
/// `CreateMode`, `Client`, ...).
pub use zookeeper_client as zk;
