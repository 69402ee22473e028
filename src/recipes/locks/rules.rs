//! The pure part of the lock engine: what a contender does given the sorted list. No I/O
//! here; every rule is unit-tested without a server (`rules_tests.rs`).
//!
//! The rules are Curator's (`LockInternals`, `StandardLockInternalsDriver`, the read-write
//! lock's predicates), so that a Curator process and ours decide the same from the same list.

use std::time::SystemTime;

use super::order::position;
use super::permit_name::permit_deadline;

/// What a contender does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// We hold it.
    Acquired,
    /// Wait until one of `nodes` (child names; usually just our predecessor) is deleted or
    /// changes, then decide again — unless `then_acquired`: `nodes` are every node before us
    /// in the list, so once all of them are deleted we hold (nodes created later sort after
    /// us; the one exception, a downgrade's read node, takes a writer's place, so never when a
    /// writer is among them).
    ///
    /// `ahead`: a node further ahead whose deletion most likely leaves us a few places from
    /// the head. Watching it too lets the contender list again while those before it still
    /// hold — off the hand-off's path — and then wait for all of them with `then_acquired`.
    Watch { nodes: Vec<String>, then_acquired: bool, ahead: Option<String> },
    /// Wait for any change of the children, then decide again (semaphore leases); also at
    /// the driver's [`wake_at`](Rules::wake_at), when it names a time.
    WatchChildren,
    /// Delete these children (expired semaphore permits: see `locks::expiring_permit`), then list again.
    Reclaim(Vec<String>),
    /// Our node is not in the list: it was deleted (by someone else, or with our session).
    Missing,
}

/// How one kind of contender queue decides, from the sorted contenders: its part of a
/// [`Driver`](super::driver::Driver).
pub(crate) trait Rules: Send + Sync + std::fmt::Debug {
    /// The names whose last occurrence starts a child's sort key.
    fn lock_names(&self) -> &[&'static str];

    /// Decides from the sorted children and our own node's name.
    fn decide(&self, sorted: &[String], ours: &str) -> Decision;

    /// Whether holding means being the queue's only holder (its head): then every node
    /// before ours is gone while we hold.
    fn sole_holder(&self) -> bool {
        false
    }

    /// Whether, once we watch `watched` (as [`decide`](Self::decide) said), its deletion
    /// after it held as a sole holder means that we hold: nothing that could hold stands
    /// between it and us.
    fn holds_after_holder(&self, _watched: &str) -> bool {
        false
    }

    /// When a [`Decision::WatchChildren`] waiter must decide again even if no child changed
    /// (the earliest deadline of an expirable permit in `sorted`).
    fn wake_at(&self, _sorted: &[String], _ours: &str) -> Option<SystemTime> {
        None
    }
}

/// Holder when among the first `max_leases`; otherwise watch the node `max_leases` places
/// ahead (Curator's `StandardLockInternalsDriver`). The mutex is `max_leases = 1`.
#[derive(Debug, Clone)]
pub(crate) struct Exclusive {
    pub names: &'static [&'static str],
    pub max_leases: usize,
}

impl Exclusive {
    /// The InterProcessMutex driver (`lock-`, one holder).
    pub const MUTEX: Exclusive = Exclusive { names: &[crate::recipes::layout::LOCK_NAME], max_leases: 1 };
    /// The write side of the read-write lock: first among all readers and writers.
    pub const WRITE: Exclusive = Exclusive { names: RW_NAMES, max_leases: 1 };
}

/// A sole-holder contender this close to the head (fewer places from it) watches every node
/// before it and holds when they are gone, without listing again; further back it watches its
/// predecessor and the node [`AHEAD`] places ahead, and lists again when that one goes.
pub(crate) const HAND_OFF_DEPTH: usize = 3;

/// How far ahead a sole-holder contender further back than [`HAND_OFF_DEPTH`] watches, besides
/// its predecessor. At 2, the node ahead goes as its predecessor starts to hold: the contender
/// lists once (while its predecessor holds), keeps its predecessor's watch, and is ready for
/// the hand-off with no request more. That is about 6 requests per hold at 16 contenders where
/// watching every node within 4 places of the head took about 9.5 for the same critical path;
/// every request costs the servers CPU, which an ensemble on few cores lacks.
pub(crate) const AHEAD: usize = 2;

/// Sort names of the read-write lock.
pub(crate) const READ_NAME: &str = crate::recipes::layout::READ_NAME;
/// Sort names of the read-write lock.
pub(crate) const WRITE_NAME: &str = crate::recipes::layout::WRITE_NAME;
const RW_NAMES: &[&str] = &[READ_NAME, WRITE_NAME];

