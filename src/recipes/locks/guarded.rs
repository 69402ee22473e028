//! Writes that commit only while a hold is held: a [`Transaction`] that depends on a hold
//! checks the hold's own node in the same `multi` (etcd's `IsOwner()` in a transaction;
//! CURATOR-605).

use super::held::HeldNode;
use crate::framework::Transaction;

impl Transaction<'_> {
    /// Commits only while `held` is held: the transaction also checks that the hold's node
    /// still exists, in the same `multi`, so the writes are applied only if nobody else can
    /// hold the lock at that moment — whatever this process believes. A hold already known
    /// lost refuses at once; a node found gone at commit fails the transaction with
    /// [`Error::LockLost`](crate::Error::LockLost), and [`HeldNode::lost`] resolves.
    ///
    /// Works with every guard, lease and leadership (they deref to [`HeldNode`]) held through
    /// this framework, or through one with the same namespace.
    ///
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::InterProcessMutex;
    /// let held = InterProcessMutex::new(&fw, "/locks/accounts")?.acquire().await?;
    /// let (_, stat) = fw.get_data("/accounts/a").await?;
    /// fw.transaction()
    ///     .while_held(&held)
    ///     .set_data("/accounts/a", b"90", Some(stat.version))
    ///     .commit()
    ///     .await?;
    /// held.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn while_held(self, held: &HeldNode) -> Self {
        self.check_hold(held.path(), held.loss())
    }

    /// The former name of [`while_held`](Self::while_held).
    #[deprecated(since = "0.1.0", note = "renamed `while_held`: \"guard\" names the RAII holders only")]
    pub fn guarded_by(self, held: &HeldNode) -> Self {
        self.while_held(held)
    }
}
