//! One acquire's state in ZooKeeper's queue ([`Contention`]) and what it ends with
//! ([`Ended`], [`Acquired`]): shared by the engine's loop (`contend.rs`) and its waits
//! (`watch.rs`).

use std::sync::Arc;

use tokio::time::Instant;

use super::acquire::{Wait, Waited};
use super::create::Pending;
use super::driver::{Driver, Request};
use super::handoff::Mark;
use super::listings::{Listing, Prefetched};
use super::order::Contenders;
use super::session::SessionLocks;
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::{CreatedNode, Framework, SessionStatus, Stat};
use crate::observe::Kind;

/// How a contention ended, when not with an error.
pub(crate) enum Ended<W: Wait> {
    /// We hold.
    Held(Acquired),
    /// The wait's deadline passed; our node is deleted.
    TimedOut(W::TimedOut),
    /// Someone queues where the driver [yields to](Driver::yields_to); our node is deleted.
    Yielded,
}

impl<W: Wait> Ended<W> {
    /// The outcome of a driver that never yields: held, or timed out.
    pub(crate) fn waited(self) -> Result<Waited<Acquired, W>> {
        match self {
            Ended::Held(acquired) => Ok(Ok(acquired)),
            Ended::TimedOut(timed_out) => Ok(Err(timed_out)),
            Ended::Yielded => Err(Error::invalid("yields_to", "a driver that yields must be asked whether it did")),
        }
    }
}

/// Our node, once it holds.
#[derive(Debug, Clone)]
pub(crate) struct Acquired {
    /// Full path of our node.
    pub path: String,
    /// Its stat at creation (`czxid` is the fencing token).
    pub stat: Stat,
    /// The framework's status when we started holding.
    pub status: SessionStatus,
    /// Our node marked as held by the queue's sole head, for local waiters (see
    /// `handoff.rs`), while the hold lives.
    pub mark: Option<Arc<Mark>>,
    /// The [`Driver::prefetch`] read, when a listing decided that we hold.
    pub prefetched: Option<Prefetched>,
    /// Whether we waited for anyone (false: we held at our first listing).
    pub waited: bool,
    /// Our node's time to live ([`Driver::server_ttl`]).
    pub ttl: Option<std::time::Duration>,
    /// The listing that decided we hold (`None`: we hold because every node we watched was
    /// deleted, without a listing since). Kept for [`Driver::prefetch`] drivers only.
    pub listing: Option<Arc<Listing>>,
    /// What contended ([`Driver::kind`]).
    pub kind: Kind,
}

impl Acquired {
    /// A node held without contending (a queue item's lock, a downgrade's read node), created
    /// at `path` with `stat` while the framework's status was `status`.
    pub(crate) fn created(path: String, stat: Stat, status: SessionStatus, kind: Kind) -> Self {
        Acquired { path, stat, status, mark: None, prefetched: None, waited: false, ttl: None, listing: None, kind }
    }
}

/// One acquire in ZooKeeper's queue, across the nodes it creates (one, unless ours vanishes
/// while it waits).
pub(super) struct Contention<'a, 'r, W> {
    pub(super) fw: &'a Framework,
    pub(super) req: &'a Request<'r>,
    pub(super) driver: &'r dyn Driver,
    pub(super) wait: W,
    pub(super) locks: &'a Arc<SessionLocks>,
    /// Deletes our node if the acquire is abandoned.
    pub(super) pending: Pending<'a>,
    pub(super) started: Instant,
    /// How often our node was created again.
    pub(super) recreations: u32,
    /// Whether we waited for anyone.
    pub(super) waited: bool,
    /// When our node, a TTL node, is to be touched next (kept across waits: a waiter woken
    /// more often than that must still touch it).
    pub(super) next_touch: Option<Instant>,
    /// Whether [`Driver::yields_to`] was looked at (or there is none).
    pub(super) yield_checked: bool,
}

/// Our node in the queue.
pub(super) struct Queued {
    pub(super) node: CreatedNode,
    /// Its name, as listings show it.
    pub(super) name: String,
    /// The session that owns it.
    pub(super) owner: i64,
}

impl<'a, 'r, W: Wait> Contention<'a, 'r, W> {
    pub(super) fn new(fw: &'a Framework, req: &'a Request<'r>, wait: W, locks: &'a Arc<SessionLocks>) -> Self {
        Contention {
            fw,
            req,
            driver: req.driver,
            wait,
            locks,
            pending: Pending::new(fw),
            started: Instant::now(),
            recreations: 0,
            waited: false,
            next_touch: None,
            yield_checked: true,
        }
    }

    /// The contenders of `listing` in queue order, without its foreign children (each warned
    /// about once): those hold nothing (see `foreign.rs`).
    pub(super) fn contenders(&self, listing: &Listing) -> Arc<Contenders> {
        let contenders = listing.sorted(self.driver.rules().lock_names());
        self.locks.foreign.warn(self.req.dir, &contenders.foreign);
        contenders
    }

    /// Deletes our node as we give up our place (in the background if that fails, or if this
    /// is cancelled: our node is forgotten only once the delete has been tried).
    pub(super) async fn withdraw(&mut self, ours: &Queued) {
        let path = &ours.node.path;
        // past the wait's deadline: the time left is the cleanup grace
        if let Err(e) = deadline::cleanup(self.fw.delete_guaranteed(path)).await {
            tracing::debug!(%path, error = %e, "delete of a withdrawn node continues in the background");
        }
        self.pending.forget_node();
    }
}

/// The instant of the wall-clock time `at` (now, when it has passed).
pub(super) fn instant_of(at: std::time::SystemTime) -> Instant {
    deadline::after(at.duration_since(std::time::SystemTime::now()).unwrap_or_default())
}
