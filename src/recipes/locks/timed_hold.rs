//! Time-bounded holds: a hold that ends at a deadline unless renewed (Redisson's
//! `leaseTime`; CURATOR-28), so that a holder that is wedged but still connected cannot keep a
//! lock forever.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::held::HeldNode;
use super::lock::{HeldLock, InterProcessLock};
use crate::error::{Error, Result};
use crate::framework::deadline;
#[cfg(doc)]
use crate::framework::LossReason;

/// A hold that ends at its deadline unless [`renew`](Self::renew)ed: then it is lost
/// with [`LossReason::Expired`] — [`lost`](HeldNode::lost) resolves, writes guarded by it
/// ([`Transaction::while_held`](crate::Transaction::while_held)) are refused from that moment
/// — and its node is deleted, so the next contender (ours or Curator's) gets the lock.
///
/// Made by [`acquire`](Self::acquire) for any [`InterProcessLock`]
/// (mutex, write lock, semaphore mutex, read lock), or [`new`](Self::new) over any hold (a
/// semaphore's [`Lease`](crate::Lease) too). Derefs to [`HeldNode`]. The deadline is kept by a
/// timer in this process: a process that dies loses its session, and its hold ends with the
/// session timeout as any other.
///
/// Over a lock with a server TTL
/// ([`InterProcessMutex::with_server_ttl`](crate::InterProcessMutex::with_server_ttl)) the
/// server enforces the deadline as well: the hold's length may not be longer than the node's
/// TTL, and starting the hold and every renewal touch the node (in the background), so the server
/// deletes it once renewals stop — also when this process is gone and its session is not.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::{InterProcessMutex, TimedHold};
/// let mutex = InterProcessMutex::new(&fw, "/locks/job")?;
/// let held = TimedHold::acquire(&mutex, Duration::from_secs(30)).await?;
/// // ... a step of the work ...
/// held.renew(Duration::from_secs(30))?;
/// // ... the rest ...
/// held.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "the lock is released when the hold is dropped"]
#[derive(Debug)]
pub struct TimedHold {
    held: Arc<HeldLock>,
    deadline: watch::Sender<Instant>,
}

impl TimedHold {
    /// Waits until `lock` is held, then bounds the hold to `length` from then (Redisson's
    /// `leaseTime`). `length` is no timeout: the wait is the lock's
    /// [`acquire`](InterProcessLock::acquire) (which a caller's
    /// [`with_deadline`](crate::with_deadline) scope bounds). `Duration::MAX` is no bound: the
    /// hold lasts until released or lost, as a plain one.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero `length` (nothing is acquired); the errors of the
    /// lock's [`acquire`](InterProcessLock::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe, as the lock's acquire.
    pub async fn acquire(lock: &dyn InterProcessLock, length: Duration) -> Result<TimedHold> {
        check_length(length)?;
        let held = lock.acquire().await?;
        TimedHold::new(held, length)
    }

    /// Bounds `held` to `length` from now (`Duration::MAX`: no bound).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero length, or one longer than the node's server-side
    /// TTL (the hold is released then); [`Error::LockLost`] when the hold is lost already.
    pub fn new(held: impl Into<HeldLock>, length: Duration) -> Result<TimedHold> {
        let held = Arc::new(held.into());
        check(&held, length)?;
        let deadline = watch::Sender::new(deadline::after(length));
        held.framework().runtime().spawn(expire_at_deadline(held.clone(), deadline.subscribe()));
        touch_in_background(&held);
        Ok(TimedHold { held, deadline })
    }

    /// Moves the deadline to `length` from now (and touches a TTL node, in the background);
    /// `Duration::MAX`: no bound from now on.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero length, or one longer than the node's server-side
    /// TTL; [`Error::LockLost`] when the hold is lost (its deadline passed, or any other loss):
    /// a lost hold cannot be renewed.
    pub fn renew(&self, length: Duration) -> Result<()> {
        check(&self.held, length)?;
        self.deadline.send_replace(deadline::after(length));
        touch_in_background(&self.held);
        Ok(())
    }

    /// When the hold ends unless renewed.
    pub fn deadline(&self) -> Instant {
        *self.deadline.borrow()
    }

    /// Releases the hold.
    ///
    /// # Errors
    /// [`Error::LockLost`] when it had been lost before (its deadline passed included); the
    /// delete's error otherwise (it then continues in the background).
    ///
    /// # Cancel safety
    /// Cancel safe: if cancelled, the delete continues in the background.
    pub async fn release(self) -> Result<()> {
        let TimedHold { held, deadline } = self;
        drop(deadline); // ends the timer
        match Arc::try_unwrap(held) {
            Ok(held) => held.release().await,
            // the timer still has it for a moment: release through the node itself
            Err(held) => HeldNode::release(&held).await,
        }
    }
}

impl Deref for TimedHold {
    type Target = HeldNode;

    fn deref(&self) -> &HeldNode {
        &self.held
    }
}

fn check_length(length: Duration) -> Result<()> {
    if length.is_zero() {
        return Err(Error::invalid("length", "a timed hold's length must be longer than zero"));
    }
    Ok(())
}

/// Whether `held` may be bounded to `length`: a nonzero one, not longer than its node's
/// server-side TTL, on a hold not lost.
fn check(held: &HeldNode, length: Duration) -> Result<()> {
    check_length(length)?;
    if let Some(ttl) = held.server_ttl().filter(|ttl| length > *ttl) {
        return Err(Error::invalid(
            "length",
            format!("a timed hold of {length:?} is longer than the lock node's server-side TTL of {ttl:?}"),
        ));
    }
    if let Some(reason) = held.loss() {
        return Err(Error::LockLost { path: held.path().to_string(), reason });
    }
    Ok(())
}

/// Touches a TTL node in the background: its server TTL starts again.
fn touch_in_background(held: &Arc<HeldLock>) {
    if held.server_ttl().is_none() {
        return;
    }
    let held = held.clone();
    held.framework().runtime().clone().spawn(async move {
        if let Err(e) = held.touch().await {
            let (token, session) = (held.fencing_token(), crate::observe::session_hex(held.session_id()));
            tracing::warn!(path = %held.path(), token, %session, error = %e, "touching the lock's TTL node failed");
        }
    });
}

/// Ends the hold at its deadline (unless renewed meanwhile, or released: the sender dropped).
async fn expire_at_deadline(held: Arc<HeldLock>, mut deadline: watch::Receiver<Instant>) {
    loop {
        let at = *deadline.borrow_and_update();
        tokio::select! {
            _ = tokio::time::sleep_until(at) => {
                if *deadline.borrow() > at {
                    continue; // renewed as the timer fired
                }
                if held.loss().is_none() {
                    held.expire();
                    let (token, session) = (held.fencing_token(), crate::observe::session_hex(held.session_id()));
                    tracing::warn!(path = %held.path(), token, %session, "timed hold expired: the hold ends");
                    let _ = held.framework().delete_guaranteed(held.path()).await;
                }
                return;
            }
            changed = deadline.changed() => if changed.is_err() { return },
            _ = held.lost() => return,
        }
    }
}
