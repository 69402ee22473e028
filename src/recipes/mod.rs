//! Recipes built on the framework.

mod atomic;
mod barriers;
mod cache;
mod discovery;
mod inspect;
mod latch;
mod layout;
mod leader;
pub(crate) mod locks;
pub(crate) mod modeled;
mod nodes;
mod queue;
mod shared;
mod shedlock;

pub use atomic::{
    AtomicNumber, AtomicOptions, AtomicStats, AtomicValue, DistributedAtomicInteger, DistributedAtomicLong,
    DistributedAtomicNumber, DistributedAtomicValue, PromotedToLock,
};
pub use barriers::{DistributedBarrier, DistributedDoubleBarrier};
pub use cache::{
    Cache, CacheBuilder, CacheEvent, CachedNode, PersistentWatcher, ResetReason, WatchEvent, WatchMode,
    DEFAULT_EVENT_CAPACITY,
};
pub use discovery::{
    DiscoveryPathConstructor, DownInstancePolicy, ProviderStrategy, ServiceCache, ServiceDiscovery, ServiceInstance,
    ServiceInstanceBuilder, ServiceProvider, ServiceProviderBuilder, ServiceType, UriSpec, UriSpecPart,
};
pub use inspect::{inspect, Inspection, NodeInfo, RecipeKind, QUEUE_ITEMS_SHOWN};
pub use latch::{CountDown, DistributedCountDownLatch};
pub use leader::{CloseMode, LeaderContext, LeaderLatch, LeaderSelector, Leadership, LeadershipEnd, Participant};
pub use locks::{
    ExpiringPermit, HeldLock, HeldNode, InterProcessLock, InterProcessMultiLock, InterProcessMutex,
    InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, LockGuard, MultiLockGuard,
    ReadLock, TimedHold, WriteGuard, WriteLock,
};
pub use nodes::{GroupMember, NodeMode, NodeStatus, PersistentNode, PersistentTtlNode};
pub use queue::{
    ById, ByPriority, BytesSerializer, Delayed, Delivery, DistributedDelayQueue, DistributedIdQueue,
    DistributedPriorityQueue, DistributedQueue, Fifo, Queue, QueueBuilder, QueueKind, QueueSerializer,
    SimpleDistributedQueue, MAX_ITEM_BYTES,
};
pub use shared::{SharedCount, SharedValue, VersionedValue};
pub use shedlock::{
    JobContext, Scheduled, ScheduledJob, ScheduledLockGuard, ShedLock, TickOutcome, SCHEDULED_EVENT_CAPACITY,
    SHEDLOCK_DEFAULT_ROOT,
};
