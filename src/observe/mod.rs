//! Observability: the one place that knows the metric names (`names`) and records them
//! (`record`), and the small helpers the recipes' tracing spans share.
//!
//! Everything in `record` compiles to nothing without the `metrics` feature: its types are
//! empty and its functions have empty bodies, so the calls the recipes make vanish.

pub(crate) mod names;
mod record;

pub(crate) use record::{
    deletes_pending, hold_lost, operation, queue_depth, queue_put, queue_taken, retried, session_event, session_state,
    Acquiring, CacheSite, Holding, Leading, Outcome, PathLabel, SessionEvent,
};

/// The kind of a contender queue: the `kind` label of the lock metrics and the `kind` field
/// of the acquire and hold spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Kind {
    /// `InterProcessMutex` (and the semaphore mutex built on it).
    #[default]
    Mutex,
    /// The read side of `InterProcessReadWriteLock`.
    Read,
    /// The write side of `InterProcessReadWriteLock`.
    Write,
    /// A lease of `InterProcessSemaphoreV2`.
    Semaphore,
    /// The internal lock `InterProcessSemaphoreV2` takes while it acquires leases.
    SemaphoreLock,
    /// `LeaderLatch`.
    LeaderLatch,
    /// `LeaderSelector`'s mutex.
    LeaderSelector,
    /// A turn on an atomic value's queue (promoted to a lock).
    Atomic,
    /// The lock on one queue item (`take_safe`).
    QueueItem,
}

impl Kind {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Mutex => "mutex",
            Self::Read => "read",
            Self::Write => "write",
            Self::Semaphore => "semaphore",
            Self::SemaphoreLock => "semaphore_lock",
            Self::LeaderLatch => "leader_latch",
            Self::LeaderSelector => "leader_selector",
            Self::Atomic => "atomic",
            Self::QueueItem => "queue_item",
        }
    }
}

/// A session id as ZooKeeper's own logs print it (`0x` and lowercase hex), for log fields.
pub(crate) fn session_hex(id: i64) -> String {
    format!("{id:#x}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn session_ids_print_as_zookeeper_does() {
        assert_eq!(super::session_hex(0x1000a2b3c4d0005), "0x1000a2b3c4d0005");
    }
}
