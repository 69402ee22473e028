//! Writes that commit only while we lead: a [`Transaction`] that depends on a [`Leadership`].

use super::leadership::Leadership;
use crate::framework::Transaction;

impl Transaction<'_> {
    /// Commits only while `leadership` lasts: the transaction also checks that its node (the
    /// latch's, or the selector's lock node) exists, in the same `multi`. A leadership known
    /// to be over ([`Leadership::is_lost`]) refuses at once with
    /// [`Error::LockLost`](crate::Error::LockLost) and its reason; a node found gone at commit
    /// fails the transaction with it too, nothing applied.
    ///
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework, latch: zk_recipes::LeaderLatch) -> zk_recipes::Result<()> {
    /// let leadership = latch.await_leadership().await?;
    /// fw.transaction()
    ///     .while_leading(&leadership)
    ///     .set_data("/service/config", b"v2", None)
    ///     .commit()
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn while_leading(self, leadership: &Leadership) -> Self {
        self.check_hold(leadership.node(), leadership.loss())
    }

    /// The former name of [`while_leading`](Self::while_leading).
    #[deprecated(since = "0.1.0", note = "renamed `while_leading`: \"guard\" names the RAII holders only")]
    pub fn guarded_by_leadership(self, leadership: &Leadership) -> Self {
        self.while_leading(leadership)
    }
}
