//! The ONE lock engine (Curator's `LockInternals`): create our node, list, sort, ask the
//! driver, wait, repeat. Every lock, the semaphore, the leader latch and the atomic values'
//! turns contend through [`contend`]; what differs between them is their
//! [`Driver`](super::driver::Driver). Read it top to bottom:
//!
//! 1. [`contend`]: one acquire, observed (span, metrics), bounded by its deadline, admitted to
//!    the queue by the driver ([`Driver::admit`]: the mutex's local queue);
//! 2. [`Contention::run`]: creates our node — protected, sequential, through the framework's one
//!    protected create, with the first listing in the same round trip — and queues with it,
//!    creating it again if it vanishes while we wait and the driver allows;
//! 3. [`Contention::queue`]: list (the driver's [`Driver::list`]), decide (its
//!    [`Driver::decide`]), and hold, or wait;
//! 4. the waits: node watches ([`Contention::watch`]) or the driver's own ([`Driver::wait_own`]),
//!    then a change, the deadline or a new session ([`Contention::wait_for_change`]);
//! 5. [`Pending`]: what an abandoned acquire made is deleted — the one place cancellation is
//!    handled.
//!
//! Performance points (the optimisations are `session.rs`'s; this file reads without them):
//! * The create and the first listing go out together (one round trip): a request is sent
//!   when it is made, so the listing sees our node.
//! * A release wakes the waiter right behind it (and at most one more): no herd.
//! * A waiter close to the head watches every node before it and holds when they are gone —
//!   no listing between a release and the next hold; further back it watches its predecessor
//!   and a node further ahead, listing again when that one goes, off the hand-off's path (the
//!   driver's [`Watch`]).
//! * A watch that has not fired stays set across a listing: the next decision waits on it
//!   again instead of sending the same request; every request costs the ensemble CPU.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::driver::{Decision, Driver, Holding, OwnWait, Proceed, Request, Waiter, Watch};
use super::held::{Acquired, NodeWatch};
use super::order::{Listed, Listing, Queue};
use super::session::{Followed, InFlight, Mark, SessionLocks};
use crate::error::{Error, Result, TimeoutStep};
use crate::framework::deadline;
use crate::framework::wait::{PendingWatch, Wake, WatchSet};
use crate::framework::{paths, CreateMode, CreatedNode, Framework, IfExists, LossReason, OneShotWatch, ProtectedName};
use crate::framework::{RetryAttempt, SessionStatus, WatchEvent};
use crate::observe;

// ---------------------------------------------------------------------------------------
// How long an acquire may wait

/// How long an acquire may wait, in its type: waiting [`Forever`] cannot time out.
pub(crate) trait Wait: Copy + Send + Sync + std::fmt::Debug + 'static {
    /// What the acquire reports when its deadline passes.
    type TimedOut: Copy + Send + Sync + std::fmt::Debug;

    /// The deadline, with the outcome to report when it passes (`None`: no deadline).
    fn deadline(self) -> Option<(Instant, Self::TimedOut)>;

    /// The deadline alone.
    fn instant(self) -> Option<Instant> {
        self.deadline().map(|(at, _)| at)
    }
}

/// Wait as long as it takes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Forever;

/// Give up at this instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Until(pub Instant);

/// The deadline of an [`Until`] passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimedOut;

impl Wait for Forever {
    type TimedOut = Infallible;

    fn deadline(self) -> Option<(Instant, Infallible)> {
        None
    }
}

impl Wait for Until {
    type TimedOut = TimedOut;

    fn deadline(self) -> Option<(Instant, TimedOut)> {
        Some((self.0, TimedOut))
    }
}

impl Until {
    /// A deadline that has passed: an acquire that does not wait (a `try_` form).
    pub(crate) fn now() -> Until {
        Until(Instant::now())
    }
}

/// The outcome of a wait `W`: what was acquired, or `W`'s timeout.
pub(crate) type Waited<T, W> = std::result::Result<T, <W as Wait>::TimedOut>;

