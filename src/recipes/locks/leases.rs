//! The semaphore's leases: the [`Lease`] guard, and the two drivers that take leases through
//! the engine, with everything only the semaphore does — yielding to its internal lock's
//! queue, reclaiming expired permits, waiting on the leases' children.
//!
//! * [`FastLease`]: one lease taken without the internal lock (the semaphore's fast path, see
//!   `InterProcessSemaphoreV2`): it holds by its [`rank`] — fewer than `max_leases` leases
//!   before it, every expirable permit counted before it wherever it sorts (a permit replaces a
//!   holding lease with a later sequence), then the plain leases that sort before it. That
//!   count only falls once we hold (later nodes sort after us; a permit only replaces a lease
//!   that counted already), so with Curator's rule beside it ([`count`], under the lock) no
//!   more than `max_leases` hold: the last holder in this order counts every other holder
//!   before it. A waiter reclaims the expired permits before it, or watches the `max_leases`
//!   leases right before it (at most [`NEAREST_WATCHES`] of them; more leases than that wait on
//!   the children): only the deletion of one of those can make it a holder, in whatever order
//!   the holders let go. At its first wait it yields its place when anyone queues for the
//!   internal lock (a Curator acquirer, or one of ours taking several leases).
//! * [`CountedLease`]: a lease taken under the internal lock, by Curator's rule ([`count`]):
//!   hold when there are at most `max_leases` lease nodes (ours included); otherwise reclaim
//!   the expired permits among them, if any, or wait for the children to change or the earliest
//!   permit to expire. Its node vanishing under the lock ends the acquire: the semaphore
//!   starts over (waiting on without the lock could wait for a waiter that waits for us).

use std::ops::Deref;
use std::sync::Arc;
use std::time::SystemTime;

use super::driver::{Decision, Driver, Holding, Hook, OwnWait, Proceed, Spec, Waiter, Watch};
use super::held::HeldNode;
use super::order::{is_contender, position, Listed, Listing};
use super::permit_name::permit_deadline;
use crate::error::{Error, Result};
use crate::framework::{paths, Framework, IfExists};
use crate::observe::Kind;
use crate::recipes::layout::{LEASE_NAME, LOCK_NAME};

/// One lease of an [`InterProcessSemaphoreV2`](crate::InterProcessSemaphoreV2), or the hold
/// of an [`InterProcessSemaphoreMutex`](crate::InterProcessSemaphoreMutex).
///
/// Derefs to [`HeldNode`] (`path()`, `fencing_token()`, `lost()`...). Owned, `Send`,
/// `'static`. Dropping it returns the lease in the background (guaranteed delete); never
/// blocks, never panics.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessSemaphoreV2;
///
/// let pool = InterProcessSemaphoreV2::new(&fw, "/pools/exports", 2)?;
/// let leases = pool.acquire_many(2).await?;          // both, under one hold of the internal lock
/// for lease in &leases {
///     println!("{} (token {})", lease.path(), lease.fencing_token());
/// }
/// InterProcessSemaphoreV2::return_all(leases).await?;
/// # Ok(()) }
/// ```
#[must_use = "the lease is returned when dropped"]
#[derive(Debug)]
pub struct Lease {
    node: Option<HeldNode>,
}

impl Lease {
    pub(crate) fn new(node: HeldNode) -> Self {
        Self { node: Some(node) }
    }

    /// Returns the lease (deletes its node).
    ///
    /// # Errors
    /// [`Error::LockLost`](crate::Error::LockLost) when the lease had been lost before;
    /// the delete's error otherwise (the delete then continues in the background).
    ///
    /// # Cancel safety
    /// Cancel safe: if cancelled, the delete continues in the background.
    pub async fn release(mut self) -> Result<()> {
        let Some(node) = self.node.as_ref() else { return Ok(()) };
        let result = node.release().await;
        self.node = None;
        result
    }

