//! The ONE lock engine: create our node (protected), list, sort, ask the driver, watch,
//! wait, repeat. Every lock, the semaphore, the leader latch and the atomic values' queue use
//! it.
//!
//! Performance points:
//! * The first create and the first listing go out together (one round trip): zookeeper-client
//!   orders requests when the future is created, so the listing sees our node.
//! * A release wakes the waiter right behind it (and at most one more): no herd.
//! * Close to the head (fewer than `HAND_OFF_DEPTH` places), a sole-holder waiter watches every
//!   node before it; when they are all deleted it holds — no listing between a release and the
//!   next hold. Further back it watches its predecessor and the node `AHEAD` places ahead,
//!   and lists again when that one goes, while the nodes before it still hold: off the
//!   hand-off's path. Not behind a writer of the read-write lock: it may have downgraded,
//!   leaving a read node in its place.
//! * A watch that has not fired stays set across a listing: the next decision waits on it
//!   again instead of sending the same request (`Kept`); every request costs the ensemble CPU.
//! * Behind a local holder, the hand-off needs no listing at all (`locks::holds`).
//! * The mutex's acquires of one framework enter ZooKeeper's queue a few at a time
//!   (`locks::gate`); the rest wait in a local FIFO queue, as a small future each: the
//!   contention (kilobytes of state) is boxed, allocated only once in ZooKeeper's queue.

use std::sync::Arc;
use std::time::Duration;

use crate::framework::Stat;
use tokio::time::Instant;
use zookeeper_client::{Client, CreateMode, Error as ZkError, EventType, OneshotWatcher};

use super::deadline::{held, Forever, Wait, Waited};
use super::driver::{Contenders, Decision, Driver};
use super::foreign::ForeignNodes;
use super::gate::{Gates, Place, Turn};
use super::holds::{HoldEntry, Holds};
use super::listings::{Listing, Listings};
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::wait::{PendingWatch, Wake, WatchSet};
use crate::framework::{
    paths, CreatedNode, Framework, IfExists, LossReason, ProtectedName, RetryAttempt, SessionStatus, TTL_UNSUPPORTED,
};
use crate::observe::{self, Kind};

/// What to contend for.
pub(crate) struct Request<'a> {
    /// What contends (the `kind` of the metrics and spans).
    pub kind: Kind,
    /// The parent of the contender nodes.
    pub dir: &'a str,
    /// The node name after the protection prefix (`lock-`, `__READ__`, `lease-`, `latch-`).
    pub name: &'a str,
    /// Our node's data.
    pub data: &'a [u8],
    /// Who holds and what to watch.
    pub driver: &'a dyn Driver,
    /// A node to read together with every listing (pipelined behind it): when that listing
    /// says we hold, the read shows every write our predecessors made before they let go, so
    /// the holder has it without another round trip ([`Acquired::prefetched`]). Such a
    /// contender lists on its own instead of sharing listings.
    pub prefetch: Option<&'a str>,
    /// Server-side lease: our node is a persistent-sequential TTL node with this time to live
    /// instead of an ephemeral-sequential one (`Unsupported` where the server has TTL nodes
    /// off), touched while it waits; the holder touches it by renewing.
    pub ttl: Option<Duration>,
    /// Whether a node of ours that vanished while it waited is created again (as the retry
    /// policy allows). `false` where the node's deletion means something (the atomic values'
    /// queue, where another writer may have applied our update with it): the acquire then
    /// ends with [`Error::LockLost`].
    pub recreate: bool,
    /// Whether this framework's contenders for `dir` wait in a local queue beyond the first
    /// [`DEPTH`](super::gate::DEPTH) (see `locks::gate`): for the mutex, whose contenders are all alike.
    /// Not where a contender's node means something while it waits (a latch's participant,
    /// a reader queued among writers).
    pub local_queue: bool,
    /// A queue that comes first (the semaphore's internal lock): listed once, when a decision
    /// first says to wait; if anyone queues there, our node is deleted and the contention ends
    /// [`Yielded`](Ended::Yielded) instead of waiting.
    pub yield_to: Option<Queue<'a>>,
}

/// A contender queue other than the request's own: its directory and the names its contenders'
/// nodes sort by (a child without one of them is foreign: no one).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Queue<'a> {
    pub dir: &'a str,
    pub names: &'a [&'a str],
}

/// How a contention ended, when not with an error.
pub(crate) enum Ended<W: Wait> {
    /// We hold.
    Held(Acquired),
    /// The wait's deadline passed; our node is deleted.
    TimedOut(W::TimedOut),
    /// Someone queues in [`Request::yield_to`]; our node is deleted.
    Yielded,
}

