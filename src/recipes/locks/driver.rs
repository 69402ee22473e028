//! What differs between lock kinds, behind one trait — Curator's `LockInternalsDriver`: how a
//! contender's node is made, whether it holds and what it waits for, and the few places where
//! a kind does more than the plain queue (waits in a local queue first, reads a node behind
//! its listing, yields its place, waits its own way). The engine (`engine.rs`) calls these
//! hooks; it has no flag of its own for any kind.
//!
//! Here too: the drivers of the exclusive kinds and the read side — their decisions pure, the
//! same as Curator's, so that a Curator process and ours decide the same from the same queue
//! (unit-tested without a server in `driver_tests.rs`). The semaphore's drivers are its own
//! (`leases.rs`); how the queue is read from a listing is `order.rs`'s.

use std::future::{ready, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::order::{position, Listed, Listing};
use super::session::{Admitted, SessionLocks};
use crate::error::{Error, Result};
use crate::framework::{Conn, Framework, OneShotWatch};
use crate::observe::Kind;
use crate::recipes::layout::{LATCH_NAME, LOCK_NAME};

/// A hook's future.
pub(crate) type Hook<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What one acquire contends for: the queue's directory, our node's data, and the kind's
/// [`Driver`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    /// The parent of the contender nodes.
    pub dir: &'a str,
    /// Our node's data (as given: a compressing framework compresses it).
    pub data: &'a [u8],
    /// The kind's policy.
    pub driver: &'a dyn Driver,
}

/// What a contender of one kind is: how it is named in metrics, which nodes are its queue's
/// and how they sort, and how its own node is made (Curator's `createsTheLock`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec<'a> {
    /// What contends (the `kind` of the metrics, spans and loss lines).
    pub kind: Kind,
    /// The names the queue's nodes end with before their sequence: which children are
    /// contenders at all, and the text they sort by (see `order::sort_key`).
    pub names: &'static [&'static str],
    /// Our node's name after the protection prefix (`lock-`, `__READ__`, `lease-`, `latch-`):
    /// the server appends the sequence.
    pub name: &'a str,
    /// A server TTL: our node is a persistent-sequential TTL node with this time to live
    /// instead of an ephemeral-sequential one, touched while it waits (the holder touches it by
    /// renewing).
    pub ttl: Option<Duration>,
}

/// What a contender does next, from the contenders in queue order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// We hold.
    Hold(Holding),
    /// Wait for one of the watched nodes to go.
    Watch(Watch),
    /// Wait the driver's own way: [`Driver::wait_own`] (the semaphore's count).
    Own,
    /// Our node is not among the contenders: deleted, by someone else or with our session.
    Missing,
}

/// How we hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holding {
    /// As the queue's one holder, its head: every node before ours is gone while we hold (a
    /// local waiter behind us learns of our release without a listing: `session.rs`'s
    /// hand-off).
    Alone,
    /// Beside other holders (readers, leases).
    Shared,
}

/// A waiter's watches: wait until one of `nodes` (child names; usually just our predecessor)
/// is deleted or changes, then decide again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Watch {
    pub nodes: Vec<String>,
    /// `nodes` are every node before ours in the queue, so once all of them are deleted we
    /// hold, so: nodes created later sort after us (the one exception, a downgrade's read
    /// node, takes a writer's place, so never when a writer is among them).
    pub then: Option<Holding>,
    /// A node further ahead whose deletion most likely leaves us a few places from the head.
    /// Watching it too lets the waiter list again while those before it still hold — off the
    /// hand-off's path — and then wait for all of them with `then_held`.
    pub ahead: Option<String>,
    /// The one watched node's deletion after it held alone makes us the holder: nothing that
    /// could hold stands between it and us (the hand-off of `session.rs`).
    pub after_holder: bool,
    /// Decide again then even if nothing watched changed (an expirable permit's deadline).
    pub wake_at: Option<SystemTime>,
}

