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
//!   watch — or one-shot watches on servers before 3.6, see [`WatchMode`](cache::WatchMode) — with an exact
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
//!   ([`Queue::take_safe`] then [`Delivery::complete`](queue::Delivery::complete)).
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
//! * **Lost signal**: every guard and lease ([`HeldNode::lost`]) and every leadership
//!   ([`Leadership::lost`]) resolves when it can no longer be trusted (suspended under the standard [`ErrorPolicy`], session lost, node
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
//! ensemble, `FrameworkBuilder::tls`, rustls), `sasl` (SASL DIGEST-MD5,
//! `FrameworkBuilder::sasl`), `sasl-gssapi` (Kerberos; needs the
//! system's GSSAPI library), `fips` (`tls` with the FIPS-validated AWS-LC module; building
//! it needs cmake and Go), and `metrics` (lock, leadership, session, cache, queue and
//! operation metrics through the `metrics` facade: see [`metrics`] and the guide's
//! [observability page](https://github.com/zk-recipes/zk-recipes/blob/main/docs/guide/observability.md)).
//! See the guide's [security page](https://github.com/zk-recipes/zk-recipes/blob/main/docs/guide/security.md)
//! for the transport features.
//!
//! # The guide
//!
//! [The guide](https://github.com/zk-recipes/zk-recipes/blob/main/docs/guide/README.md) has one
//! page per recipe family in Curator's shape (description, types, usage, error handling and
//! what to do on loss), and pages on the framework, security, testing with the kit, migrating
//! from Curator, operations and benchmarks.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod error;
mod framework;
mod observe;
mod recipes;
mod sync;

// The crate root: the types a service names. Everything else is in its family's module below.
pub use error::{Error, ErrorKind, Result, ServerFeature, TimeoutStep, TlsFailure, ZooKeeperError};
#[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
pub use framework::SaslConfig;
#[cfg(feature = "tls")]
pub use framework::TlsConfig;
pub use framework::{
    circuit_breaking, current_deadline, with_deadline, Acl, AclProvider, AuthUser, BoundedExponentialBackoff,
    Capabilities, CompressionProvider, ConnectionState, CreateMode, Deadline, ErrorPolicy, ExponentialBackoff,
    Framework, FrameworkBuilder, GzipCompression, LossReason, Permissions, RetryAttempt, RetryForever, RetryNTimes,
    RetryPolicy, SessionStatus, Stat, Transaction, DEFAULT_MAX_REQUEST_SIZE, DEFAULT_OPERATION_TIMEOUT,
};
pub use recipes::{
    AtomicOptions, AtomicValue, Cache, CacheBuilder, CacheEvent, CachedNode, DistributedAtomicInteger,
    DistributedAtomicLong, DistributedAtomicValue, DistributedBarrier, DistributedCountDownLatch,
    DistributedDelayQueue, DistributedDoubleBarrier, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue,
    ExpiringPermit, GroupMember, HeldLock, HeldNode, InterProcessLock, InterProcessMultiLock, InterProcessMutex,
    InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, JobContext, LeaderContext,
    LeaderLatch, LeaderSelector, Leadership, Lease, LockGuard, MultiLockGuard, NodeMode, NodeStatus, PersistentNode,
    PersistentTtlNode, PersistentWatcher, Queue, Scheduled, ScheduledJob, ScheduledLockGuard, ServiceDiscovery,
    ServiceInstance, ServiceProvider, SharedCount, SharedValue, ShedLock, SimpleDistributedQueue, TimedHold,
    WriteGuard,
};
/// Locks and semaphores: Curator's `InterProcess*` family, their guards and leases.
///
/// Every exclusive kind (and each side of the read-write lock) is an [`InterProcessLock`]
/// whose guard derefs to [`HeldNode`] (fencing token, lost signal).
pub mod lock {
    pub use crate::recipes::{
        ExpiringPermit, HeldLock, HeldNode, InterProcessLock, InterProcessMultiLock, InterProcessMutex,
        InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, LockGuard,
        MultiLockGuard, ReadLock, TimedHold, WriteGuard, WriteLock,
    };
}