/// A node read pipelined behind the listing that made us the holder: its data and version, or
/// `None` when it does not exist.
pub(crate) type Prefetched = Option<(Vec<u8>, i32)>;

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
    /// `locks::holds`), while the hold lives.
    pub mark: Option<Arc<HoldEntry>>,
    /// The [`Request::prefetch`] read, when a listing decided that we hold.
    pub prefetched: Option<Prefetched>,
    /// Whether we waited for anyone (false: we held at our first listing).
    pub waited: bool,
    /// Our node's time to live ([`Request::ttl`]).
    pub ttl: Option<Duration>,
    /// The listing that decided we hold (`None`: we hold because every node we watched was
    /// deleted, without a listing since). Kept for [`Request::prefetch`] requests only.
    pub listing: Option<Arc<Listing>>,
    /// What contended ([`Request::kind`]).
    pub kind: Kind,
}

/// Deletes our node if the acquire is abandoned (cancelled, timed out, failed) before it is
/// handed to a guard: by path when we know it, else by the protection prefix.
struct Pending<'a> {
    fw: &'a Framework,
    name: &'a ProtectedName,
    node: Option<(String, i64)>,
    armed: bool,
}

impl Pending<'_> {
    fn forget_node(&mut self) {
        self.node = None;
        self.armed = false;
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match self.node.take() {
            Some((path, owner)) => self.fw.delete_in_background(path, Some(owner)),
            None => self.fw.delete_protected_in_background(self.name.clone()),
        }
    }
}

/// Contends until we hold: [`contend`] without a deadline.
pub(crate) async fn acquire(fw: &Framework, req: &Request<'_>) -> Result<Acquired> {
    contend(fw, req, Forever).await.map(held)
}

/// Contends until we hold (`Ok`), `wait`'s deadline passes (its `TimedOut`, our node
/// deleted), or an error. Cancel safe: dropping the future at any await point leaves no node
/// behind.
///
/// Observed: an `acquire` span (debug) with the path, the kind, and once it ends the outcome,
/// the wait and (acquired) the fencing token and session; the waiters gauge and the wait
/// histogram (a dropped future counts as `cancelled`).
pub(crate) async fn contend<W: Wait>(fw: &Framework, req: &Request<'_>, wait: W) -> Result<Waited<Acquired, W>> {
    debug_assert!(req.yield_to.is_none(), "a contention that may yield ends in `contend_or_yield`");
    contend_or_yield(fw, req, wait)
        .await?
        .ok_or_else(|| Error::invalid("yield_to", "a contention that may yield must be asked if it did"))
}

/// [`contend`], which may also end because someone queues in [`Request::yield_to`]: `None`,
/// our node deleted, and nothing recorded as a wait (the caller's next acquire records its own).
pub(crate) async fn contend_or_yield<W: Wait>(
    fw: &Framework,
    req: &Request<'_>,
    wait: W,
) -> Result<Option<Waited<Acquired, W>>> {
    use tracing::field::Empty;
    use tracing::Instrument;
    let started = Instant::now();
    let acquiring = observe::Acquiring::start(req.kind, fw.path_label(req.dir), started);
    let span = tracing::debug_span!(
        "acquire",
        path = req.dir,
        kind = req.kind.as_str(),
        outcome = Empty,
        wait_ms = Empty,
        token = Empty,
        session = Empty,
    );
    let result = match bounded(fw, req, wait).instrument(span.clone()).await {
        Ok(Ended::Held(acquired)) => Ok(Ok(acquired)),
        Ok(Ended::TimedOut(timed_out)) => Ok(Err(timed_out)),
        Ok(Ended::Yielded) => {
            span.record("outcome", "yielded");
            acquiring.withdraw();
            return Ok(None);
        }
        Err(e) => Err(e),
    };
    let outcome = match &result {
        Ok(Ok(_)) => observe::Outcome::Acquired,
        Ok(Err(_)) => observe::Outcome::TimedOut,
        Err(_) => observe::Outcome::Failed,
    };
    // (nothing is formatted when no subscriber wants the span)
    if !span.is_disabled() {
        if let Ok(Ok(acquired)) = &result {
            span.record("token", acquired.stat.czxid);
            span.record("session", observe::session_hex(acquired.status.session_id));
        }
        span.record("outcome", outcome.as_str());
        span.record("wait_ms", started.elapsed().as_millis() as u64);
        if let Err(error) = &result {
            span.in_scope(|| tracing::debug!(%error, "acquire failed"));
        }
    }
    acquiring.finish(outcome);
    result.map(Some)
}

/// [`contend_in_span`] under the wait's deadline, where it has one: every request of the
/// contention is bounded by it, and the whole by it and the cleanup grace (past that the
/// contention is dropped: its node goes in the background). A `try_` (a deadline that has
/// passed already) is bounded by one operation's time instead.
async fn bounded<W: Wait>(fw: &Framework, req: &Request<'_>, wait: W) -> Result<Ended<W>> {
    deadline::bounded_wait(wait.instant(), fw.operation_timeout(), contend_in_span(fw, req, wait)).await
}