/// What a wait that cannot time out acquired.
pub(crate) fn never_timed_out<T>(waited: Waited<T, Forever>) -> T {
    let Ok(value) = waited;
    value
}

/// A kind's `acquire()`: its acquire waiting as long as it takes (`acquire(Forever)`).
pub(crate) async fn forever<T>(acquire: impl Future<Output = Result<Waited<T, Forever>>>) -> Result<T> {
    acquire.await.map(never_timed_out)
}

/// A kind's `acquire_timeout()`: its acquire waiting at most `timeout` from now (`Duration::MAX`:
/// no bound), [`Error::Timeout`] past it.
pub(crate) async fn within<T, F>(timeout: Duration, acquire: impl FnOnce(Until) -> F) -> Result<T>
where
    F: Future<Output = Result<Waited<T, Until>>>,
{
    acquire(Until(deadline::after(timeout))).await?.map_err(|TimedOut| Error::timeout(timeout, TimeoutStep::Waiting))
}

/// A kind's `try_acquire()`: its acquire that does not wait (`None`: held elsewhere).
pub(crate) async fn now<T>(acquire: impl Future<Output = Result<Waited<T, Until>>>) -> Result<Option<T>> {
    Ok(acquire.await?.ok())
}

// ---------------------------------------------------------------------------------------
// One acquire

/// How a contention ended, when not with an error.
pub(crate) enum Ended<W: Wait> {
    /// We hold (boxed: an acquire's future carries the outcome's size).
    Held(Box<Acquired>),
    /// The wait's deadline passed; our node is deleted.
    TimedOut(W::TimedOut),
    /// The driver gave up our place ([`Proceed::Yield`]); our node is deleted.
    Yielded,
}

impl<W: Wait> Ended<W> {
    /// The outcome of a driver that never yields: held, or timed out.
    pub(crate) fn waited(self) -> Result<Waited<Acquired, W>> {
        match self {
            Ended::Held(acquired) => Ok(Ok(*acquired)),
            Ended::TimedOut(timed_out) => Ok(Err(timed_out)),
            Ended::Yielded => Err(Error::InvalidState("a driver that yields must be asked whether it did")),
        }
    }
}

/// Contends until we hold, `wait`'s deadline passes (our node deleted), the driver yields
/// (our node deleted), or an error. Cancel safe: dropping the future at any await point leaves
/// no node behind ([`Pending`]).
///
/// Under the wait's deadline, where it has one: every request of the contention is bounded by
/// it, and the whole by it and the cleanup grace (past that the contention is dropped: its
/// node goes in the background). A `try_` (a deadline that has passed already) is bounded by
/// one operation's time instead. A wait without a deadline of its own ends by the caller's
/// [`with_deadline`](crate::with_deadline) scope's, if any, as a timed wait of the time left:
/// our node withdrawn, [`Error::Timeout`] in [`TimeoutStep::Waiting`].
///
/// Observed by an [`Observed`] guard: an `acquire` span (debug) with the path, the kind, and
/// once it ends the outcome, the wait and (acquired) the fencing token and session; the
/// waiters gauge and the wait histogram (a dropped future counts as `cancelled`).
pub(crate) async fn contend<W: Wait>(fw: &Framework, req: &Request<'_>, wait: W) -> Result<Ended<W>> {
    use tracing::Instrument;
    let observed = Observed::start(fw, req);
    // a wait without a deadline ends by the caller's scope's (a timed wait of the time left)
    let scope = wait.instant().is_none().then(deadline::current_deadline).flatten();
    let body = async {
        let locks = SessionLocks::of(fw);
        // admitted first (the mutex: a place in the local queue), held until the acquire ends
        let admitting = req.driver.admit(&locks, req.dir);
        let mut admitted = match (wait.deadline(), scope) {
            (None, None) => admitting.await,
            (Some((at, timed_out)), _) => match tokio::time::timeout_at(at, admitting).await {
                Ok(admitted) => admitted,
                Err(_) => return Ok(Ended::TimedOut(timed_out)),
            },
            (None, Some(scope)) => match tokio::time::timeout_at(scope.instant(), admitting).await {
                Ok(admitted) => admitted,
                Err(_) => return Err(Error::timeout(scope.timeout(), TimeoutStep::Waiting)),
            },
        };
        let order = admitted.take_create_order();
        // boxed: a task waiting to be admitted holds only the small future above, not the
        // contention's (kilobytes)
        Box::pin(Contention::new(fw, req, wait, scope, &locks).run(order)).await
    };
    let bounded = deadline::bounded_wait(wait.instant(), fw.operation_timeout(), body);
    let ended = bounded.instrument(observed.span.clone()).await;
    observed.finish(&ended);
    ended
}

