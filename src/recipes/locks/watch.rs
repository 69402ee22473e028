//! A waiter's part of the engine: once the rules say to wait, set the watches (keeping those
//! that have not fired), then wait for a change, the deadline, or the session to change.
//!
//! The deadline of a timed acquire is met here: a wait whose deadline has passed (a `try_`,
//! or a timed acquire whose time ran out) withdraws our node and ends
//! [`TimedOut`](super::contention::Ended::TimedOut). (The local queue's wait, before our node
//! exists, is bounded in `contend.rs`.)

use std::sync::Arc;

use tokio::time::Instant;
use zookeeper_client::{EventType, OneshotWatcher};

use super::acquire::Wait;
use super::contention::{instant_of, Contention, Ended, Queued};
use super::handoff::Mark;
use super::listings::{Listed, Listing};
use super::order::is_contender;
use super::rules::Decision;
use crate::error::Result;
use crate::framework::deadline;
use crate::framework::wait::{PendingWatch, Wake, WatchSet};
use crate::framework::{paths, Framework, IfExists, SessionStatus};

/// Watches of ours that have not fired, by the path they watch: a decision after a listing
/// waits on them again instead of sending the same watch once more (a waiter behind the node
/// ahead keeps its predecessor's watch when that node goes).
pub(super) type Kept = Vec<(String, PendingWatch)>;

/// How a wait in the queue ended.
pub(super) enum Woken<W: Wait> {
    /// Every node before ours is gone, and we know that we hold (the status then).
    Head(SessionStatus),
    /// The deadline passed, or we yield: our node is deleted.
    Ended(Ended<W>),
    /// Decide again: from `listing` when we have one, else from a new listing; with the
    /// watches that have not fired.
    Again { still: Kept, listing: Option<Listed> },
}

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
    /// The one watched node, followed for its local holder's mark (`handoff.rs`).
    after_holder: Option<Mark>,
    /// When to decide again though nothing changed (a permit expires then).
    wake_at: Option<Instant>,
}

impl Waiting {
    /// Whether, once every watched node is deleted, we are the head: known from our listing,
    /// or from the mark of the watched node's local holder.
    fn handed_over(&self) -> bool {
        self.then_acquired || self.after_holder.as_ref().is_some_and(Mark::was_held)
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

impl<W: Wait> Contention<'_, '_, W> {
    /// Waits as `decision` (a watch, or the children watch) says: yields first where the driver
    /// does and someone queues there, then watches, then waits for a change.
    pub(super) async fn wait_in_queue(
        &mut self,
        ours: &Queued,
        decision: Decision,
        wake_at: Option<Instant>,
        kept: Kept,
    ) -> Result<Woken<W>> {
        // (a wait whose deadline has passed, a `try_`, ends without asking)
        let in_time = self.wait.instant().is_none_or(|at| at > Instant::now());
        if in_time && !std::mem::replace(&mut self.yield_checked, true) && self.someone_queues_first().await? {
            self.withdraw(ours).await;
            return Ok(Woken::Ended(Ended::Yielded));
        }
        let next = match decision {
            Decision::Watch { nodes, then_acquired, ahead } => self.watch(&nodes, then_acquired, ahead, kept).await?,
            _ => self.watch_children(ours).await?,
        };
        Ok(match next {
            Next::Wait(mut waiting) => {
                waiting.wake_at = waiting.wake_at.or(wake_at);
                self.wait_for_change(ours, waiting).await
            }
            Next::HandedOver => Woken::Head(self.fw.status()),
            Next::Decide(listed) => Woken::Again { still: Kept::new(), listing: Some(listed) },
            Next::Relist => Woken::Again { still: Kept::new(), listing: None },
        })
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
        let (fw, dir) = (self.fw, self.req.dir);
        let watched: Vec<String> = nodes.iter().map(|n| paths::join(dir, n)).collect();
        // followed before the watch is set: a local holder marks it before it deletes it
        let followed = match watched.first() {
            Some(first) => self.locks.hand_off.follow(self.driver.rules(), nodes, first),
            None => super::handoff::Followed { mark: None, local: false },
        };
        // behind a local node no early listing is needed: it marks itself as it holds
        let ahead = ahead.filter(|_| !followed.local).map(|a| paths::join(dir, &a));
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
        let after_holder = followed.mark;
        let handed_over = then_acquired || after_holder.as_ref().is_some_and(Mark::was_held);
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
        let rules = self.driver.rules();
        if rules.decide(&check, &ours.name) != Decision::WatchChildren {
            return Ok(Next::Decide((list, None)));
        }
        let wake_at = rules.wake_at(&check, &ours.name).map(instant_of);
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
    async fn wait_for_change(&mut self, ours: &Queued, mut waiting: Waiting) -> Woken<W> {
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
                    if let (true, Some(ttl)) = (touch_due, self.driver.server_ttl()) {
                        if let Err(e) = self.fw.touch(&ours.node.path).await {
                            tracing::debug!(path = %ours.node.path, error = %e, "touching our TTL node failed");
                        }
                        self.next_touch = Some(deadline::after(ttl / 3));
                    }
                    if let Some((_, timed_out)) = self.wait.deadline().filter(|(at, _)| *at <= Instant::now()) {
                        self.withdraw(ours).await;
                        return Woken::Ended(Ended::TimedOut(timed_out));
                    }
                    // woken only to touch our node: wait on (the rules' own time not come)
                    if touch_due && waiting.wake_at.is_none_or(|at| at > Instant::now()) {
                        continue;
                    }
                }
                // any other change (the node ahead went: those before us likely hold now)
                _ => {}
            }
            let paths = std::mem::take(&mut waiting.paths);
            let still = waiting.watchers.into_pending();
            let still = still.into_iter().filter_map(|(i, w)| paths.get(i).map(|p| (p.clone(), w))).collect();
            return Woken::Again { still, listing: None };
        }
    }

    /// Whether a contender queues where the driver yields to (a foreign child there is no one).
    async fn someone_queues_first(&self) -> Result<bool> {
        let Some(queue) = self.driver.yields_to() else { return Ok(false) };
        let children = self.fw.children_or_empty(queue.dir).await?;
        Ok(children.iter().any(|c| is_contender(c, queue.names)))
    }
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