/// [`contend`], inside its span: a place in the local queue first (where the request has
/// one), then the contention in ZooKeeper's queue.
async fn contend_in_span<W: Wait>(fw: &Framework, req: &Request<'_>, wait: W) -> Result<Ended<W>> {
    // left when the acquire ends, whatever the outcome: the next local acquire goes in then
    let mut place = match (req.local_queue, wait.deadline()) {
        (false, _) => None,
        (true, None) => Some(fw.session_extension::<Gates>().enter(req.dir).await),
        (true, Some((at, timed_out))) => {
            match tokio::time::timeout_at(at, fw.session_extension::<Gates>().enter(req.dir)).await {
                Ok(place) => Some(place),
                Err(_) => return Ok(Ended::TimedOut(timed_out)),
            }
        }
    };
    let turn = place.as_mut().and_then(Place::take_turn);
    // boxed: a task waiting in the local queue holds only the small future above, not the
    // contention's (kilobytes)
    let ended = Box::pin(contend_in_queue(fw, req, wait, turn)).await;
    drop(place);
    ended
}

/// The contention in ZooKeeper's queue: create our node, list, watch, until we hold.
///
/// `turn`: the local queue's turn (see `locks::gate`), given up once our first node is created.
async fn contend_in_queue<W: Wait>(
    fw: &Framework,
    req: &Request<'_>,
    wait: W,
    mut turn: Option<Turn>,
) -> Result<Ended<W>> {
    if req.ttl.is_some() && !fw.capabilities().await?.ttl_nodes {
        return Err(TTL_UNSUPPORTED);
    }
    let name = ProtectedName::new(req.dir, req.name);
    // known as local from before its create until it holds; its mark takes over then (`take`)
    let _contender = fw.session_extension::<Holds>().contender(name.prefix());
    let mut contention = Contention {
        fw,
        req,
        wait,
        pending: Pending { fw, name: &name, node: None, armed: false },
        started: Instant::now(),
        recreations: 0,
        waited: false,
        next_touch: None,
        yield_checked: req.yield_to.is_none(),
    };
    let mut pipelined = true;
    loop {
        let pending = &mut contention.pending;
        let created = create_node(fw, req, &name, pending, std::mem::take(&mut pipelined), &mut turn).await;
        drop(turn.take());
        let (node, owner, listing) = created?;
        // a node created again sorts after whoever queued meanwhile: look at `yield_to` again
        contention.yield_checked = req.yield_to.is_none();
        contention.next_touch = req.ttl.map(|ttl| Instant::now() + ttl / 3);
        if let Some(outcome) = contention.queue(node, owner, listing).await? {
            return Ok(outcome);
        }
        // our node vanished while we waited (and the retry policy allows): create it again
    }
}

/// One acquire, across the nodes it creates (one, unless ours vanishes while it waits).
struct Contention<'a, 'r, W> {
    fw: &'a Framework,
    req: &'a Request<'r>,
    wait: W,
    /// Deletes our node if the acquire is abandoned.
    pending: Pending<'a>,
    started: Instant,
    /// How often our node was created again.
    recreations: u32,
    /// Whether we waited for anyone.
    waited: bool,
    /// When our node, a TTL node, is to be touched next (kept across waits: a waiter woken
    /// more often than that must still touch it).
    next_touch: Option<Instant>,
    /// Whether [`Request::yield_to`] was looked at (or there is none).
    yield_checked: bool,
}

/// Our node in the queue.
struct Queued {
    node: CreatedNode,
    /// Its name, as listings show it.
    name: String,
    /// The session that owns it.
    owner: i64,
}

/// Watches of ours that have not fired, by the path they watch: a decision after a listing
/// waits on them again instead of sending the same watch once more (a waiter behind the node
/// ahead keeps its predecessor's watch when that node goes).
type Kept = Vec<(String, PendingWatch)>;

/// What a waiter waits for, once a decision said to wait.
struct Waiting {
    /// The watched nodes first, then the node ahead (or the children watch).
    watchers: WatchSet,
    /// The path each watcher watches, by index (empty for the children watch).
    paths: Vec<String>,
    /// How many of the watchers, from the first, watch nodes before ours.
    live: usize,
    /// Those nodes were everything before ours in our listing: all of them gone, we hold.
    then_acquired: bool,
    /// The one watched node, registered with the local holds before it was watched: marked
    /// if a local holder held through it.
    after_holder: Option<HoldEntry>,
    /// When to decide again though nothing changed (a permit expires then).
    wake_at: Option<Instant>,
}

