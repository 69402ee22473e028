//! `Leadership`: one leadership, held as a value — its fencing token, its node, and the signal
//! that it ended.

use tokio::sync::watch;

use crate::framework::{Framework, LossReason, SessionStatus};
use crate::recipes::locks::HeldNode;

/// One leadership of a [`LeaderLatch`](crate::LeaderLatch) (from
/// [`await_leadership`](crate::LeaderLatch::await_leadership)) or of a
/// [`LeaderSelector`](crate::LeaderSelector) (its task's [`LeaderContext`](crate::LeaderContext)
/// derefs to it): the fencing token and the node of *that* leadership, and
/// [`lost`](Self::lost), which resolves when it ends.
///
/// Because the token comes with the leadership it belongs to, "lead, then write with the
/// token" has no gap: a leadership that ended and was gained again is a new value with a new,
/// larger token, and the old value stays lost.
///
/// # The loss signal
/// [`lost`](Self::lost) resolves when this leadership can no longer be trusted: the latch (or
/// the selector's leadership) was closed or dropped, the connection was suspended (under the
/// standard [`ErrorPolicy`](crate::ErrorPolicy)), the session was lost, or our node was
/// deleted by someone else. [`is_lost`](Self::is_lost) and [`loss`](Self::loss) answer at
/// once, without a round trip and without a prior call to `lost()`.
///
/// # Fencing
/// [`fencing_token`](Self::fencing_token) is our node's creation zxid (`czxid`): it strictly
/// increases from one leadership to the next on the path. Hand it to the store you write to,
/// and let the store reject writes with a token lower than the highest it has seen.
///
/// # Equality
/// Two values are equal when they are the same leadership (same node, same token); whether it
/// is lost is not compared.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::LeaderLatch;
///
/// let latch = LeaderLatch::new(&fw, "/elections/billing", "replica-1")?;
/// latch.start().await?;
/// let leadership = latch.await_leadership().await?;
/// let token = leadership.fencing_token();          // the token of this leadership
/// tokio::select! {
///     reason = leadership.lost() => eprintln!("leadership over ({reason}): stop leading"),
///     _ = write_with(token) => {}
/// }
/// # async fn write_with(_: i64) {}
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Leadership {
    token: i64,
    node: String,
    fw: Framework,
    baseline: SessionStatus,
    /// `Some(reason)` once the term ended; a dropped sender (the latch or selector went away)
    /// ends it too.
    end: watch::Receiver<Option<LossReason>>,
}

/// The holder's side of a [`Leadership`]: ends it (dropping it ends it as closed).
#[derive(Debug)]
pub(crate) struct Term {
    tx: watch::Sender<Option<LossReason>>,
}

impl Term {
    /// Ends the leadership with `reason` (the first reason stays).
    pub(crate) fn end(&self, reason: LossReason) {
        self.tx.send_if_modified(|r| match r {
            Some(_) => false,
            None => {
                *r = Some(reason);
                true
            }
        });
    }
}

impl Leadership {
    /// A leadership over `node`, and the term that ends it.
    pub(crate) fn begin(node: &HeldNode) -> (Term, Leadership) {
        let (tx, end) = watch::channel(None);
        let leadership = Leadership {
            token: node.fencing_token(),
            node: node.path().to_string(),
            fw: node.framework().clone(),
            baseline: node.baseline(),
            end,
        };
        (Term { tx }, leadership)
    }

    /// The fencing token of this leadership: our node's `czxid` (see the type's docs).
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// Our node: the latch's (or the selector's lock) node of this leadership, relative to the
    /// framework's namespace.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Why this leadership ended, if it did (as far as known without a round trip: a session
    /// level loss at once, a deleted node as soon as its watch fired, a close at once).
    pub fn loss(&self) -> Option<LossReason> {
        if let Some(reason) = *self.end.borrow() {
            return Some(reason);
        }
        if self.end.has_changed().is_err() {
            return Some(LossReason::Closed); // the latch or selector went away
        }
        self.fw.status().loss_since(&self.baseline, self.fw.error_policy())
    }

    /// Whether this leadership ended (see [`loss`](Self::loss)).
    pub fn is_lost(&self) -> bool {
        self.loss().is_some()
    }

    /// Resolves when this leadership ends, with the reason; at once when it ended already.
    ///
    /// # Cancel safety
    /// Cancel safe; call it again (or from several tasks, on clones) at will.
    pub async fn lost(&self) -> LossReason {
        if let Some(reason) = self.loss() {
            return reason;
        }
        let mut end = self.end.clone();
        let ended = end.wait_for(Option::is_some).await.ok().and_then(|reason| *reason);
        ended.or_else(|| self.loss()).unwrap_or(LossReason::Closed)
    }
}

impl PartialEq for Leadership {
    fn eq(&self, other: &Self) -> bool {
        self.token == other.token && self.node == other.node
    }
}

impl Eq for Leadership {}

/// Compile-time check that a leadership can cross tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Leadership>();
};
