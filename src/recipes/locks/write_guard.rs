//! The write side's guard: re-entry and downgrade go through it.

use std::ops::Deref;
use std::sync::Arc;

use crate::framework::CreateMode;

use super::contention::Acquired;
use super::create::create_owned;
use super::held::HeldNode;
use super::order::sort_key_multi;
use super::reentrant::{HoldCount, LockGuard};
use super::rules::{READ_NAME, WRITE_NAME};
use crate::error::{Error, Result};
use crate::framework::{paths, Framework, LossReason};

/// What a write guard needs of its read-write lock to hold a read beside itself.
#[derive(Debug, Clone)]
pub(crate) struct Beside {
    pub fw: Framework,
    /// The lock path.
    pub dir: String,
    /// The lock's read holds in this process.
    pub readers: Arc<HoldCount>,
}

/// A held write lock of an [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock).
///
/// Derefs to [`HeldNode`] (`path()`, `fencing_token()`, `lost()`...). Owned, `Send` and
/// `'static`. Dropping it releases in the background (guaranteed delete), never blocks, never
/// panics. Re-entering ([`reenter`](Self::reenter)) and downgrading to a read hold
/// ([`downgrade`](Self::downgrade)) go through it: possession of the guard is the proof.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessReadWriteLock;
/// let lock = InterProcessReadWriteLock::new(&fw, "/locks/table")?;
/// let write = lock.write().await?;
/// // ... rewrite the table ...
/// let read = write.downgrade().await?; // readers may join, writers still wait
/// // ... read what was written ...
/// read.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "the lock is released when the guard is dropped"]
#[derive(Debug)]
pub struct WriteGuard {
    guard: LockGuard,
    beside: Beside,
}

impl WriteGuard {
    pub(crate) fn new(guard: LockGuard, beside: Beside) -> Self {
        Self { guard, beside }
    }

    /// Re-enters this write hold: another guard on the same node, at once (see
    /// [`LockGuard::reenter`]).
    ///
    /// # Errors
    /// [`Error::LockLost`] when the hold is already known lost.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(write: zk_recipes::WriteGuard) -> zk_recipes::Result<()> {
    /// let again = write.reenter()?;
    /// assert_eq!(again.hold_count(), 2);
    /// # Ok(()) }
    /// ```
    #[doc(alias = "acquire")]
    pub fn reenter(&self) -> Result<WriteGuard> {
        Ok(WriteGuard { guard: self.guard.reenter()?, beside: self.beside.clone() })
    }

    /// Turns this write hold into a read hold that keeps the writer's place in the queue
    /// (Curator's downgrade: take the read lock while holding the write lock, then release the
    /// write lock). The read hold is granted at once; writers queued behind stay out until it
    /// is released, readers may join. Then this guard is released; the write node is deleted
    /// unless other guards re-entered from this one still hold it.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the write hold is lost (nothing is created, this guard is
    /// dropped); the framework's errors when the read node cannot be created (this guard is
    /// dropped, its node deleted in the background).
    ///
    /// # Cancel safety
    /// Cancel safe: dropped before it completes, no read node is left behind, and the write
    /// hold is released in the background.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(write: zk_recipes::WriteGuard) -> zk_recipes::Result<()> {
    /// let read = write.downgrade().await?;
    /// read.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn downgrade(self) -> Result<LockGuard> {
        let read = self.read_beside().await?;
        if let Err(e) = self.release().await {
            tracing::debug!(error = %e, "downgrade: releasing the write node failed (continues in the background)");
        }
        Ok(read)
    }

    /// A read hold beside this write hold, at its place in the queue; this guard keeps holding.
    ///
    /// A plain ephemeral `__READ__` node with the write node's sequence, granted at once
    /// (nothing that sorts before it can be a writer). Refused when the write hold is lost, or
    /// when the read node was made by another session than the write node's (the session was
    /// re-created meanwhile): a read node at an old place in the queue would sort before
    /// writers that hold now.
    pub(crate) async fn read_beside(&self) -> Result<LockGuard> {
        let (write, b) = (&*self.guard, &self.beside);
        let lost = |reason| Error::LockLost { path: write.path().to_string(), reason };
        if let Some(reason) = write.loss() {
            return Err(lost(reason));
        }
        let sequence = sort_key_multi(paths::node_name(write.path()), &[READ_NAME, WRITE_NAME]);
        let name = format!("{READ_NAME}{sequence}");
        let status = b.fw.status();
        let node = create_owned(&b.fw, &b.dir, &name, b.fw.default_data(), CreateMode::Ephemeral).await?;
        let acquired = Acquired::created(node.path, node.stat, status, crate::observe::Kind::Read);
        // a TTL write node has no ephemeral owner: its session is the one that created it
        let same_session = acquired.stat.ephemeral_owner == write.session_id();
        let read = LockGuard::new(HeldNode::new(&b.fw, acquired, true), &b.readers);
        match write.loss() {
            None if same_session => Ok(read),
            reason => {
                drop(read); // its node is deleted in the background
                Err(lost(reason.unwrap_or(LossReason::SessionLost)))
            }
        }
    }

    /// Releases this hold (see [`LockGuard::release`]).
    ///
    /// # Errors
    /// [`Error::LockLost`] when the lock had been lost before the release; the delete's error
    /// otherwise (it continues in the background).
    ///
    /// # Cancel safety
    /// Cancel safe: if cancelled, the delete continues in the background.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(write: zk_recipes::WriteGuard) -> zk_recipes::Result<()> {
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(self) -> Result<()> {
        self.guard.release().await
    }

    /// How many guards share this guard's node (1 until [`reenter`](Self::reenter)ed).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(write: zk_recipes::WriteGuard) {
    /// assert_eq!(write.hold_count(), 1);
    /// # }
    /// ```
    pub fn hold_count(&self) -> usize {
        self.guard.hold_count()
    }
}

impl Deref for WriteGuard {
    type Target = HeldNode;

    fn deref(&self) -> &HeldNode {
        &self.guard
    }
}

impl From<WriteGuard> for LockGuard {
    /// The write hold as a plain [`LockGuard`] (it can no longer downgrade).
    fn from(write: WriteGuard) -> LockGuard {
        write.guard
    }
}