impl Waiting {
    /// Whether, once every watched node is deleted, we are the head: known from our listing,
    /// or from the mark of the watched node's local holder.
    fn handed_over(&self) -> bool {
        self.then_acquired || self.after_holder.as_ref().is_some_and(HoldEntry::was_held)
    }
}

/// What comes after a watch is set.
enum Next {
    /// Wait for a change.
    Wait(Waiting),
    /// Everything before us is gone already, and we know that we hold.
    HandedOver,
    /// Decide again from this listing.
    Decide(Listed),
    /// List again, then decide.
    Relist,
}

/// How a wait ended.
enum Woken<T> {
    /// The last watched node was deleted and we hold (the status then).
    Head(SessionStatus),
    /// The deadline passed; our node is deleted.
    TimedOut(T),
    /// Anything else: list again (with the watches that have not fired).
    Changed(Kept),
}

impl<W: Wait> Contention<'_, '_, W> {
    /// Waits in the queue with `node` until we hold (`Some`), or our node vanishes and may be
    /// created again (`None`). `listing`: one sent after our create, if we have it.
    async fn queue(&mut self, node: CreatedNode, owner: i64, mut listing: Option<Listed>) -> Result<Option<Ended<W>>> {
        let ours = Queued { name: paths::node_name(&node.path).to_string(), owner, node };
        let mut kept = Kept::new();
        loop {
            let listed = match listing.take() {
                Some(listed) => listed,
                // lost sync with the list: list again
                None => relist(self.fw, self.req).await?,
            };
            let deciding = self.req.prefetch.map(|_| listed.0.clone());
            let (decision, status, prefetched, wake_at) = self.decide(&ours, listed);
            // (a wait whose deadline has passed, a `try_`, ends without asking)
            let waits = matches!(decision, Decision::Watch { .. } | Decision::WatchChildren)
                && self.wait.instant().is_none_or(|at| at > Instant::now());
            if waits && !std::mem::replace(&mut self.yield_checked, true) && self.someone_queues_first().await? {
                self.withdraw(&ours).await;
                return Ok(Some(Ended::Yielded));
            }
            let next = match decision {
                Decision::Acquired => {
                    let mut acquired = self.take(ours.node, status, prefetched);
                    acquired.listing = deciding;
                    return Ok(Some(Ended::Held(acquired)));
                }

                Decision::Missing => {
                    self.vanished(&ours, status)?;
                    return Ok(None);
                }
                Decision::Watch { nodes, then_acquired, ahead } => {
                    self.watch(&nodes, then_acquired, ahead, std::mem::take(&mut kept)).await?
                }
                Decision::WatchChildren => self.watch_children(&ours).await?,
                Decision::Reclaim(nodes) => {
                    reclaim(self.fw, self.req.dir, &nodes).await?;
                    Next::Relist
                }
            };
            let waiting = match next {
                Next::Wait(mut waiting) => {
                    waiting.wake_at = waiting.wake_at.or(wake_at);
                    waiting
                }
                Next::HandedOver => return Ok(Some(Ended::Held(self.take(ours.node, self.fw.status(), None)))),
                Next::Decide(listed) => {
                    listing = Some(listed);
                    continue;
                }
                Next::Relist => continue,
            };
            match self.wait_for_change(&ours, waiting).await {
                Woken::Head(status) => return Ok(Some(Ended::Held(self.take(ours.node, status, None)))),
                Woken::TimedOut(timed_out) => return Ok(Some(Ended::TimedOut(timed_out))),
                Woken::Changed(still) => {
                    kept = still;
                    listing = Some(relist(self.fw, self.req).await?);
                }
            }
        }
    }

    /// The driver's decision on `listed` (and the status it was made with, the prefetch read,
    /// and when a watching waiter must decide again though nothing it watches changed: the
    /// driver's [`wake_at`](Driver::wake_at)). The listing is not kept while waiting: with N
    /// waiters that would be O(N²) memory (a listing shared with other local waiters goes
    /// when the last one is done).
    fn decide(
        &self,
        ours: &Queued,
        (listing, prefetched): Listed,
    ) -> (Decision, SessionStatus, Option<Prefetched>, Option<Instant>) {
        let sorted = self.contenders(&listing);
        drop(listing);
        let status = self.fw.status();
        let decision = if status.session_id != ours.owner {
            Decision::Missing
        } else {
            self.req.driver.decide(&sorted, &ours.name)
        };
        let wake_at = match decision {
            Decision::Watch { .. } => self.req.driver.wake_at(&sorted, &ours.name).map(instant_of),
            _ => None,
        };
        (decision, status, prefetched, wake_at)
    }

    /// The contenders of `listing` in queue order, without its foreign children (each warned
    /// about once): those hold nothing (see `locks::foreign`).
    fn contenders(&self, listing: &Listing) -> Arc<Contenders> {
        let contenders = listing.sorted(self.req.driver.lock_names());
        self.fw.session_extension::<ForeignNodes>().warn(self.req.dir, &contenders.foreign);
        contenders
    }

