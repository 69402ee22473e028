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
use crate::framework::{Transaction, TxnResult};

/// How many holds a lock handle (and its clones) has in this process right now.
#[derive(Debug, Default)]
pub(crate) struct HoldCount(AtomicUsize);

impl HoldCount {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// One node held once, shared by the guards re-entered from it; the node is released when the
/// last of them goes.
#[derive(Debug)]
pub(crate) struct Entry {
    node: HeldNode,
    local: Arc<HoldCount>,
    released: AtomicBool,
}

impl Entry {
    pub fn new(node: HeldNode, local: &Arc<HoldCount>) -> Arc<Self> {
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
    pub(crate) fn new(node: HeldNode, local: &Arc<HoldCount>) -> Self {
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

    /// Commits `txn` and releases this hold in the same `multi`: the writes are applied only
    /// while the hold is held (as with [`Transaction::guarded_by`](crate::ops::Transaction::guarded_by)), and our node is deleted
    /// by the same commit — the next holder's hand-off and the protected writes are one
    /// request and one log write, where a commit then a [`release`](Self::release) are two.
    /// The write-then-unlock of a lock per entity (decrement a stock, then let go) costs one
    /// write less.
    ///
    /// When other guards re-entered from this one still hold the node, the node stays: the
    /// transaction is committed guarded by the hold and this guard is released. Whatever the
    /// outcome, this guard's hold is over when the call returns: on an error the node is
    /// deleted in the background, as when a guard is dropped (the commit was not applied,
    /// unless the error is [`Error::OutcomeUnknown`]).
    ///
    /// # Errors
    /// Those of [`Transaction::commit`](crate::ops::Transaction::commit): [`Error::LockLost`] when the hold was known lost
    /// before or its node is gone at commit (nothing applied); [`Error::Transaction`] when one
    /// of `txn`'s operations was refused (nothing applied, the hold released all the same);
    /// [`Error::OutcomeUnknown`] for a commit [`without_marker`](crate::ops::Transaction::without_marker)
    /// whose reply was lost.
    ///
    /// # Cancel safety
    /// As [`Transaction::commit`](crate::ops::Transaction::commit): not cancel safe for the writes (a commit already sent is
    /// applied or not); the hold ends either way (our node is deleted in the background).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::InterProcessMutex;
    /// let guard = InterProcessMutex::new(&fw, "/locks/sku-42")?.acquire().await?;
    /// let (data, stat) = fw.get_data("/stock/sku-42").await?;
    /// let left: i64 = String::from_utf8_lossy(&data).parse().unwrap_or(0);
    /// let sell = fw.transaction().set_data("/stock/sku-42", (left - 1).to_string().as_bytes(), Some(stat.version));
    /// guard.commit_and_release(sell).await?; // the stock written and the lock let go, in one write
    /// # Ok(()) }
    /// ```
    #[doc(alias = "release_with")]
    pub async fn commit_and_release(self, txn: Transaction<'_>) -> Result<Vec<TxnResult>> {
        match Arc::try_unwrap(self.entry) {
            // another guard re-entered from this one keeps the node
            Err(entry) => txn.guarded_by(&entry.node).commit().await,
            Ok(entry) => {
                let node = &entry.node;
                // our transaction deletes the node: no loss to report when it does
                node.ending();
                let committed = txn.guard_and_release(node.path(), node.loss()).commit().await;
                // applied: the node went with the commit; else it is deleted in the background
                // when `entry` drops
                entry.released.store(committed.is_ok(), Ordering::SeqCst);
                committed
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
