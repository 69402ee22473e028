//! Every recipe's node names in one place: the znode schema shared with Apache Curator 5.x
//! (see each recipe's `# Curator compatibility`), used by the recipes that write the nodes and
//! by [`inspect`](super::inspect) that reads them back.
//!
//! | recipe | nodes |
//! |---|---|
//! | InterProcessMutex, LeaderSelector | `<path>/_c_<uuid>-lock-<seq>` |
//! | read-write lock | `<path>/_c_<uuid>-__READ__<seq>`, `<path>/_c_<uuid>-__WRIT__<seq>` |
//! | SemaphoreV2, semaphore mutex | `<path>/locks/_c_<uuid>-lock-<seq>`, `<path>/leases/_c_<uuid>-lease-<seq>` |
//! | SemaphoreV2 expirable permits (ours; Curator counts them as leases) | `<path>/leases/_c_<uuid>-expires-<ms>-lease-<seq>` persistent (TTL when allowed) |
//! | LeaderLatch | `<path>/_c_<uuid>-latch-<seq>` |
//! | DistributedDoubleBarrier | `<path>/<uuid>` members, `<path>/ready` |
//! | PersistentTtlNode | `<path>` container, `<path>/touch` persistent with TTL |
//! | GroupMember | `<path>/<id>` ephemeral, the member's data |
//! | DistributedCountDownLatch (ours, no Curator equivalent) | `<path>` generation, `<path>/gen-<G>` count, `<path>/gen-<G>/<participant>` |
//! | SimpleDistributedQueue | `<path>/qn-<seq>` persistent sequential, the item's bytes |
//! | DistributedQueue (and id, priority, delay) | `<path>/queue-<seq>` (`queue-\|<id>\|<seq>`, `queue-<1\|0><8 hex><seq>`, `queue-\|<epoch hex>\|<seq>`), `<lock path>/<item name>` ephemeral while taken |
//! | atomic values (ours, not Curator's) | `<path>/_lock_/_c_<uuid>-lock-<seq>` queue (an addition: `_c_<uuid>-add<4\|8>.<instance>.<n>.<delta>.lock-<seq>`, applied with the marker `<instance>-<n>`), `<path>/_gate_` the queue turn's priority, `<path>/_txn_<instance>-<n>` markers (a queued addition's: the value before it) |
//!
//! The protected prefix `_c_<uuid>-` belongs to the framework's protected create
//! (`PROTECTED_PREFIX` in `src/framework/ops.rs`).
//!
//! A node's sort key is the text after the last occurrence of its recipe's name (`lock-`,
//! `__READ__`/`__WRIT__`, `lease-`, `latch-`).

/// The name of an InterProcessMutex node (and of a LeaderSelector's, a semaphore's mutex, an
/// atomic value's queue).
pub(crate) const LOCK_NAME: &str = "lock-";
/// The name of a read lock node of the read-write lock.
pub(crate) const READ_NAME: &str = "__READ__";
/// The name of a write lock node of the read-write lock.
pub(crate) const WRITE_NAME: &str = "__WRIT__";
/// The data a revoker writes into a lock node to ask its holder to release.
pub(crate) const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// The semaphore's directory of lease nodes, under its path.
pub(crate) const SEMAPHORE_LEASES: &str = "leases";
/// The semaphore's mutex (taken while a lease is created), under its path.
pub(crate) const SEMAPHORE_LOCKS: &str = "locks";
/// The name of a semaphore lease node.
pub(crate) const LEASE_NAME: &str = "lease-";

/// What an expirable semaphore permit's name carries before its [`LEASE_NAME`]:
/// `_c_<uuid>-expires-<deadline, ms since the Unix epoch>-lease-<seq>`.
pub(crate) const PERMIT_EXPIRES: &str = "expires-";

/// The name of a leader latch node.
pub(crate) const LATCH_NAME: &str = "latch-";

/// The double barrier's node that tells the members the threshold was reached.
pub(crate) const DOUBLE_BARRIER_READY: &str = "ready";

/// The prefix of a count-down latch's generation directories (`gen-<generation, 10 digits>`).
pub(crate) const LATCH_GENERATION: &str = "gen-";

/// The directory under an atomic value where contenders queue.
pub(crate) const ATOMIC_QUEUE: &str = "_lock_";
/// The atomic value's gate: a persistent child whose version its optimistic writes check and
/// a queue turn that keeps losing raises (see `recipes/atomic/gate.rs`).
pub(crate) const ATOMIC_GATE: &str = "_gate_";
/// The name prefix of an atomic value's transaction markers (`_txn_<instance>-<n>`).
pub(crate) const ATOMIC_TXN_MARKER: &str = "_txn_";

/// The child of a TTL node that is re-written every TTL / 2 (Curator's
/// `PersistentTtlNode.DEFAULT_CHILD_NODE_NAME`).
pub(crate) const TTL_TOUCH_CHILD: &str = "touch";

/// The name of a `DistributedQueue` item node (and of the id, priority and delay queues'),
/// persistent sequential under the queue's path.
pub(crate) const QUEUE_ITEM_NAME: &str = "queue-";
/// The name of a `SimpleDistributedQueue` item node (the ZooKeeper distribution's queue).
pub(crate) const SIMPLE_QUEUE_ITEM_NAME: &str = "qn-";