    /// Gives the node up without deleting it (a transaction deleted it already).
    pub(crate) fn forget(mut self) {
        self.node = None;
    }
}

impl Deref for Lease {
    type Target = HeldNode;

    fn deref(&self) -> &HeldNode {
        self.node.as_ref().expect("a lease holds its node until released or dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            node.release_in_background();
        }
    }
}

/// The most leases a [`FastLease`] waiter watches one by one; a semaphore with more leases
/// watches its children (a change of any lease wakes every such waiter).
pub(crate) const NEAREST_WATCHES: usize = 4;

/// What a lease rule says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rule {
    Holds,
    /// Wait for one of these leases to go.
    Watch(Vec<String>),
    /// Delete these expired permits, then decide again.
    Reclaim(Vec<String>),
    /// Wait for any change of the children (or the earliest permit's deadline).
    WatchChildren,
    Missing,
}

/// The fast path's rule: hold when fewer than `max` leases rank before ours (see the module
/// docs).
pub(crate) fn rank(max: usize, now: SystemTime, queue: &[String], ours: &str) -> Rule {
    let Some(index) = position(queue, ours) else { return Rule::Missing };
    let is_permit = |c: &&String| permit_deadline(c).is_some();
    let permits = others(queue, ours).filter(is_permit);
    let before: Vec<&String> = permits.chain(queue[..index].iter().filter(|c| !is_permit(c))).collect();
    if before.len() < max {
        return Rule::Holds;
    }
    let expired: Vec<String> =
        before.iter().filter(|c| permit_deadline(c).is_some_and(|at| at <= now)).map(|c| (*c).clone()).collect();
    if !expired.is_empty() {
        Rule::Reclaim(expired)
    } else if max > NEAREST_WATCHES {
        Rule::WatchChildren
    } else {
        Rule::Watch(before[before.len() - max..].iter().map(|c| (*c).clone()).collect())
    }
}

/// Curator's rule (`InterProcessSemaphoreV2`, plus expirable permits): hold when there are at
/// most `max` leases, ours included.
pub(crate) fn count(max: usize, now: SystemTime, queue: &[String], ours: &str) -> Rule {
    if position(queue, ours).is_none() {
        Rule::Missing
    } else if queue.len() <= max {
        Rule::Holds
    } else {
        let expired: Vec<String> =
            others(queue, ours).filter(|c| permit_deadline(c).is_some_and(|at| at <= now)).cloned().collect();
        if expired.is_empty() {
            Rule::WatchChildren
        } else {
            Rule::Reclaim(expired)
        }
    }
}

/// The earliest deadline of the expirable permits in the queue, ours left out.
pub(crate) fn earliest_deadline(queue: &[String], ours: &str) -> Option<SystemTime> {
    others(queue, ours).filter_map(|c| permit_deadline(c)).min()
}

fn others<'a>(queue: &'a [String], ours: &'a str) -> impl Iterator<Item = &'a String> {
    queue.iter().filter(move |c| c.as_str() != ours)
}

/// The engine's decision from a lease rule's.
fn decision(rule: Rule, queue: &[String], ours: &str) -> Decision {
    match rule {
        Rule::Holds => Decision::Hold(Holding::Shared),
        Rule::Watch(nodes) => {
            Decision::Watch(Watch { nodes, wake_at: earliest_deadline(queue, ours), ..Watch::default() })
        }
        Rule::Reclaim(_) | Rule::WatchChildren => Decision::Own,
        Rule::Missing => Decision::Missing,
    }
}

/// A lease of the fast path (see the module docs).
#[derive(Debug)]
pub(crate) struct FastLease<'a> {
    pub max: usize,
    /// The internal lock's directory, where any contender means that we yield.
    pub lock_dir: &'a str,
    /// The wall clock that permits' deadlines are compared with (`SystemTime::now`).
    pub now: fn() -> SystemTime,
}

