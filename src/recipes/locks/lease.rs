//! A lease: one held node that is not re-entrant (semaphore leases, the semaphore mutex).

use std::ops::Deref;

use super::held::HeldNode;
use crate::error::Result;

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
}

impl Lease {
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