impl Rules for Exclusive {
    fn lock_names(&self) -> &[&'static str] {
        self.names
    }

    fn sole_holder(&self) -> bool {
        self.max_leases == 1
    }

    fn holds_after_holder(&self, watched: &str) -> bool {
        // not behind a writer: it may have downgraded, leaving a read node in its place
        self.max_leases == 1 && !watched.contains(WRITE_NAME)
    }

    fn decide(&self, sorted: &[String], ours: &str) -> Decision {
        let Some(index) = position(sorted, ours) else { return Decision::Missing };
        if index < self.max_leases {
            return Decision::Acquired;
        }
        let watched = sorted[index - self.max_leases].clone();
        if self.max_leases > 1 {
            return Decision::Watch { nodes: vec![watched], then_acquired: false, ahead: None };
        }
        // A writer may downgrade before it goes: its owner's plain `__READ__<its seq>` node then
        // takes its place before us and holds, so behind a writer we must list again (Curator's
        // writers do too).
        let before = &sorted[..index];
        if index < HAND_OFF_DEPTH && !before.iter().any(|c| c.contains(WRITE_NAME)) {
            return Decision::Watch { nodes: before.to_vec(), then_acquired: true, ahead: None };
        }
        let ahead = (index >= HAND_OFF_DEPTH && !watched.contains(WRITE_NAME)).then(|| sorted[index - AHEAD].clone());
        Decision::Watch { nodes: vec![watched], then_acquired: false, ahead }
    }
}

/// The read side of the read-write lock: holds when no writer sorts before it (Curator's
/// `readLockPredicate`). Waits for the NEAREST preceding writer (Curator waits for the first
/// one; either is correct, ours wakes readers one writer at a time instead of all at once
/// when several writers queue ahead).
#[derive(Debug, Clone)]
pub(crate) struct Read;

impl Rules for Read {
    fn lock_names(&self) -> &[&'static str] {
        RW_NAMES
    }

    fn holds_after_holder(&self, _watched: &str) -> bool {
        // we watch the nearest writer before us: only readers stand between (a downgrade's
        // read node among them), and readers share
        true
    }

    fn decide(&self, sorted: &[String], ours: &str) -> Decision {
        let Some(index) = position(sorted, ours) else { return Decision::Missing };
        match sorted[..index].iter().rposition(|c| c.contains(WRITE_NAME)) {
            None => Decision::Acquired,
            // Only a writer at the head hands over to us directly, and only if nothing but
            // readers stand between it and us.
            Some(w) => Decision::Watch { nodes: vec![sorted[w].clone()], then_acquired: w == 0, ahead: None },
        }
    }
}

/// Semaphore leases: hold when there are at most `max_leases` lease nodes (ours included);
/// otherwise reclaim the expired permits among them, if any, or wait for the children to
/// change or the earliest permit to expire (Curator's `InterProcessSemaphoreV2`, plus
/// expirable permits: `locks::expiring_permit`).
#[derive(Debug, Clone)]
pub(crate) struct LeaseCount {
    pub max_leases: usize,
    /// The wall clock that permits' deadlines are compared with (`SystemTime::now`).
    pub now: fn() -> SystemTime,
}

impl LeaseCount {
    pub(crate) fn new(max_leases: usize) -> Self {
        Self { max_leases, now: SystemTime::now }
    }
}

impl Rules for LeaseCount {
    fn lock_names(&self) -> &[&'static str] {
        &[crate::recipes::layout::LEASE_NAME]
    }

    fn decide(&self, sorted: &[String], ours: &str) -> Decision {
        if position(sorted, ours).is_none() {
            Decision::Missing
        } else if sorted.len() <= self.max_leases {
            Decision::Acquired
        } else {
            let now = (self.now)();
            let expired: Vec<String> =
                others(sorted, ours).filter(|c| permit_deadline(c).is_some_and(|at| at <= now)).cloned().collect();
            if expired.is_empty() {
                Decision::WatchChildren
            } else {
                Decision::Reclaim(expired)
            }
        }
    }

    fn wake_at(&self, sorted: &[String], ours: &str) -> Option<SystemTime> {
        earliest_deadline(sorted, ours)
    }
}

/// The earliest deadline of the expirable permits among `sorted`, ours left out.
pub(super) fn earliest_deadline(sorted: &[String], ours: &str) -> Option<SystemTime> {
    others(sorted, ours).filter_map(|c| permit_deadline(c)).min()
}

pub(super) fn others<'a>(sorted: &'a [String], ours: &'a str) -> impl Iterator<Item = &'a String> {
    sorted.iter().filter(move |c| c.as_str() != ours)
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