/// The observation of one acquire: its span and its metrics, recorded once it ends (a guard
/// dropped before, with its future, counts the acquire as cancelled).
struct Observed {
    acquiring: observe::Acquiring,
    span: tracing::Span,
    started: Instant,
}

impl Observed {
    fn start(fw: &Framework, req: &Request<'_>) -> Self {
        use tracing::field::Empty;
        let (started, kind) = (Instant::now(), req.driver.spec().kind);
        let acquiring = observe::Acquiring::start(kind, fw.path_label(req.dir), started);
        let span = tracing::debug_span!(
            "acquire",
            path = req.dir,
            kind = kind.as_str(),
            outcome = Empty,
            wait_ms = Empty,
            token = Empty,
            session = Empty,
        );
        Observed { acquiring, span, started }
    }

    fn finish<W: Wait>(self, ended: &Result<Ended<W>>) {
        let Observed { acquiring, span, started } = self;
        let outcome = match ended {
            Ok(Ended::Held(_)) => observe::Outcome::Acquired,
            Ok(Ended::TimedOut(_)) => observe::Outcome::TimedOut,
            Ok(Ended::Yielded) => {
                // nothing recorded as a wait: the caller's next acquire records its own
                span.record("outcome", "yielded");
                return acquiring.withdraw();
            }
            Err(_) => observe::Outcome::Failed,
        };
        // (nothing is formatted when no subscriber wants the span)
        if !span.is_disabled() {
            if let Ok(Ended::Held(acquired)) = ended {
                span.record("token", acquired.stat.czxid);
                span.record("session", observe::session_hex(acquired.status.session_id));
            }
            span.record("outcome", outcome.as_str());
            span.record("wait_ms", started.elapsed().as_millis() as u64);
            if let Err(error) = ended {
                span.in_scope(|| tracing::debug!(%error, "acquire failed"));
            }
        }
        acquiring.finish(outcome);
    }
}

/// One acquire in ZooKeeper's queue, across the nodes it creates (one, unless ours vanishes
/// while it waits).
struct Contention<'a, 'r, W> {
    fw: &'a Framework,
    req: &'a Request<'r>,
    driver: &'r dyn Driver,
    wait: W,
    locks: &'a Arc<SessionLocks>,
    /// Deletes our node if the acquire is abandoned.
    pending: Pending<'a>,
    started: Instant,
    /// How often our node was created again.
    recreations: u32,
    /// Whether we waited for anyone.
    waited: bool,
    /// When our node, a server-TTL node, is to be touched next (kept across waits: a waiter
    /// woken more often than that must still touch it).
    next_touch: Option<Instant>,
    /// Whether the driver's [`before_waiting`](Driver::before_waiting) ran for our node.
    asked: bool,
    /// The caller's scope's deadline, for a wait without one of its own.
    scope: Option<crate::framework::Deadline>,
    /// The watch on our own node, set with a waiter's first watches (in their round trip): the
    /// hold it becomes starts watched, with no request of its own (see `held.rs`).
    own: Option<NodeWatch>,
}

/// Our node in the queue.
struct Queued {
    node: CreatedNode,
    /// Its name, as listings show it.
    name: String,
    /// The session that owns it: its ephemeral owner, or for a server-TTL node (which has
    /// none) the session that created it.
    owner: i64,
}

/// Watches of ours that have not fired, by the path they watch: a decision after a listing
/// waits on them again instead of sending the same watch once more (a waiter behind the node
/// ahead keeps its predecessor's watch when that node goes).
type Kept = Vec<(String, PendingWatch)>;

