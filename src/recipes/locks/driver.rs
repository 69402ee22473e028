//! What differs between lock kinds, behind one trait (Curator's `LockInternalsDriver`): how a
//! contender's node is named and created, whether it holds and what it watches (its
//! [`Rules`]), whether it yields, and what the vanishing of its node means. The engine
//! (`contend.rs`) asks the driver; it has no flag of its own for any kind.
//!
//! Each kind's driver lives beside the kind: `mutex.rs` (`MutexDriver`), `rwlock.rs`
//! (`SideDriver`), `semaphore.rs` (`LeaseDriver`), the leader latch and the atomic values'
//! turns (their own modules).

use std::time::Duration;

use super::rules::Rules;
use crate::observe::Kind;

/// What one acquire contends for: the queue's directory, our node's data, and the kind's
/// [`Driver`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    /// The parent of the contender nodes.
    pub dir: &'a str,
    /// Our node's data.
    pub data: &'a [u8],
    /// The kind's policy.
    pub driver: &'a dyn Driver,
}

/// The policy of one kind of contender.
pub(crate) trait Driver: Send + Sync + std::fmt::Debug {
    /// What contends (the `kind` of the metrics, spans and loss lines).
    fn kind(&self) -> Kind;

    /// How the contenders sort, who holds, what a waiter watches.
    fn rules(&self) -> &dyn Rules;

    /// Our node's name after the protection prefix (`lock-`, `__READ__`, `lease-`, `latch-`).
    fn node_name(&self) -> &str;

    /// A server TTL: our node is a persistent-sequential TTL node with this time to
    /// live instead of an ephemeral-sequential one (`Unsupported` where the server has TTL
    /// nodes off), touched while it waits; the holder touches it by renewing.
    fn server_ttl(&self) -> Option<Duration> {
        None
    }

    /// Whether this framework's contenders for one directory wait in a local queue beyond the
    /// first [`DEPTH`](super::local_queue::DEPTH) (see `local_queue.rs`): where contenders are
    /// all alike (the mutex). Not where a node means something while it waits (a latch's
    /// participant, a reader queued among writers).
    fn queues_locally(&self) -> bool {
        false
    }

    /// A queue that comes first (the semaphore's internal lock): looked at once, when a
    /// decision first says to wait; if anyone queues there, our node is deleted and the
    /// contention ends [`Yielded`](super::contention::Ended::Yielded) instead of waiting.
    fn yields_to(&self) -> Option<YieldTo<'_>> {
        None
    }

    /// A node to read together with every listing (pipelined behind it): when that listing
    /// says we hold, the read shows every write our predecessors made before they let go, so
    /// the holder has it without another round trip
    /// ([`Acquired::prefetched`](super::contention::Acquired::prefetched)). Such a contender
    /// lists on its own instead of sharing listings.
    fn prefetch(&self) -> Option<&str> {
        None
    }

    /// What it means when our node vanishes while we wait.
    fn on_vanished(&self) -> Vanished {
        Vanished::CreateAgain
    }
}

/// What the vanishing of a waiting contender's node means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vanished {
    /// Nothing: create it again, as the retry policy allows.
    CreateAgain,
    /// Something (the atomic values' joint queue, where another writer may have applied our
    /// update with it): the acquire ends with [`Error::LockLost`](crate::Error::LockLost).
    Lost,
}

/// A contender queue other than the request's own: its directory and the names its contenders'
/// nodes sort by (a child without one of them is foreign: no one).
#[derive(Debug, Clone, Copy)]
pub(crate) struct YieldTo<'a> {
    pub dir: &'a str,
    pub names: &'a [&'a str],
}