/// What a driver's first wait does ([`Driver::before_waiting`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proceed {
    /// Wait in the queue.
    Wait,
    /// Give up our place: our node is deleted and the acquire ends
    /// [`Yielded`](super::engine::Ended::Yielded).
    Yield,
}

/// Who waits its driver's own way ([`Driver::wait_own`]): our node `ours` in `dir`, with the
/// queue (`queue`, the contenders) the decision was made from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waiter<'a> {
    pub fw: &'a Framework,
    pub dir: &'a str,
    pub queue: &'a [String],
    pub ours: &'a str,
}

/// A driver's own wait ([`Driver::wait_own`]).
pub(crate) enum OwnWait {
    /// Wait for this watch (or `wake_at`), then decide again.
    Watch { watch: OneShotWatch, wake_at: Option<SystemTime> },
    /// Decide again now, from this listing when given (else a new one).
    Again(Option<Listed>),
}

/// The policy of one kind of contender. The first two say what a contender is and decide;
/// the hooks after them do what a kind does beyond the plain queue, each with the plain
/// queue's behaviour as its default.
pub(crate) trait Driver: Send + Sync + std::fmt::Debug {
    /// What a contender of this kind is.
    fn spec(&self) -> Spec<'_>;

    /// Whether we hold, or what we wait for (Curator's `getsTheLock`), from the contenders
    /// in queue order and our node's name. Pure.
    fn decide(&self, queue: &[String], ours: &str) -> Decision;

    /// Waits until this acquire may enter ZooKeeper's queue. The plain queue enters at once;
    /// the mutex waits in the process's local queue beyond its first few contenders.
    fn admit<'a>(&'a self, _locks: &'a SessionLocks, _dir: &'a str) -> Hook<'a, Admitted> {
        Box::pin(ready(Admitted::default()))
    }

    /// The listing to decide from, sent on `conn` after every request made on it before
    /// (our create): by default one shared with this process's other contenders of `dir`.
    fn list<'a>(&'a self, conn: &'a Conn, locks: &'a SessionLocks, dir: &'a str) -> Hook<'a, Result<Listed>> {
        Box::pin(async move { Ok(Listed::plain(locks.listings.list(conn, dir).await?)) })
    }

    /// What our first wait does (once per node): wait in the queue.
    fn before_waiting<'a>(&'a self, _fw: &'a Framework) -> Hook<'a, Result<Proceed>> {
        Box::pin(ready(Ok(Proceed::Wait)))
    }

    /// The wait of a [`Decision::Own`] by `waiter`: it may keep no listing while it waits (with
    /// N waiters that would be O(N²) memory). No driver but the semaphore's decides so.
    fn wait_own<'a>(&'a self, _waiter: Waiter<'a>) -> Hook<'a, Result<OwnWait>> {
        Box::pin(ready(Err(Error::InvalidState("a driver that decides to wait its own way must say how"))))
    }

    /// Our node vanished while we waited (`lost`: the error that says so): `Ok` creates it
    /// again, as the retry policy allows; an error ends the acquire. By default, again.
    fn vanished(&self, _lost: Error) -> Result<()> {
        Ok(())
    }
}

/// The exclusive kinds' driver (Curator's `StandardLockInternalsDriver`): the queue's head
/// holds alone, a waiter watches the node right before it — or, close to the head, every
/// node before it and holds when they are gone (see [`HAND_OFF_DEPTH`]). The mutex, the leader
/// latch, the atomic values' turns; the read-write lock's writers ([`Exclusive::writer`]).
#[derive(Debug, Clone)]
pub(crate) struct Exclusive {
    kind: Kind,
    names: &'static [&'static str],
    name: &'static str,
    ttl: Option<Duration>,
}

impl Exclusive {
    /// `lock-` nodes: the mutex (with the `kind` of the recipe built on it), the atomic
    /// values' turns.
    pub(crate) const fn lock(kind: Kind) -> Self {
        Exclusive { kind, names: &[LOCK_NAME], name: LOCK_NAME, ttl: None }
    }