/// How a wait in the queue ended.
enum Woken<W: Wait> {
    /// Every node before ours is gone, and we know that we hold, so (the status then).
    Head(SessionStatus, Holding),
    /// The deadline passed, or the driver yields: our node is deleted.
    Ended(Ended<W>),
    /// The caller's scope ended a wait without a deadline: our node is deleted.
    Failed(Error),
    /// Decide again: from `listing` when we have one, else from a new listing; with the
    /// watches that have not fired.
    Again { kept: Kept, listing: Option<Listed> },
}

/// What a waiter waits for, once a decision said to wait.
struct Waiting {
    /// The watched nodes first, then the node ahead (or the driver's own watch).
    watchers: WatchSet,
    /// The path each watcher watches, by index (empty for the driver's own watch).
    paths: Vec<String>,
    /// How many of the watchers, from the first, watch nodes before ours.
    live: usize,
    /// Those nodes were everything before ours in our listing: all of them gone, we hold so.
    then: Option<Holding>,
    /// The one watched node, followed for its local holder's mark (`session.rs`).
    after_holder: Option<Mark>,
    /// When to decide again though nothing changed (a permit expires then).
    wake_at: Option<Instant>,
}

impl Waiting {
    /// How we hold once every watched node is deleted (`None`: we do not know that we do):
    /// known from our listing, or from the mark of the watched node's local holder (then we
    /// hold as it held, alone).
    fn handed_over(&self) -> Option<Holding> {
        handed_over(self.then, self.after_holder.as_ref())
    }
}

/// How we hold once every watched node is deleted: as `then` says (our listing showed them to
/// be everything before us), or alone when the watched node's local holder marked it.
fn handed_over(then: Option<Holding>, after_holder: Option<&Mark>) -> Option<Holding> {
    then.or_else(|| after_holder.filter(|m| m.was_held()).map(|_| Holding::Alone))
}

/// What comes after the watches are set.
enum Next {
    /// Wait for a change.
    Wait(Waiting),
    /// Everything before us is gone already, and we know that we hold, so.
    HandedOver(Holding),
    /// Decide again, from this listing when given.
    Again(Option<Listed>),
}