/// A lease under the internal lock (see the module docs).
#[derive(Debug)]
pub(crate) struct CountedLease {
    pub max: usize,
    /// The wall clock that permits' deadlines are compared with (`SystemTime::now`).
    pub now: fn() -> SystemTime,
}

const LEASE_NAMES: &[&str] = &[LEASE_NAME];

/// What a lease is, whichever rule takes it.
const LEASE: Spec<'static> = Spec { kind: Kind::Semaphore, names: LEASE_NAMES, name: LEASE_NAME, ttl: None };

impl Driver for FastLease<'_> {
    fn spec(&self) -> Spec<'_> {
        LEASE
    }

    fn decide(&self, queue: &[String], ours: &str) -> Decision {
        decision(rank(self.max, (self.now)(), queue, ours), queue, ours)
    }

    fn before_waiting<'a>(&'a self, fw: &'a Framework) -> Hook<'a, Result<Proceed>> {
        Box::pin(async move {
            // a foreign child there is no one
            let queued = fw.children_or_empty(self.lock_dir).await?.iter().any(|c| is_contender(c, &[LOCK_NAME]));
            Ok(if queued { Proceed::Yield } else { Proceed::Wait })
        })
    }

    fn wait_own<'a>(&'a self, waiter: Waiter<'a>) -> Hook<'a, Result<OwnWait>> {
        Box::pin(wait_own(waiter, move |q: &[String], o: &str| rank(self.max, (self.now)(), q, o)))
    }
}

impl Driver for CountedLease {
    fn spec(&self) -> Spec<'_> {
        LEASE
    }

    fn decide(&self, queue: &[String], ours: &str) -> Decision {
        decision(count(self.max, (self.now)(), queue, ours), queue, ours)
    }

    fn wait_own<'a>(&'a self, waiter: Waiter<'a>) -> Hook<'a, Result<OwnWait>> {
        Box::pin(wait_own(waiter, move |q: &[String], o: &str| count(self.max, (self.now)(), q, o)))
    }

    fn vanished(&self, lost: Error) -> Result<()> {
        Err(lost)
    }
}

/// The leases' own wait, by `rule` on `queue`: reclaim the expired permits (then decide again),
/// or watch the children — with a listing of our own, which is decided from again at once when
/// it says something else — until one changes or the earliest permit expires.
async fn wait_own(waiter: Waiter<'_>, rule: impl Fn(&[String], &str) -> Rule) -> Result<OwnWait> {
    let Waiter { fw, dir, queue, ours } = waiter;
    if let Rule::Reclaim(nodes) = rule(queue, ours) {
        reclaim(fw, dir, &nodes).await?;
        return Ok(OwnWait::Again(None));
    }
    let (children, watch) = fw
        .request("watch", dir, |conn| async move {
            let listed = conn.watch_children(dir).await.if_exists()?;
            Ok(listed.map_or((Vec::new(), None), |(list, watch)| (list, Some(watch))))
        })
        .await?;
    let listing = Arc::new(Listing::new(children));
    let now = listing.queue(LEASE_NAMES);
    match (rule(&now, ours), watch) {
        (Rule::WatchChildren, Some(watch)) => Ok(OwnWait::Watch { watch, wake_at: earliest_deadline(&now, ours) }),
        (_, _) => Ok(OwnWait::Again(Some(Listed::plain(listing.clone())))),
    }
}

/// Deletes the expired permits `nodes` (children of `dir`; one gone already is fine), in one
/// round trip.
async fn reclaim(fw: &Framework, dir: &str, nodes: &[String]) -> Result<()> {
    let paths: Vec<String> = nodes.iter().map(|n| paths::join(dir, n)).collect();
    fw.request("delete", dir, |conn| {
        let paths = &paths;
        async move {
            let deletes: Vec<_> = paths.iter().map(|p| conn.delete(p, None)).collect();
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
#[path = "leases_tests.rs"]
mod tests;