/// Leader election: [`LeaderLatch`] (wait for and observe leadership) and [`LeaderSelector`]
/// (run a task while leading).
pub mod leader {
    pub use crate::recipes::{
        CloseMode, LeaderContext, LeaderLatch, LeaderSelector, Leadership, LeadershipEnd, Participant,
    };
}

/// Barriers: a barrier that one process lifts, and the double barrier (enter and leave together).
pub mod barrier {
    pub use crate::recipes::{DistributedBarrier, DistributedDoubleBarrier};
}

/// Counters: the atomic numbers and values (optimistic writes, optional promotion to a lock)
/// and the shared count / value (a compare-and-set value everyone can watch).
pub mod counter {
    pub use crate::recipes::{
        AtomicNumber, AtomicOptions, AtomicStats, AtomicValue, DistributedAtomicInteger, DistributedAtomicLong,
        DistributedAtomicNumber, DistributedAtomicValue, PromotedToLock, SharedCount, SharedValue, VersionedValue,
    };
}

/// Caches of a tree, a node's children or one node, and the persistent watcher under them.
pub mod cache {
    pub use crate::recipes::{
        Cache, CacheBuilder, CacheEvent, CachedNode, PersistentWatcher, ResetReason, WatchEvent, WatchMode,
        DEFAULT_EVENT_CAPACITY,
    };
}

/// Registrations kept in place: persistent and TTL nodes, group members.
pub mod node {
    pub use crate::recipes::{GroupMember, NodeMode, NodeStatus, PersistentNode, PersistentTtlNode};
}

/// Service discovery in curator-x-discovery's layout and JSON: registration, a cache of a
/// service's instances, and providers that pick one.
pub mod discovery {
    pub use crate::recipes::{
        DiscoveryPathConstructor, DownInstancePolicy, ProviderStrategy, ServiceCache, ServiceDiscovery,
        ServiceInstance, ServiceInstanceBuilder, ServiceProvider, ServiceProviderBuilder, ServiceType, UriSpec,
        UriSpecPart,
    };
}

/// Distributed queues in Curator's layouts and framing (simple, FIFO, by id, by priority,
/// delayed), each item consumed once.
pub mod queue {
    pub use crate::recipes::{
        ById, ByPriority, BytesSerializer, Delayed, Delivery, DistributedDelayQueue, DistributedIdQueue,
        DistributedPriorityQueue, DistributedQueue, Fifo, Queue, QueueBuilder, QueueKind, QueueSerializer,
        SimpleDistributedQueue, MAX_ITEM_BYTES,
    };
}

/// Scheduled jobs: [`Scheduled`] (an interval or cron job run once per tick across all
/// replicas) over [`ShedLock`] (ShedLock's ZooKeeper layout), with their constants.
pub mod scheduled {
    pub use crate::recipes::{
        JobContext, Scheduled, ScheduledJob, ScheduledLockGuard, ShedLock, TickOutcome, SCHEDULED_EVENT_CAPACITY,
        SHEDLOCK_DEFAULT_ROOT,
    };
}

/// The count-down latch: per-participant count-downs, generations.
pub mod latch {
    pub use crate::recipes::{CountDown, DistributedCountDownLatch};
}

/// Retry policies of the [`Framework`]: every policy (the common ones are at the crate root
/// too) and the bound of the exponential ones.
///
/// Every operation of the framework and of the recipes runs in the framework's retry loop:
/// before each attempt it waits for a connection; a retryable failure (connection loss, an
/// operation timeout, a moved session) is tried again as the policy says. The loop's own
/// errors are [`Error::RetriesExhausted`] when the policy
/// gives up, [`Error::Timeout`] when the deadline passes (the
/// [`with_deadline`] scope's, or the
/// [`operation_timeout`](crate::FrameworkBuilder::operation_timeout)) and
/// [`Error::Closed`] once the framework is closed; the operation's own
/// non-retryable failure is [`Error::ZooKeeper`].
pub mod retry {
    pub use crate::framework::{
        BoundedExponentialBackoff, ExponentialBackoff, NoRetryOnSessionExpiry, RetryAttempt, RetryForever, RetryNTimes,
        RetryOneTime, RetryPolicy, RetryUntilElapsed, MAX_EXPONENTIAL_RETRIES,
    };
}