impl<'a, 'r, W: Wait> Contention<'a, 'r, W> {
    fn new(
        fw: &'a Framework,
        req: &'a Request<'r>,
        wait: W,
        scope: Option<crate::framework::Deadline>,
        locks: &'a Arc<SessionLocks>,
    ) -> Self {
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
            asked: false,
            scope,
            own: None,
        }
    }

    /// Creates our node, then queues with it until we hold; creates it again when it vanishes
    /// while we wait (and the driver and the retry policy allow).
    ///
    /// `order`: the local queue's create order (see `session.rs`), given up once our first
    /// node is created.
    async fn run(mut self, mut order: Option<super::session::CreateOrder>) -> Result<Ended<W>> {
        let spec = self.driver.spec();
        if spec.ttl.is_some() && !self.fw.capabilities().await?.ttl_nodes {
            return Err(crate::framework::TTL_UNSUPPORTED);
        }
        let name = ProtectedName::new(self.req.dir, spec.name);
        // our node's data as a compressing framework stores it (Curator 5.8's
        // `enableCompression()` compresses every lock node's data too)
        let data = self.fw.encode(&name.path(), self.req.data)?;
        // known as local from before its create until it holds; its mark takes over then
        let _in_flight: InFlight = self.locks.hand_off.acquiring(name.prefix());
        loop {
            let (node, owner, listing) = self.create(&name, &data).await?;
            // given up once our node exists: the next local acquire may create
            drop(order.take());
            // a node created again sorts after whoever queued meanwhile: ask the driver again
            self.asked = false;
            self.own = None;
            self.next_touch = spec.ttl.map(|ttl| deadline::after(ttl / 3));
            let ours = Queued { name: paths::node_name(&node.path).to_string(), owner, node };
            if let Some(outcome) = self.queue(ours, listing).await? {
                return Ok(outcome);
            }
            // our node vanished while we waited (and the retry policy allows): create it again
        }
    }

    /// Creates our node through the framework's one protected create, the driver's listing
    /// sent right behind it (one round trip): the node, its owner, and that listing (`None`
    /// when the create was retried and found our node, or the listing failed).
    async fn create(&mut self, name: &ProtectedName, data: &[u8]) -> Result<(CreatedNode, i64, Option<Listed>)> {
        let spec = self.driver.spec();
        let mode = if spec.ttl.is_some() { CreateMode::PersistentSequential } else { CreateMode::EphemeralSequential };
        let (driver, locks, dir) = (self.driver, &**self.locks, self.req.dir);
        self.pending.arm(name);
        let session = self.fw.status().session_id;
        let (node, listed) =
            self.fw
                .create_protected_then(name, data, mode, spec.ttl, |conn| async move {
                    driver.list(&conn, locks, dir).await
                })
                .await?;
        let owner = if spec.ttl.is_some() { session } else { node.stat.ephemeral_owner };
        self.pending.created(node.path.clone(), owner);
        Ok((node, owner, listed))
    }

    /// Waits in the queue with our node until we hold (`Some`), or it vanishes and may be
    /// created again (`None`). `listing`: one sent after our create, if we have it.
    async fn queue(&mut self, ours: Queued, mut listing: Option<Listed>) -> Result<Option<Ended<W>>> {
        let mut kept = Kept::new();
        loop {
            let listed = match listing.take() {
                Some(listed) => listed,
                // lost sync with the list: list again
                None => self.list().await?,
            };
            let (decision, status, wake_at) = self.decide(&ours, &listed.listing);
            listing = match decision {
                Decision::Hold(holding) => {
                    let acquired = self.take(ours.node, status, holding, Some(listed));
                    return Ok(Some(Ended::Held(Box::new(acquired))));
                }
                Decision::Missing => {
                    self.vanished(&ours, status)?;
                    return Ok(None);
                }
                decision => {
                    // the listing is not kept while waiting: with N waiters that would be O(N²)
                    // memory (a listing shared with other local waiters goes with the last one)
                    let queue = listed.listing.queue(self.driver.spec().names);
                    drop(listed);
                    let still = std::mem::take(&mut kept);
                    match self.wait_in_queue(&ours, decision, queue, wake_at, still).await? {
                        Woken::Head(status, holding) => {
                            return Ok(Some(Ended::Held(Box::new(self.take(ours.node, status, holding, None)))))
                        }
                        Woken::Ended(ended) => return Ok(Some(ended)),
                        Woken::Failed(e) => return Err(e),
                        Woken::Again { kept: still, listing: again } => {
                            kept = still;
                            again
                        }
                    }
                }
            };
        }
    }

    /// A listing of the request's directory sent after this call, as the driver lists.
    async fn list(&self) -> Result<Listed> {
        let (driver, locks, dir) = (self.driver, &**self.locks, self.req.dir);
        self.fw.request("list", dir, |conn| async move { driver.list(&conn, locks, dir).await }).await
    }

    /// The driver's decision on `listing` (and the status it was made with, and when a
    /// watching waiter must decide again though nothing it watches changed).
    fn decide(&self, ours: &Queued, listing: &Listing) -> (Decision, SessionStatus, Option<Instant>) {
        let queue = listing.queue(self.driver.spec().names);
        // foreign children hold nothing: warned about once each
        self.locks.foreign.warn(self.req.dir, &queue.foreign);
        let status = self.fw.status();
        let decision = match status.session_id == ours.owner {
            true => self.driver.decide(&queue, &ours.name),
            false => Decision::Missing,
        };
        let wake_at = match &decision {
            Decision::Watch(watch) => watch.wake_at.map(instant_of),
            _ => None,
        };
        (decision, status, wake_at)
    }

    /// Our node is not in the listing: forgets it, and says whether to create it again (the
    /// driver and the retry policy allow) or [`Error::LockLost`].
    fn vanished(&mut self, ours: &Queued, status: SessionStatus) -> Result<()> {
        let session_changed = status.session_id != ours.owner;
        if session_changed {
            // a node of an older session may linger until the server expires it
            if let Some(path) = self.pending.take_node() {
                self.fw.delete_in_background(path, None);
            }
        }
        self.pending.forget_node();
        let reason = if session_changed { LossReason::SessionLost } else { LossReason::NodeDeleted };
        let lost = || Error::LockLost { path: ours.node.path.clone(), reason };
        self.driver.vanished(lost())?;
        let gone = crate::ZooKeeperError::NoNode;
        let attempt = RetryAttempt::new(self.recreations, self.started.elapsed(), &gone);
        if self.fw.retry_policy().allow_retry(&attempt).is_none() {
            return Err(lost());
        }
        self.recreations += 1;
        tracing::debug!(path = %ours.node.path, "our contender node vanished: creating it again");
        Ok(())
    }

    /// We hold with `node`: it is the guard's now (the acquire no longer deletes it).
    fn take(&mut self, node: CreatedNode, status: SessionStatus, holding: Holding, listed: Option<Listed>) -> Acquired {
        self.pending.forget_node();
        let mark = (holding == Holding::Alone).then(|| self.locks.hand_off.mark(&node.path));
        let own = self.own.take();
        let (waited, spec) = (self.waited, self.driver.spec());
        let (ttl, kind) = (spec.ttl, spec.kind);
        Acquired { path: node.path, stat: node.stat, status, mark, listed, waited, ttl, kind, own }
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

    // -----------------------------------------------------------------------------------
    // Waiting

    /// Waits as `decision` (made on `queue`) says: the driver is asked first
    /// ([`Driver::before_waiting`]), then the watches are set — `queue` is dropped then — then
    /// a change is waited for.
    async fn wait_in_queue(
        &mut self,
        ours: &Queued,
        decision: Decision,
        queue: Arc<Queue>,
        wake_at: Option<Instant>,
        kept: Kept,
    ) -> Result<Woken<W>> {
        // (a wait whose deadline has passed, a `try_`, ends without asking)
        let in_time = self.wait.instant().is_none_or(|at| at > Instant::now());
        if in_time
            && !std::mem::replace(&mut self.asked, true)
            && self.driver.before_waiting(self.fw).await? == Proceed::Yield
        {
            self.withdraw(ours).await;
            return Ok(Woken::Ended(Ended::Yielded));
        }
        self.waited = true;
        let next = match decision {
            Decision::Watch(watch) => {
                drop(queue);
                self.watch(ours, watch, kept).await?
            }
            _ => {
                let waiter = Waiter { fw: self.fw, dir: self.req.dir, queue: &queue, ours: &ours.name };
                let own = self.driver.wait_own(waiter).await?;
                drop(queue);
                match own {
                    OwnWait::Again(listing) => Next::Again(listing),
                    OwnWait::Watch { watch, wake_at } => Next::Wait(Waiting {
                        watchers: WatchSet::new([watch]),
                        paths: Vec::new(),
                        live: 1,
                        then: None,
                        after_holder: None,
                        wake_at: wake_at.map(instant_of),
                    }),
                }
            }
        };
        Ok(match next {
            Next::Wait(mut waiting) => {
                waiting.wake_at = waiting.wake_at.or(wake_at);
                self.wait_for_change(ours, waiting).await
            }
            Next::HandedOver(holding) => Woken::Head(self.fw.status(), holding),
            Next::Again(listing) => Woken::Again { kept: Kept::new(), listing },
        })
    }

    /// Sets the watches of `watch` — the watched nodes (children of the request's directory)
    /// and the node ahead, in one round trip; a node we still watch from before (`kept`) is
    /// not asked for again. Our own node's watch, the hold's when we hold, goes in the same
    /// round trip the first time.
    async fn watch(&mut self, ours: &Queued, watch: Watch, mut kept: Kept) -> Result<Next> {
        let dir = self.req.dir;
        let watched: Vec<String> = watch.nodes.iter().map(|n| paths::join(dir, n)).collect();
        // followed before the watch is set: a local holder marks it before it deletes it
        let followed: Option<Followed> = match &watched[..] {
            [only] if watch.after_holder => Some(self.locks.hand_off.follow(only)),
            _ => None,
        };
        // behind a local node no early listing is needed: it marks itself as it holds
        let local = followed.as_ref().is_some_and(|f| f.local);
        let ahead = watch.ahead.filter(|_| !local).map(|a| paths::join(dir, &a));
        let has_ahead = ahead.is_some();
        // the watched nodes, then the node ahead: a kept watch each, or asked for in one round trip
        let mut targets = watched;
        targets.extend(ahead);
        let mut found: Vec<Option<PendingWatch>> = targets
            .iter()
            .map(|path| kept.iter().position(|(p, _)| p == path).map(|i| kept.swap_remove(i).1))
            .collect();
        let mut ask: Vec<&str> =
            targets.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|(p, _)| p.as_str()).collect();
        if !ask.is_empty() {
            let own = self.own.is_none();
            if own {
                ask.push(&ours.node.path);
            }
            let mut answers = watch_nodes(self.fw, &ask).await?;
            if own {
                // our node gone: the next listing says so
                self.own = answers.pop().flatten().map(|(data, watch)| NodeWatch { data, watch });
            }
            let mut answers = answers.into_iter();
            for slot in found.iter_mut().filter(|f| f.is_none()) {
                *slot = answers.next().flatten().map(|(_, watch)| PendingWatch::from(watch));
            }
        }
        // the node ahead's watch, apart from the live ones (`Some(None)`: it is gone); its path
        // goes last, beside its watch
        let (mut early, mut early_path) = (None, None);
        if has_ahead {
            let watcher = found.pop().flatten();
            early_path = targets.pop().filter(|_| watcher.is_some());
            early = Some(watcher);
        }
        let (mut paths, live): (Vec<String>, Vec<PendingWatch>) =
            targets.into_iter().zip(found).filter_map(|(path, w)| w.map(|w| (path, w))).unzip();
        paths.extend(early_path);
        let after_holder = followed.map(|f| f.mark);
        Ok(match (live.len(), early, handed_over(watch.then, after_holder.as_ref())) {
            (0, _, Some(holding)) => Next::HandedOver(holding),
            // what we watch is gone, or the node ahead: list again now
            (0, _, None) | (_, Some(None), _) => Next::Again(None),
            (live_count, early, _) => Next::Wait(Waiting {
                watchers: WatchSet::from_pending(live.into_iter().chain(early.flatten())),
                paths,
                live: live_count,
                then: watch.then,
                after_holder,
                wake_at: None,
            }),
        })
    }

    /// Waits for what `waiting` watches, the deadline, or the session to change; touches a
    /// server-TTL node every third of its time to live meanwhile, so that the server keeps it.
    async fn wait_for_change(&mut self, ours: &Queued, mut waiting: Waiting) -> Woken<W> {
        let mut remaining = waiting.live;
        loop {
            let scope_at = self.scope.map(|scope| scope.instant());
            let wake_at = [self.wait.instant(), scope_at, waiting.wake_at, self.next_touch].into_iter().flatten().min();
            match waiting.watchers.wait(self.fw, wake_at, ours.owner).await {
                // a watched node is gone; when they all are and they were everything before
                // us (known from our listing, or the one marked by its local holder), we are
                // the head now
                (Wake::Event(WatchEvent::Deleted { .. }), Some(i)) if i < waiting.live => {
                    if let Some(holding) = waiting.handed_over() {
                        remaining -= 1;
                        if remaining > 0 {
                            continue;
                        }
                        let status = self.fw.status();
                        if status.session_id == ours.owner {
                            return Woken::Head(status, holding);
                        }
                    }
                }
                // (a wait without a deadline is never woken by one: it lists again)
                (Wake::Deadline, _) => {
                    let touch_due = self.next_touch.is_some_and(|at| at <= Instant::now());
                    if let (true, Some(ttl)) = (touch_due, self.driver.spec().ttl) {
                        if let Err(e) = self.fw.touch(&ours.node.path).await {
                            tracing::debug!(path = %ours.node.path, error = %e, "touching our TTL node failed");
                        }
                        self.next_touch = Some(deadline::after(ttl / 3));
                    }
                    if let Some((_, timed_out)) = self.wait.deadline().filter(|(at, _)| *at <= Instant::now()) {
                        self.withdraw(ours).await;
                        return Woken::Ended(Ended::TimedOut(timed_out));
                    }
                    if let Some(scope) = self.scope.filter(|scope| scope.instant() <= Instant::now()) {
                        self.withdraw(ours).await;
                        return Woken::Failed(Error::timeout(scope.timeout(), TimeoutStep::Waiting));
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
            let kept = still.into_iter().filter_map(|(i, w)| paths.get(i).map(|p| (p.clone(), w))).collect();
            return Woken::Again { kept, listing: None };
        }
    }
}

/// Data watches on `paths` (Curator uses `getData` so that no watch is left on a missing
/// node), all in one round trip: each node's data and watch (`None`: the node is gone).
async fn watch_nodes(fw: &Framework, paths: &[&str]) -> Result<Vec<Option<(Vec<u8>, OneShotWatch)>>> {
    fw.request("watch", paths.first().copied().unwrap_or(""), |conn| async move {
        // every request goes out before any answer is awaited
        let watched: Vec<_> = paths.iter().map(|p| conn.watch_data(p)).collect();
        let mut out = Vec::with_capacity(watched.len());
        for w in watched {
            out.push(w.await.if_exists()?.map(|(data, _, w)| (data, w)));
        }
        Ok(out)
    })
    .await
}

/// The instant of the wall-clock time `at` (now, when it has passed).
fn instant_of(at: std::time::SystemTime) -> Instant {
    deadline::after(at.duration_since(std::time::SystemTime::now()).unwrap_or_default())
}

// ---------------------------------------------------------------------------------------
// Cancellation

/// Deletes our node if the acquire is abandoned (cancelled, timed out, failed) before it is
/// handed to a guard: by path when we know it, else by the protection prefix.
struct Pending<'a> {
    fw: &'a Framework,
    name: Option<ProtectedName>,
    node: Option<(String, i64)>,
    armed: bool,
}

impl<'a> Pending<'a> {
    fn new(fw: &'a Framework) -> Self {
        Pending { fw, name: None, node: None, armed: false }
    }

    /// A create of `name` is about to be sent: from here on, a drop deletes what it made.
    fn arm(&mut self, name: &ProtectedName) {
        if self.name.is_none() {
            self.name = Some(name.clone());
        }
        self.armed = true;
    }

    /// The create made `path`, owned by the session `owner`.
    fn created(&mut self, path: String, owner: i64) {
        self.node = Some((path, owner));
    }

    /// Our node is the caller's now (a guard's, or gone): a drop deletes nothing.
    fn forget_node(&mut self) {
        self.node = None;
        self.armed = false;
    }

    /// Our node's path, taken: the caller deletes it.
    fn take_node(&mut self) -> Option<String> {
        self.node.take().map(|(path, _)| path)
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match (self.node.take(), self.name.take()) {
            (Some((path, owner)), _) => self.fw.delete_in_background(path, Some(owner)),
            (None, Some(name)) => self.fw.delete_protected_in_background(name),
            (None, None) => {}
        }
    }
}

/// Creates one protected node (any mode; its data as the framework stores it) cancel-safely:
/// if the future is dropped, whatever was created is deleted in the background. (A downgrade's
/// read node: held without contending.)
pub(crate) async fn create_owned(
    fw: &Framework,
    dir: &str,
    name: &str,
    data: &[u8],
    mode: CreateMode,
) -> Result<CreatedNode> {
    let protected = ProtectedName::new(dir, name);
    let data = fw.encode(&protected.path(), data)?;
    let mut pending = Pending::new(fw);
    pending.arm(&protected);
    let node = fw.create_protected_name(&protected, &data, mode, None).await?;
    pending.forget_node();
    Ok(node)
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
