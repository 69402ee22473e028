//! The ONE lock engine: create our node (protected), list, sort, ask the driver, watch, wait,
//! repeat. Every lock, the semaphore, the leader latch and the atomic values' turns contend
//! through [`contend`]; what differs between them is their
//! [`Driver`](super::driver::Driver).
//!
//! Performance points:
//! * The first create and the first listing go out together (one round trip): zookeeper-client
//!   orders requests when the future is created, so the listing sees our node (`create.rs`).
//! * A release wakes the waiter right behind it (and at most one more): no herd.
//! * Close to the head (fewer than `HAND_OFF_DEPTH` places), a sole-holder waiter watches every
//!   node before it; when they are all deleted it holds — no listing between a release and the
//!   next hold. Further back it watches its predecessor and the node `AHEAD` places ahead,
//!   and lists again when that one goes, while the nodes before it still hold: off the
//!   hand-off's path (`rules.rs`). Not behind a writer of the read-write lock: it may have
//!   downgraded, leaving a read node in its place.
//! * A watch that has not fired stays set across a listing: the next decision waits on it
//!   again instead of sending the same request (`watch.rs`); every request costs the ensemble
//!   CPU.
//! * Behind a local holder, the hand-off needs no listing at all (`handoff.rs`).
//! * The mutex's acquires of one framework enter ZooKeeper's queue a few at a time
//!   (`local_queue.rs`); the rest wait in a local FIFO queue, as a small future each: the
//!   contention (kilobytes of state) is boxed, allocated only once in ZooKeeper's queue.

use tokio::time::Instant;

use super::acquire::Wait;
use super::contention::{instant_of, Acquired, Contention, Ended, Queued};
use super::create::create_node;
use super::driver::{Request, Vanished};
use super::listings::{relist, Listed, Prefetched};
use super::rules::Decision;
use super::session::SessionLocks;
use super::watch::{Kept, Woken};
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::{paths, CreatedNode, Framework, IfExists, LossReason, RetryAttempt, SessionStatus};
use crate::observe;