/// What the [`Framework`]'s own ZooKeeper operations take and return: multi-reads,
/// transactions, protected creates, one-shot watches, and the path check they all apply.
pub mod ops {
    pub use crate::framework::{
        validate_path, CreatedNode, EnsembleConfig, EnsembleServer, OneShotWatch, ReadOp, ReadResult, ReconfigChange,
        ServerRole, Stat, Transaction, TxnResult,
    };
}

/// Modeled nodes (curator-x-async's `ModeledFramework`): typed data at the instances of a path
/// template such as `/tenants/{tenant}/config`, through serde (JSON by default), with
/// compare-and-set writes and a cached view with typed events. See docs/guide/modeled.md.
pub mod modeled {
    pub use crate::recipes::modeled::{
        CachedModeled, JsonSerializer, ModelSerializer, ModeledEvent, ModeledFramework, ModeledNode, PathTemplate,
        Versioned,
    };
}

/// Reading what the recipes left under a path (`zkr inspect`): which recipe a node belongs to,
/// who holds, who waits.
pub mod inspect {
    pub use crate::recipes::{inspect, Inspection, NodeInfo, RecipeKind, QUEUE_ITEMS_SHOWN};
}

/// The metric names and label keys the recipes record (feature `metrics`): a stable,
/// documented set.
///
/// With the `metrics` feature on, the crate records through the
/// [`metrics`](https://docs.rs/metrics) facade: install any recorder (a Prometheus exporter, a
/// StatsD sink...) and the numbers below appear there; without a recorder they go nowhere.
/// With the feature off (the default) nothing is recorded and nothing is paid: every record
/// call compiles to nothing. The constants here exist either way, for dashboards and tests.
///
/// Labels are low-cardinality by default (the recipe kind, not the path);
/// [`FrameworkBuilder::metrics_path_labels`] adds a `path` label to the lock, cache and queue
/// metrics. The full table with each metric's type, labels and meaning, the tracing spans and
/// their fields, and what to alert on are in `docs/guide/observability.md`.
///
/// # Examples
/// ```
/// assert_eq!(zk_recipes::metrics::LOCK_WAIT_SECONDS, "zk_recipes_lock_wait_seconds");
/// ```
pub mod metrics {
    pub use crate::observe::names::*;
}

/// The underlying `zookeeper-client` crate, re-exported for the raw client's types (`Client`,
/// its `Error`, ...). Only with the `raw-client` feature: these types follow zookeeper-client's
/// versions, not this crate's.
#[cfg(feature = "raw-client")]
#[cfg_attr(docsrs, doc(cfg(feature = "raw-client")))]
pub use zookeeper_client as zk;

// The README's and the guide's code blocks are compiled as doc tests (`cargo test --doc`).
#[cfg(doctest)]
mod doc_pages {
    macro_rules! pages {
        ($($name:ident = $path:literal,)*) => { $( #[doc = include_str!($path)] struct $name; )* };
    }
    pages! {
        Readme = "../README.md",
        Barriers = "../docs/guide/barriers.md",
        Caches = "../docs/guide/caches.md",
        Counters = "../docs/guide/counters.md",
        Discovery = "../docs/guide/discovery.md",
        Framework = "../docs/guide/framework.md",
        Latch = "../docs/guide/latch.md",
        Leader = "../docs/guide/leader.md",
        Locks = "../docs/guide/locks.md",
        Modeled = "../docs/guide/modeled.md",
        Nodes = "../docs/guide/nodes.md",
        Queues = "../docs/guide/queues.md",
        Scheduled = "../docs/guide/scheduled-jobs.md",
        Security = "../docs/guide/security.md",
    }
}