    /// Our node is not in the listing: forgets it, and says whether to create it again (the
    /// retry policy allows) or [`Error::LockLost`].
    fn vanished(&mut self, ours: &Queued, status: SessionStatus) -> Result<()> {
        let session_changed = status.session_id != ours.owner;
        if session_changed {
            // a node of an older session may linger until the server expires it
            if let Some((path, _)) = self.pending.node.take() {
                self.fw.delete_in_background(path, None);
            }
        }
        self.pending.forget_node();
        let lost = crate::ZooKeeperError::NoNode;
        let retry = self.req.recreate
            && self
                .fw
                .retry_policy()
                .allow_retry(&RetryAttempt::new(self.recreations, self.started.elapsed(), &lost))
                .is_some();
        if !retry {
            let reason = if session_changed { LossReason::SessionLost } else { LossReason::NodeDeleted };
            return Err(Error::LockLost { path: ours.node.path.clone(), reason });
        }
        self.recreations += 1;
        tracing::debug!(path = %ours.node.path, "our contender node vanished: creating it again");
        Ok(())
    }

    /// Watches `nodes` (children of the request's directory) and the node `ahead`, in one
    /// round trip; a node we still watch from before (`kept`) is not asked for again.
    async fn watch(
        &mut self,
        nodes: &[String],
        then_acquired: bool,
        ahead: Option<String>,
        mut kept: Kept,
    ) -> Result<Next> {
        self.waited = true;
        let (fw, req) = (self.fw, self.req);
        let watched: Vec<String> = nodes.iter().map(|n| paths::join(req.dir, n)).collect();
        // registered before the watch: a local holder marks it before it deletes it (a kept
        // watch was set earlier: a mark missed then only costs a listing)
        let after_holder = match nodes {
            [only] if req.driver.holds_after_holder(only) => Some(fw.session_extension::<Holds>().watch(&watched[0])),
            _ => None,
        };
        // behind a local node no early listing is needed: it marks itself as it holds
        let local = after_holder.is_some() && fw.session_extension::<Holds>().is_local(&watched[0]);
        let ahead = ahead.filter(|_| !local).map(|a| paths::join(req.dir, &a));
        let has_ahead = ahead.is_some();
        // the watched nodes, then the node ahead: a kept watch each, or asked for in one round trip
        let mut targets = watched;
        targets.extend(ahead);
        let mut found: Vec<Option<PendingWatch>> = targets
            .iter()
            .map(|path| kept.iter().position(|(p, _)| p == path).map(|i| kept.swap_remove(i).1))
            .collect();
        let ask: Vec<&str> = targets.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|(p, _)| p.as_str()).collect();
        if !ask.is_empty() {
            let mut answers = watch_nodes(fw, &ask).await?.into_iter();
            for slot in found.iter_mut().filter(|f| f.is_none()) {
                *slot = answers.next().flatten().map(PendingWatch::from);
            }
        }
        // the node ahead's watch, apart from the live ones (`Some(None)`: it is gone); its path
        // goes last, beside its watch
        let (mut early, mut early_path) = (None, None);
        if has_ahead {
            let watch = found.pop().flatten();
            early_path = targets.pop().filter(|_| watch.is_some());
            early = Some(watch);
        }
        let (mut paths, live): (Vec<String>, Vec<PendingWatch>) =
            targets.into_iter().zip(found).filter_map(|(path, w)| w.map(|w| (path, w))).unzip();
        paths.extend(early_path);
        let handed_over = then_acquired || after_holder.as_ref().is_some_and(HoldEntry::was_held);
        Ok(match (live.len(), early) {
            (0, _) if handed_over => Next::HandedOver,
            // what we watch is gone, or the node ahead: list again now
            (0, _) | (_, Some(None)) => Next::Relist,
            (live_count, early) => Next::Wait(Waiting {
                watchers: WatchSet::from_pending(live.into_iter().chain(early.flatten())),
                paths,
                live: live_count,
                then_acquired,
                after_holder,
                wake_at: None,
            }),
        })
    }

    /// Our own listing with a children watch (the semaphore's wait).
    async fn watch_children(&mut self, ours: &Queued) -> Result<Next> {
        self.waited = true;
        let (list, watcher) = list_and_watch_children(self.fw, self.req.dir).await?;
        let list = Arc::new(Listing::new(list));
        let check = self.contenders(&list);
        if self.req.driver.decide(&check, &ours.name) != Decision::WatchChildren {
            return Ok(Next::Decide((list, None)));
        }
        let wake_at = self.req.driver.wake_at(&check, &ours.name).map(instant_of);
        Ok(match watcher {
            Some(w) => Next::Wait(Waiting {
                watchers: WatchSet::new([w]),
                paths: Vec::new(),
                live: 1,
                then_acquired: false,
                after_holder: None,
                wake_at,
            }),
            None => Next::Relist,
        })
    }

    /// Waits for what `waiting` watches, the deadline, or the session to change; touches a
    /// TTL node every third of its time to live meanwhile, so that the server keeps it.
    async fn wait_for_change(&mut self, ours: &Queued, mut waiting: Waiting) -> Woken<W::TimedOut> {
        let mut remaining = waiting.live;
        loop {
            let wake_at = [self.wait.instant(), waiting.wake_at, self.next_touch].into_iter().flatten().min();
            match waiting.watchers.wait(self.fw, wake_at, ours.owner).await {
                // a watched node is gone; when they all are and they were everything before
                // us (known from our listing, or the one marked by its local holder), we are
                // the head now
                (Wake::Event(EventType::NodeDeleted), Some(i)) if i < waiting.live && waiting.handed_over() => {
                    remaining -= 1;
                    if remaining > 0 {
                        continue;
                    }
                    let status = self.fw.status();
                    if status.session_id == ours.owner {
                        return Woken::Head(status);
                    }
                }
                // (a wait without a deadline is never woken by one: it lists again)
                (Wake::Deadline, _) => {
                    let touch_due = self.next_touch.is_some_and(|at| at <= Instant::now());
                    if let (true, Some(ttl)) = (touch_due, self.req.ttl) {
                        if let Err(e) = self.fw.touch(&ours.node.path).await {
                            tracing::debug!(path = %ours.node.path, error = %e, "touching our TTL node failed");
                        }
                        self.next_touch = Some(Instant::now() + ttl / 3);
                    }
                    if let Some((_, timed_out)) = self.wait.deadline().filter(|(at, _)| *at <= Instant::now()) {
                        self.withdraw(ours).await;
                        return Woken::TimedOut(timed_out);
                    }
                    // woken only to touch our node: wait on (the driver's own time not come)
                    if touch_due && waiting.wake_at.is_none_or(|at| at > Instant::now()) {
                        continue;
                    }
                }
                // any other change (the node ahead went: those before us likely hold now)
                _ => {}
            }
            let paths = std::mem::take(&mut waiting.paths);
            let still = waiting.watchers.into_pending();
            return Woken::Changed(
                still.into_iter().filter_map(|(i, w)| paths.get(i).map(|p| (p.clone(), w))).collect(),
            );
        }
    }

    /// Whether a contender queues in [`Request::yield_to`] (a foreign child there is no one).
    async fn someone_queues_first(&self) -> Result<bool> {
        let Some(queue) = self.req.yield_to else { return Ok(false) };
        let children = self.fw.children_or_empty(queue.dir).await?;
        Ok(children.iter().any(|c| super::driver::is_contender(c, queue.names)))
    }

    /// Deletes our node as we give up our place (in the background if that fails, or if this
    /// is cancelled: our node is forgotten only once the delete has been tried).
    async fn withdraw(&mut self, ours: &Queued) {
        let path = &ours.node.path;
        // past the wait's deadline: the time left is the cleanup grace
        if let Err(e) = deadline::cleanup(self.fw.delete_guaranteed(path)).await {
            tracing::debug!(%path, error = %e, "delete of a withdrawn node continues in the background");
        }
        self.pending.forget_node();
    }

    /// We hold with `node`: it is the guard's now (the acquire no longer deletes it).
    fn take(&mut self, node: CreatedNode, status: SessionStatus, prefetched: Option<Prefetched>) -> Acquired {
        self.pending.forget_node();
        let holds = self.fw.session_extension::<Holds>();
        let mark = self.req.driver.sole_holder().then(|| Arc::new(holds.mark_held(&node.path)));
        let (waited, ttl) = (self.waited, self.req.ttl);
        let kind = self.req.kind;
        Acquired { path: node.path, stat: node.stat, status, mark, prefetched, waited, ttl, listing: None, kind }
    }
}