/// Contends until we hold, `wait`'s deadline passes (our node deleted), the driver yields
/// (our node deleted), or an error. Cancel safe: dropping the future at any await point
/// leaves no node behind (`create.rs`'s `Pending`).
///
/// Under the wait's deadline, where it has one: every request of the contention is bounded by
/// it, and the whole by it and the cleanup grace (past that the contention is dropped: its
/// node goes in the background). A `try_` (a deadline that has passed already) is bounded by
/// one operation's time instead.
///
/// Observed by an [`Observed`] guard: an `acquire` span (debug) with the path, the kind, and
/// once it ends the outcome, the wait and (acquired) the fencing token and session; the
/// waiters gauge and the wait histogram (a dropped future counts as `cancelled`).
pub(crate) async fn contend<W: Wait>(fw: &Framework, req: &Request<'_>, wait: W) -> Result<Ended<W>> {
    use tracing::Instrument;
    let observed = Observed::start(fw, req);
    let body = async {
        let locks = SessionLocks::of(fw);
        // a place in the local queue first (where the driver queues locally), left when the
        // acquire ends, whatever the outcome: the next local acquire goes in then
        let mut place = None;
        if req.driver.queues_locally() {
            let entering = locks.local_queues.enter(req.dir);
            match wait.deadline() {
                None => place = Some(entering.await),
                Some((at, timed_out)) => match tokio::time::timeout_at(at, entering).await {
                    Ok(entered) => place = Some(entered),
                    Err(_) => return Ok(Ended::TimedOut(timed_out)),
                },
            }
        }
        let order = place.as_mut().and_then(|p| p.take_create_order());
        // boxed: a task waiting in the local queue holds only the small future above, not the
        // contention's (kilobytes)
        let ended = Box::pin(Contention::new(fw, req, wait, &locks).run(order)).await;
        drop(place);
        ended
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
        let (started, kind) = (Instant::now(), req.driver.kind());
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

impl<W: Wait> Contention<'_, '_, W> {
    /// Creates our node, then queues with it until we hold; creates it again when it vanishes
    /// while we wait (and the driver and the retry policy allow).
    ///
    /// `order`: the local queue's create order (see `local_queue.rs`), given up once our
    /// first node is created.
    async fn run(mut self, mut order: Option<super::local_queue::CreateOrder>) -> Result<Ended<W>> {
        if self.driver.server_ttl().is_some() && !self.fw.capabilities().await?.ttl_nodes {
            return Err(crate::framework::TTL_UNSUPPORTED);
        }
        let name = crate::framework::ProtectedName::new(self.req.dir, self.driver.node_name());
        // our node's data as a compressing framework stores it (Curator 5.8's
        // `enableCompression()` compresses every lock node's data too)
        let data = self.fw.encode(&name.path(), self.req.data)?;
        // known as local from before its create until it holds; its mark takes over then (`take`)
        let _contender = self.locks.hand_off.contender(name.prefix());
        let mut pipelined = true;
        loop {
            let created = create_node(self.fw, self.req, &data, &name, &mut self.pending, pipelined, &mut order).await;
            (pipelined, order) = (false, None);
            let (node, owner, listing) = created?;
            // a node created again sorts after whoever queued meanwhile: look where we yield again
            self.yield_checked = self.driver.yields_to().is_none();
            self.next_touch = self.driver.server_ttl().map(|ttl| deadline::after(ttl / 3));
            if let Some(outcome) = self.queue(node, owner, listing).await? {
                return Ok(outcome);
            }
            // our node vanished while we waited (and the retry policy allows): create it again
        }
    }

    /// Waits in the queue with `node` until we hold (`Some`), or our node vanishes and may be
    /// created again (`None`). `listing`: one sent after our create, if we have it.
    async fn queue(&mut self, node: CreatedNode, owner: i64, mut listing: Option<Listed>) -> Result<Option<Ended<W>>> {
        let ours = Queued { name: paths::node_name(&node.path).to_string(), owner, node };
        let mut kept = Kept::new();
        loop {
            let listed = match listing.take() {
                Some(listed) => listed,
                // lost sync with the list: list again
                None => relist(self.fw, self.req, &self.locks.listings).await?,
            };
            let deciding = self.driver.prefetch().map(|_| listed.0.clone());
            let (decision, status, prefetched, wake_at) = self.decide(&ours, listed);
            listing = match decision {
                Decision::Acquired => {
                    let mut acquired = self.take(ours.node, status, prefetched);
                    acquired.listing = deciding;
                    return Ok(Some(Ended::Held(acquired)));
                }
                Decision::Missing => {
                    self.vanished(&ours, status)?;
                    return Ok(None);
                }
                Decision::Reclaim(nodes) => {
                    reclaim(self.fw, self.req.dir, &nodes).await?;
                    None
                }
                Decision::Watch { .. } | Decision::WatchChildren => {
                    match self.wait_in_queue(&ours, decision, wake_at, std::mem::take(&mut kept)).await? {
                        Woken::Head(status) => return Ok(Some(Ended::Held(self.take(ours.node, status, None)))),
                        Woken::Ended(ended) => return Ok(Some(ended)),
                        Woken::Again { still, listing } => {
                            kept = still;
                            listing
                        }
                    }
                }
            };
        }
    }

    /// The driver's decision on `listed` (and the status it was made with, the prefetch read,
    /// and when a watching waiter must decide again though nothing it watches changed: the
    /// rules' [`wake_at`](super::rules::Rules::wake_at)). The listing is not kept while
    /// waiting: with N waiters that would be O(N²) memory (a listing shared with other local
    /// waiters goes when the last one is done).
    fn decide(
        &self,
        ours: &Queued,
        (listing, prefetched): Listed,
    ) -> (Decision, SessionStatus, Option<Prefetched>, Option<Instant>) {
        let sorted = self.contenders(&listing);
        drop(listing);
        let status = self.fw.status();
        let rules = self.driver.rules();
        let decision =
            if status.session_id != ours.owner { Decision::Missing } else { rules.decide(&sorted, &ours.name) };
        let wake_at = match decision {
            Decision::Watch { .. } => rules.wake_at(&sorted, &ours.name).map(instant_of),
            _ => None,
        };
        (decision, status, prefetched, wake_at)
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
        let lost = crate::ZooKeeperError::NoNode;
        let retry = self.driver.on_vanished() == Vanished::CreateAgain
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

    /// We hold with `node`: it is the guard's now (the acquire no longer deletes it).
    fn take(&mut self, node: CreatedNode, status: SessionStatus, prefetched: Option<Prefetched>) -> Acquired {
        self.pending.forget_node();
        let mark = self.locks.hand_off.mark_if_sole(self.driver.rules(), &node.path);
        let (waited, ttl, kind) = (self.waited, self.driver.server_ttl(), self.driver.kind());
        Acquired { path: node.path, stat: node.stat, status, mark, prefetched, waited, ttl, listing: None, kind }
    }
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

#[cfg(test)]
#[path = "contend_tests.rs"]
mod tests;
