//! The guard shared by the mutex and both sides of the read-write lock, and explicit
//! re-entry through it.
//!
//! No task or thread identity decides who holds: a tokio task is not sequential (`join!`,
//! `select!`) and guards move between tasks. Every `acquire()` is a hold of its own (its own
//! node, its own place in the queue); re-entering goes through a guard one already holds
//! ([`LockGuard::reenter`]), so possession of the guard is the proof.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use super::held::HeldNode;
use crate::error::{Error, Result};

/// How many holds a lock handle (and its clones) has in this process right now.
#[derive(Debug, Default)]
pub(crate) struct LocalHolds(AtomicUsize);

impl LocalHolds {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// One node held once, shared by the guards re-entered from it; the node is released when the
/// last of them goes.
#[derive(Debug)]
pub(crate) struct Entry {
    node: HeldNode,
    local: Arc<LocalHolds>,
    released: AtomicBool,
}

impl Entry {
    pub fn new(node: HeldNode, local: &Arc<LocalHolds>) -> Arc<Self> {
        local.0.fetch_add(1, Ordering::SeqCst);
        Arc::new(Entry { node, local: local.clone(), released: AtomicBool::new(false) })
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if !self.released.load(Ordering::SeqCst) {
            self.node.release_in_background();
        }
        self.local.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A held lock of an [`InterProcessMutex`](crate::InterProcessMutex) or of the read side of an
/// [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock) (the write side's guard,
/// [`WriteGuard`](crate::WriteGuard), wraps one).
///
/// Derefs to [`HeldNode`]: `path()`, `fencing_token()`, `is_lost()`, `lost()`, `revoked()`.
/// Owned, `Send` and `'static`: it may be moved to and released from any task.
///
/// # Re-entrancy
/// Explicit: [`reenter`](Self::reenter) returns another guard on the same node, at once and
/// without a request to the server; the node is deleted when the last of them is released or
/// dropped, in any order. Acquiring the lock again instead (`mutex.acquire()`) is a new hold
/// with a node of its own, which waits for this one — as acquiring a `tokio::sync::Mutex`
/// twice would.
///
/// Dropping releases in the background (guaranteed delete), never blocks and never panics,
/// also outside a runtime.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessMutex;
/// let mutex = InterProcessMutex::new(&fw, "/locks/orders")?;
/// let outer = mutex.acquire().await?;
/// let inner = outer.reenter()?; // same node, same fencing token
/// assert_eq!(inner.fencing_token(), outer.fencing_token());
/// inner.release().await?; // the node stays: `outer` still holds
/// outer.release().await?; // the node is deleted
/// # Ok(()) }
/// ```
#[must_use = "the lock is released when the guard is dropped"]
#[derive(Debug)]
pub struct LockGuard {
    entry: Arc<Entry>,
}

impl Deref for LockGuard {
    type Target = HeldNode;

    fn deref(&self) -> &HeldNode {
        &self.entry.node
    }
}

impl LockGuard {
    pub(crate) fn new(node: HeldNode, local: &Arc<LocalHolds>) -> Self {
        Self { entry: Entry::new(node, local) }
    }

    /// Re-enters this hold: another guard on the same node (Curator's re-entrant acquire, with
    /// the guard as the proof of ownership instead of the thread). Needs no request to the
    /// server. The node is deleted when the last guard sharing it is released or dropped.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the hold is already known lost.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::LockGuard) -> zk_recipes::Result<()> {
    /// let again = guard.reenter()?;
    /// assert_eq!(again.hold_count(), 2);
    /// drop(guard); // the node stays while `again` lives
    /// again.release().await?;
    /// # Ok(()) }
    /// ```
    #[doc(alias = "acquire")]
    pub fn reenter(&self) -> Result<LockGuard> {
        if let Some(reason) = self.entry.node.loss() {
            return Err(Error::LockLost { path: self.entry.node.path().to_string(), reason });
        }
        Ok(LockGuard { entry: self.entry.clone() })
    }

    /// Releases this hold. When it was the last guard on its node, the node is deleted and
    /// the outcome reported; a failed delete continues in the background.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the lock had been lost before the release (nothing is left
    /// behind either way); the delete's error otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe: if cancelled, the delete continues in the background.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::LockGuard) -> zk_recipes::Result<()> {
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(self) -> Result<()> {
        match Arc::try_unwrap(self.entry) {
            Err(_) => Ok(()), // another guard re-entered from this one keeps the node
            Ok(entry) => {
                let result = entry.node.release().await;
                entry.released.store(true, Ordering::SeqCst);
                result
            }
        }
    }

    /// How many guards share this guard's node (1 until [`reenter`](Self::reenter)ed).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(guard: zk_recipes::LockGuard) -> zk_recipes::Result<()> {
    /// assert_eq!(guard.hold_count(), 1);
    /// let again = guard.reenter()?;
    /// assert_eq!(guard.hold_count(), 2);
    /// # Ok(()) }
    /// ```
    pub fn hold_count(&self) -> usize {
        Arc::strong_count(&self.entry)
    }
}