    /// `latch-` nodes: the leader latch.
    pub(crate) const fn latch() -> Self {
        Exclusive { kind: Kind::LeaderLatch, names: &[LATCH_NAME], name: LATCH_NAME, ttl: None }
    }

    /// `__WRIT__` nodes among the read-write lock's readers and writers.
    pub(crate) const fn writer() -> Self {
        Exclusive { kind: Kind::Write, names: RW_NAMES, name: WRITE_NAME, ttl: None }
    }

    /// The same, our node a server-TTL node with `ttl` (`None`: ephemeral).
    pub(crate) fn with_ttl(self, ttl: Option<Duration>) -> Self {
        Exclusive { ttl, ..self }
    }
}

/// A waiter this close to the head (fewer places from it) watches every node before it and
/// holds when they are gone, without listing again; further back it watches its predecessor
/// and the node [`AHEAD`] places ahead, and lists again when that one goes.
pub(crate) const HAND_OFF_DEPTH: usize = 3;

/// How far ahead a waiter further back than [`HAND_OFF_DEPTH`] watches, besides its
/// predecessor. At 2, the node ahead goes as its predecessor starts to hold: the waiter lists
/// once (while its predecessor holds), keeps its predecessor's watch, and is ready for the
/// hand-off with no request more. That is about 6 requests per hold at 16 contenders where
/// watching every node within 4 places of the head took about 9.5 for the same critical path;
/// every request costs the servers CPU, which an ensemble on few cores lacks.
pub(crate) const AHEAD: usize = 2;

/// The read-write lock's node names.
pub(crate) const READ_NAME: &str = crate::recipes::layout::READ_NAME;
/// The read-write lock's node names.
pub(crate) const WRITE_NAME: &str = crate::recipes::layout::WRITE_NAME;
pub(crate) const RW_NAMES: &[&str] = &[READ_NAME, WRITE_NAME];

impl Driver for Exclusive {
    fn spec(&self) -> Spec<'_> {
        Spec { kind: self.kind, names: self.names, name: self.name, ttl: self.ttl }
    }

    fn decide(&self, queue: &[String], ours: &str) -> Decision {
        let Some(index) = position(queue, ours) else { return Decision::Missing };
        if index == 0 {
            return Decision::Hold(Holding::Alone);
        }
        let before = &queue[..index];
        let predecessor = &before[index - 1];
        // A writer may downgrade before it goes: its owner's plain `__READ__<its seq>` node then
        // takes its place before us and holds, so behind a writer we must list again (Curator's
        // writers do too).
        let behind_writer = before.iter().any(|c| c.contains(WRITE_NAME));
        if index < HAND_OFF_DEPTH && !behind_writer {
            return Decision::Watch(Watch {
                nodes: before.to_vec(),
                then: Some(Holding::Alone),
                after_holder: index == 1,
                ..Watch::default()
            });
        }
        let downgrades = predecessor.contains(WRITE_NAME);
        let ahead = (index >= HAND_OFF_DEPTH && !downgrades).then(|| queue[index - AHEAD].clone());
        Decision::Watch(Watch {
            nodes: vec![predecessor.clone()],
            ahead,
            after_holder: !downgrades,
            ..Watch::default()
        })
    }
}

/// The mutex's driver: [`Exclusive`] `lock-` nodes (optionally server-TTL nodes), entering
/// ZooKeeper's queue through the process's local queue (`session.rs`): the mutex's contenders
/// are all alike, so they may wait for each other in the process instead of on the server.
#[derive(Debug)]
pub(crate) struct MutexDriver(pub Exclusive);

impl Driver for MutexDriver {
    fn spec(&self) -> Spec<'_> {
        self.0.spec()
    }

    fn decide(&self, queue: &[String], ours: &str) -> Decision {
        self.0.decide(queue, ours)
    }

    fn admit<'a>(&'a self, locks: &'a SessionLocks, dir: &'a str) -> Hook<'a, Admitted> {
        Box::pin(locks.local_queues.enter(dir))
    }
}

