//! The re-entrant guard shared by the mutex and both sides of the read-write lock.

use std::future::Future;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::deadline::{Wait, Waited};
use super::held::HeldNode;
use super::owner::{Owner, Owners};
use crate::error::{Error, Result};

/// One node held by one owner, shared by all of that owner's re-entrant guards; the node is
/// released when the last guard goes.
#[derive(Debug)]
pub(crate) struct Entry {
    node: HeldNode,
    owner: Owner,
    owners: Arc<Owners<Entry>>,
    released: AtomicBool,
}

impl Drop for Entry {
    fn drop(&mut self) {
        if !self.released.load(Ordering::SeqCst) {
            self.node.release_in_background();
        }
        self.owners.tidy(self.owner);
    }
}

/// A held lock of a re-entrant recipe ([`InterProcessMutex`](crate::InterProcessMutex), the
/// read and write sides of [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock)).
///
/// Derefs to [`HeldNode`]: `path()`, `fencing_token()`, `is_lost()`, `lost()`, `revoked()`.
/// Owned, `Send` and `'static`: it may be moved to and released from any task.
///
/// Re-entrant acquisitions by the same task return further guards on the same node; the node
/// is deleted when the last of them is released or dropped. Dropping releases in the
/// background (guaranteed delete), never blocks and never panics, also outside a runtime.
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
    /// Releases this hold. When it was the last re-entrant hold, our node is deleted and the
    /// outcome reported; a failed delete continues in the background.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the lock had been lost before the release (nothing is left
    /// behind either way); the delete's error otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe: if cancelled, the delete continues in the background.
    pub async fn release(self) -> Result<()> {
        match Arc::try_unwrap(self.entry) {
            Err(_) => Ok(()), // another re-entrant hold keeps the node
            Ok(entry) => {
                let result = entry.node.release().await;
                entry.released.store(true, Ordering::SeqCst);
                result
            }
        }
    }

    /// How many guards of this owner share the node (the re-entrancy count).
    pub fn hold_count(&self) -> usize {
        Arc::strong_count(&self.entry)
    }
}

/// Acquires re-entrantly for the current owner: re-enter what it holds, else run `acquire`.
/// Two acquisitions of one owner never race (the second waits for the first, then
/// re-enters). `Ok(Err(_))` means `acquire` timed out.
pub(crate) async fn acquire_reentrant<W, F, Fut>(
    owners: &Arc<Owners<Entry>>,
    acquire: F,
) -> Result<Waited<LockGuard, W>>
where
    W: Wait,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Waited<HeldNode, W>>>,
{
    let owner = Owner::current();
    let gate = owners.gate(owner);
    let result = async {
        let _turn = gate.lock().await;
        if let Some(entry) = owners.held(owner) {
            if let Some(reason) = entry.node.loss() {
                return Err(Error::LockLost { path: entry.node.path().to_string(), reason });
            }
            return Ok(Ok(LockGuard { entry }));
        }
        let node = match acquire().await? {
            Ok(node) => node,
            Err(timed_out) => return Ok(Err(timed_out)),
        };
        let entry = Arc::new(Entry { node, owner, owners: owners.clone(), released: AtomicBool::new(false) });
        owners.set(owner, &entry);
        Ok(Ok(LockGuard { entry }))
    }
    .await;
    drop(gate);
    owners.tidy(owner);
    result
}

/// Whether the current owner holds through `owners`.
pub(crate) fn held_by_current(owners: &Owners<Entry>) -> Option<Arc<Entry>> {
    owners.held(Owner::current())
}

impl Entry {
    pub fn node(&self) -> &HeldNode {
        &self.node
    }
}