/// The instant of the wall-clock time `at` (now, when it has passed).
fn instant_of(at: std::time::SystemTime) -> Instant {
    Instant::now() + at.duration_since(std::time::SystemTime::now()).unwrap_or_default()
}

/// Creates one protected node (any mode) cancel-safely: if the future is dropped, whatever
/// was created is deleted in the background.
pub(crate) async fn create_owned(
    fw: &Framework,
    dir: &str,
    name: &str,
    data: &[u8],
    mode: CreateMode,
) -> Result<CreatedNode> {
    let protected = ProtectedName::new(dir, name);
    let mut pending = Pending { fw, name: &protected, node: None, armed: true };
    let node = fw.create_protected_name(&protected, data, mode, false).await?;
    pending.forget_node();
    Ok(node)
}

/// Deletes `nodes` (children of `dir`; one gone already is fine), in one round trip.
async fn reclaim(fw: &Framework, dir: &str, nodes: &[String]) -> Result<()> {
    let paths: Vec<String> = nodes.iter().map(|n| paths::join(dir, n)).collect();
    fw.retry_op("delete", dir, |client| {
        let paths = &paths;
        async move {
            let deletes: Vec<_> = paths.iter().map(|p| client.delete(p, None)).collect();
            for delete in deletes {
                delete.await.if_exists()?;
            }
            Ok(())
        }
    })
    .await?;
    tracing::info!(dir, ?nodes, "reclaimed expired permits");
    Ok(())
}

