//! Writes that commit only while we lead: a [`Transaction`] guarded by a [`Leadership`].

use super::latch::Leadership;
use crate::framework::{LossReason, Transaction};

impl Transaction<'_> {
    /// Commits only while the participant whose `leadership` this is still leads: the
    /// transaction also checks that its latch node exists, in the same `multi`. A
    /// `leadership` that is not leading refuses at once with
    /// [`Error::LockLost`](crate::Error::LockLost); a latch node found gone at commit fails
    /// the transaction with it too, nothing applied.
    ///
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework, latch: zk_recipes::LeaderLatch) -> zk_recipes::Result<()> {
    /// latch.await_leadership().await?;
    /// fw.transaction()
    ///     .guarded_by_leadership(&latch.leadership())
    ///     .set_data("/service/config", b"v2", None)
    ///     .commit()
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn guarded_by_leadership(self, leadership: &Leadership) -> Self {
        match (leadership.node(), leadership.is_leader()) {
            (Some(node), true) => self.guard(node, None),
            // never led (no node: the error's path is empty), or leads no more
            (node, _) => self.guard(node.unwrap_or_default(), Some(LossReason::NodeDeleted)),
        }
    }
}