/// A driver whose every listing comes with a read of `read` behind it, in the same round trip:
/// when a listing says we hold, the read shows every write our predecessors made before they let
/// go, so the holder has it without another round trip
/// ([`Acquired::read`](super::held::Acquired::read)). Its listings are its own, not shared
/// (they carry the read). `InterProcessMutex::acquire_and_read`, the atomic values' turns.
#[derive(Debug)]
pub(crate) struct Reading<'a, D> {
    pub driver: D,
    pub read: &'a str,
}

impl<D: Driver> Driver for Reading<'_, D> {
    fn spec(&self) -> Spec<'_> {
        self.driver.spec()
    }

    fn decide(&self, queue: &[String], ours: &str) -> Decision {
        self.driver.decide(queue, ours)
    }

    fn admit<'a>(&'a self, locks: &'a SessionLocks, dir: &'a str) -> Hook<'a, Admitted> {
        self.driver.admit(locks, dir)
    }

    fn list<'a>(&'a self, conn: &'a Conn, _locks: &'a SessionLocks, dir: &'a str) -> Hook<'a, Result<Listed>> {
        Box::pin(async move {
            // requests go out in the order they are made: the read after the listing
            let (listed, read) = tokio::join!(conn.children(dir), conn.get_data(self.read));
            let children = crate::framework::IfExists::if_exists(listed)?.unwrap_or_default();
            let read = crate::framework::IfExists::if_exists(read)?.map(|(data, stat)| (data, stat.version));
            Ok(Listed { listing: Arc::new(Listing::new(children)), read: Some(read) })
        })
    }

    fn vanished(&self, lost: Error) -> Result<()> {
        self.driver.vanished(lost)
    }
}

/// A driver whose acquire ends with [`Error::LockLost`] when its node vanishes while it
/// waits, instead of creating it again: the atomic values' joint additions, where another
/// writer may have applied ours with its own and deleted our node.
#[derive(Debug)]
pub(crate) struct Once<D>(pub D);

impl<D: Driver> Driver for Once<D> {
    fn spec(&self) -> Spec<'_> {
        self.0.spec()
    }

    fn decide(&self, queue: &[String], ours: &str) -> Decision {
        self.0.decide(queue, ours)
    }

    fn list<'a>(&'a self, conn: &'a Conn, locks: &'a SessionLocks, dir: &'a str) -> Hook<'a, Result<Listed>> {
        self.0.list(conn, locks, dir)
    }

    fn vanished(&self, lost: Error) -> Result<()> {
        Err(lost)
    }
}

/// The read side of the read-write lock: a reader holds when no writer sorts before it
/// (Curator's `readLockPredicate`). It waits for the NEAREST preceding writer (Curator waits
/// for the first one; either is correct, ours wakes readers one writer at a time instead of
/// all at once when several writers queue ahead).
#[derive(Debug, Clone)]
pub(crate) struct Reader {
    pub ttl: Option<Duration>,
}

impl Driver for Reader {
    fn spec(&self) -> Spec<'_> {
        Spec { kind: Kind::Read, names: RW_NAMES, name: READ_NAME, ttl: self.ttl }
    }

    fn decide(&self, queue: &[String], ours: &str) -> Decision {
        let Some(index) = position(queue, ours) else { return Decision::Missing };
        match queue[..index].iter().rposition(|c| c.contains(WRITE_NAME)) {
            None => Decision::Hold(Holding::Shared),
            // Only a writer at the head hands over to us directly, and only if nothing but
            // readers stand between it and us; readers share, a downgrade's read node among them.
            Some(w) => Decision::Watch(Watch {
                nodes: vec![queue[w].clone()],
                then: (w == 0).then_some(Holding::Shared),
                after_holder: true,
                ..Watch::default()
            }),
        }
    }
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
