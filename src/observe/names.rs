//! Every metric name and label key the crate records, in one place (the stable, documented
//! set: `docs/guide/observability.md` has the same table).
//!
//! Names follow Prometheus' conventions: a `zk_recipes_` prefix, `_seconds` for durations
//! (histograms, in seconds), `_total` for counters. Labels are low-cardinality by default —
//! the recipe kind, an outcome, a reason — and a `path` label is added only where
//! [`FrameworkBuilder::metrics_path_labels`](crate::FrameworkBuilder::metrics_path_labels)
//! asks for it (leadership metrics always carry their path: an election path is
//! configuration, not data).

// ---- label keys ----

/// Label: the recipe kind (`mutex`, `read`, `write`, `semaphore`, `semaphore_lock`,
/// `leader_latch`, `leader_selector`, `atomic`, `queue_item`; for caches `tree`, `children`,
/// `node`; for queues the queue kind).
pub const LABEL_KIND: &str = "kind";
/// Label: how an acquire ended (`acquired`, `timed_out`, `cancelled`, `failed`).
pub const LABEL_OUTCOME: &str = "outcome";
/// Label: why a hold was lost (`suspended`, `session_lost`, `node_deleted`, `closed`,
/// `expired`).
pub const LABEL_REASON: &str = "reason";
/// Label: the node path (opt-in for locks, caches and queues; always on leadership metrics).
pub const LABEL_PATH: &str = "path";
/// Label: the connection state (`CONNECTED`, `SUSPENDED`, `RECONNECTED`, `LOST`,
/// `READ_ONLY`, `REFUSED`).
pub const LABEL_STATE: &str = "state";
/// Label: the leader recipe (`latch`, `selector`).
pub const LABEL_RECIPE: &str = "recipe";
/// Label: a cache event (`created`, `changed`, `deleted`).
pub const LABEL_EVENT: &str = "event";
/// Label: a framework operation: `create`, `get_data`, `set_data`, `exists`, `children`,
/// `delete`, `sync`, `get_acl`, `set_acl`, `touch`, `ephemerals`, `descendants_count`,
/// `whoami`, `multi_read`, `transaction`, `watch`, `list` (a lock queue's or a queue's
/// listing), `read_tree` (a cache's full read), `capabilities`, and `custom`: a retry loop
/// (a recipe's compound step, or yours: `Framework::retry` with the `raw-client` feature).
pub const LABEL_OP: &str = "op";
/// Label: an operation's result (`ok`, `error`).
pub const LABEL_RESULT: &str = "result";

// ---- locks, semaphores, leases ----

/// Histogram (seconds), labels `kind`, `outcome`: how long an acquire waited, from its call
/// to its end.
pub const LOCK_WAIT_SECONDS: &str = "zk_recipes_lock_wait_seconds";
/// Histogram (seconds), label `kind`: how long a hold lasted, from acquired to released or
/// dropped (a lost hold ends when its guard goes).
pub const LOCK_HOLD_SECONDS: &str = "zk_recipes_lock_hold_seconds";
/// Gauge, label `kind`: holds alive in this process (guards, leases, leaderships).
pub const LOCK_HOLDERS: &str = "zk_recipes_lock_holders";
/// Gauge, label `kind`: acquires waiting in this process.
pub const LOCK_WAITERS: &str = "zk_recipes_lock_waiters";
/// Counter, labels `kind`, `reason`: holds that could no longer be trusted.
pub const LOCK_LOSSES: &str = "zk_recipes_lock_losses_total";

// ---- leadership ----

/// Gauge, labels `recipe`, `path`: 1 while this process leads at `path`, else 0.
pub const LEADER: &str = "zk_recipes_leader";
/// Counter, labels `recipe`, `path`: leadership gained or lost.
pub const LEADERSHIP_CHANGES: &str = "zk_recipes_leadership_changes_total";

// ---- session ----

/// Gauge, label `state`: how many frameworks of this process are in each connection state
/// (1 for the current state of a single framework, 0 for the others).
pub const SESSION_STATE: &str = "zk_recipes_session_state";
/// Counter: sessions lost (expired by the server, or suspended past the session timeout).
pub const SESSION_EXPIRIES: &str = "zk_recipes_session_expiries_total";
/// Counter: connections suspended.
pub const SESSION_SUSPENSIONS: &str = "zk_recipes_session_suspensions_total";
/// Counter: connections re-established to the same session.
pub const SESSION_RECONNECTS: &str = "zk_recipes_session_reconnects_total";
/// Counter: new sessions built after a loss.
pub const SESSION_RECREATIONS: &str = "zk_recipes_session_recreations_total";
/// Counter: refusals of a new session (TLS or SASL: not retried until a reload).
pub const SESSION_REFUSALS: &str = "zk_recipes_session_refusals_total";
/// Gauge: guaranteed deletes still running in the background.
pub const BACKGROUND_DELETES_PENDING: &str = "zk_recipes_background_deletes_pending";

// ---- caches ----

/// Gauge, label `kind`: nodes held by the caches of this process.
pub const CACHE_NODES: &str = "zk_recipes_cache_nodes";
/// Counter, labels `kind`, `event`: node events the caches applied.
pub const CACHE_EVENTS: &str = "zk_recipes_cache_events_total";
/// Counter, label `kind`: full re-reads after a gap (reconnect, new session, lost watch).
pub const CACHE_RESYNCS: &str = "zk_recipes_cache_resyncs_total";

// ---- queues ----

/// Counter, label `kind`: items put.
pub const QUEUE_PUT: &str = "zk_recipes_queue_put_total";
/// Counter, label `kind`: items taken (consumed).
pub const QUEUE_TAKEN: &str = "zk_recipes_queue_taken_total";
/// Gauge, label `kind`: items in the queue at the consumer's last listing.
pub const QUEUE_DEPTH: &str = "zk_recipes_queue_depth";

// ---- operations ----

/// Histogram (seconds), labels `op`, `result`: a framework operation through its retry
/// loop, retries included.
pub const OPERATION_SECONDS: &str = "zk_recipes_operation_seconds";
/// Counter, label `op`: retries of a framework operation.
pub const OPERATION_RETRIES: &str = "zk_recipes_operation_retries_total";