/// A listing and what comes with it: the [`Request::prefetch`] read, when asked for.
type Listed = (Arc<Listing>, Option<Prefetched>);

/// Creates our node; on the first attempt together with the listing (one round trip). Also
/// returns the session our node belongs to: its ephemeral owner, or for a TTL node (which
/// has none) the session that created it.
async fn create_node(
    fw: &Framework,
    req: &Request<'_>,
    name: &ProtectedName,
    pending: &mut Pending<'_>,
    pipelined: bool,
    turn: &mut Option<Turn>,
) -> Result<(CreatedNode, i64, Option<Listed>)> {
    let mode = if req.ttl.is_some() { CreateMode::PersistentSequential } else { CreateMode::EphemeralSequential };
    let owner = |stat: &Stat, session: i64| if req.ttl.is_some() { session } else { stat.ephemeral_owner };
    let mut maybe_created = false;
    if pipelined && fw.wait_connected(Duration::ZERO).await.is_ok() {
        let client: Client = fw.raw_client()?;
        let path = name.path();
        let acl = fw.acl_for(&path).map_err(Error::from_client)?;
        let options = match req.ttl {
            Some(ttl) => acl.options(mode).with_ttl(ttl),
            None => acl.options(mode),
        };
        pending.armed = true;
        let create = || client.create(&path, req.data, &options);
        let (created, listed) = match req.prefetch {
            // our own listing and read, pipelined behind our create
            Some(read) => {
                let create = placed(create(), turn);
                let (created, listed) =
                    fw.answered(async { tokio::join!(create, list_and_read(&client, req.dir, read)) }).await?;
                (created, listed.map(|(l, p)| (l, Some(p))))
            }
            // a listing sent after our create: ours, pipelined behind it, or one shared with
            // the local contenders that asked while another listing was in flight
            None => {
                let (create, list) = fw.session_extension::<Listings>().after(&client, req.dir, create);
                let (created, listed) = fw.answered(async { tokio::join!(placed(create, turn), list) }).await?;
                (created, listed.map(|l| (l, None)))
            }
        };
        match created {
            Ok((stat, sequence)) => {
                let stat = Stat::from_client(&stat);
                let node = CreatedNode { path: format!("{path}{sequence}"), stat };
                let owner = owner(&stat, client.session_id().0);
                pending.node = Some((node.path.clone(), owner));
                return Ok((node, owner, listed.ok()));
            }
            Err(ZkError::NoNode) => {}
            Err(e) if crate::framework::is_retryable(&e) => maybe_created = true,
            Err(e) => return Err(Error::from_client(e)),
        }
    }
    pending.armed = true;
    let session = fw.status().session_id;
    let node = fw.create_protected_name_ttl(name, req.data, mode, req.ttl, maybe_created).await?;
    let owner = owner(&node.stat, session);
    pending.node = Some((node.path.clone(), owner));
    Ok((node, owner, None))
}

/// Our create's answer; the local queue's turn is given up once it says that our node exists
/// (its sequence is below every create sent after). Kept when it failed: our node is created
/// again (or found) with the turn held, so that no later local acquire's create (a pipelined
/// one right after a reconnect, while our retry still looks for the node it may have made)
/// sorts before ours.
async fn placed<T>(
    create: impl std::future::Future<Output = std::result::Result<T, ZkError>>,
    turn: &mut Option<Turn>,
) -> std::result::Result<T, ZkError> {
    let created = create.await;
    if created.is_ok() {
        drop(turn.take());
    }
    created
}

/// A listing of the request's directory sent after this call: shared with the other local
/// contenders, or our own with the prefetch read pipelined behind it.
async fn relist(fw: &Framework, req: &Request<'_>) -> Result<Listed> {
    let (dir, listings) = (req.dir, &fw.session_extension::<Listings>());
    match req.prefetch {
        Some(read) => {
            let (listing, data) =
                fw.retry_op("list", dir, |client| async move { list_and_read(&client, dir, read).await }).await?;
            Ok((listing, Some(data)))
        }
        None => {
            fw.retry_op("list", dir, |client| async move { listings.list(&client, dir).await }).await.map(|l| (l, None))
        }
    }
}

/// Lists `dir` and reads `read` behind it, in one round trip.
async fn list_and_read(
    client: &Client,
    dir: &str,
    read: &str,
) -> std::result::Result<(Arc<Listing>, Prefetched), ZkError> {
    // requests go out in the order their futures are made: the read after the listing
    let (listed, data) = tokio::join!(client.list_children(dir), client.get_data(read));
    let children = listed.if_exists()?.unwrap_or_default();
    let data = data.if_exists()?.map(|(data, stat)| (data, stat.version));
    Ok((Arc::new(Listing::new(children)), data))
}

/// Our own listing of `dir` with a children watch (the semaphore's wait).
async fn list_and_watch_children(fw: &Framework, dir: &str) -> Result<(Vec<String>, Option<OneshotWatcher>)> {
    fw.retry_op("watch", dir, |client| async move {
        let listed = client.list_and_watch_children(dir).await.if_exists()?;
        Ok(listed.map_or((Vec::new(), None), |(list, watcher)| (list, Some(watcher))))
    })
    .await
}

/// Data watches on `paths` (Curator uses `getData` so that no watch is left on a missing
/// node), all in one round trip: a watcher per path (`None`: the node is gone).
async fn watch_nodes(fw: &Framework, paths: &[&str]) -> Result<Vec<Option<OneshotWatcher>>> {
    fw.retry_op("watch", paths.first().copied().unwrap_or(""), |client| async move {
        // every request goes out before any answer is awaited
        let watched: Vec<_> = paths.iter().map(|p| client.get_and_watch_data(p)).collect();
        let mut out = Vec::with_capacity(watched.len());
        for w in watched {
            let answer: Option<(Vec<u8>, zookeeper_client::Stat, OneshotWatcher)> = w.await.if_exists()?;
            out.push(answer.map(|(_, _, w)| w));
        }
        Ok(out)
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use std::sync::{Arc, Mutex};

    use super::super::gate::{Gates, DEPTH};
    use super::super::listings::Listings;
    use crate::sync::lock;
    use crate::{Framework, InterProcessMutex};

    /// 1,000 waiters of one process on one session: eight of them are nodes in ZooKeeper's
    /// queue and the rest wait in the local queue; they queue with a handful of listings and
    /// drain with at most one per entrant (a hand-off from a local holder needs none), in
    /// queue order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn local_waiters_queue_locally_share_listings_and_drain_in_order() {
        const WAITERS: usize = 1_000;
        let cs = zk_recipes_testing::shared_server().await.unwrap();
        let fw = Framework::connect(&cs).await.unwrap();
        let path = format!("/listings-test-{}", std::process::id());
        let mutex = InterProcessMutex::new(&fw, &path).unwrap();
        let first = mutex.acquire().await.unwrap();
        let sent = || fw.session_extension::<Listings>().sent();
        let before = sent();
        let inside = Arc::new(AtomicUsize::new(0));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for _ in 0..WAITERS {
            let (m, inside, order) = (mutex.clone(), inside.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let g = m.acquire().await.unwrap();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                lock(&order).push(g.fencing_token());
                inside.fetch_sub(1, Ordering::SeqCst);
                g.release().await.unwrap();
            }));
        }
        while fw.children(&path).await.unwrap().len() < DEPTH + 1 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        // every entrant has its listing once it watches its predecessor: wait for that
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        while fw.session_extension::<Listings>().any_in_flight() {
            assert!(tokio::time::Instant::now() < deadline, "listings never settled");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let queued = sent() - before;
        assert!(queued <= DEPTH as u64, "{queued} listings for {DEPTH} entrants");
        assert_eq!(fw.children(&path).await.unwrap().len(), DEPTH + 1, "the rest wait locally");
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        // each entrant behind a local contender lists once (none after a hand-off), or twice
        // when its predecessor was gone before its watch was set
        let drained = sent() - before - queued;
        assert!(drained <= 2 * WAITERS as u64, "{drained} listings to drain {WAITERS} local waiters");
        let order = lock(&order).clone();
        assert_eq!(order.len(), WAITERS);
        assert!(order.windows(2).all(|w| w[0] < w[1]), "held in queue order, tokens increasing");
        assert_eq!(fw.session_extension::<Gates>().paths(), 0, "the local queue outlived its acquires");
        // (the container may be reaped already)
        let left = fw.children(&path).await;
        assert!(
            matches!(&left, Ok(c) if c.is_empty())
                || matches!(left, Err(crate::Error::ZooKeeper(crate::ZooKeeperError::NoNode))),
            "no node left: {left:?}"
        );
        fw.close();
    }
}
