//! [`Delivery`]: items handed over in safe mode, deleted once processed.

use super::taken::ItemLock;
use crate::error::Result;
use crate::framework::Framework;
use crate::HeldNode;

/// The items of one queue node, taken in safe mode ([`Queue::take_safe`](crate::Queue::take_safe)):
/// the node is locked for us, not deleted. Process the items, then
/// [`complete`](Self::complete): the node is deleted in a transaction guarded by our lock, so
/// it is deleted only while we still hold it.
///
/// # At least once
/// If this consumer dies (or its session is lost, or it drops the delivery) before
/// `complete`, the lock goes with it and the items go to another consumer: an item can be
/// *processed* more than once, never lost. `complete` then fails with
/// [`Error::LockLost`](crate::Error::LockLost) (the other consumer has it now). Make the
/// processing idempotent, or check [`hold`](Self::hold)'s
/// [`fencing_token`](HeldNode::fencing_token) downstream.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedQueue;
///
/// let jobs = DistributedQueue::new(&fw, "/queues/jobs")?;
/// let delivery = jobs.take_safe().await?;            // held, not yet deleted
/// for item in delivery.items() {
///     process(item).await;
/// }
/// delivery.complete().await?;                        // deleted only now (at least once)
/// # async fn process(_: &[u8]) {}
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "dropping a delivery hands its items back to the queue"]
pub struct Delivery<T> {
    items: Vec<T>,
    node: String,
    version: i32,
    lock: ItemLock,
    fw: Framework,
    done: bool,
}

impl<T> Delivery<T> {
    pub(crate) fn new(fw: &Framework, items: Vec<T>, node: String, version: i32, lock: ItemLock) -> Self {
        Self { items, node, version, lock, fw: fw.clone(), done: false }
    }

    /// The items (one, or several for a node written by `put_multi`).
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// The item node's path.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Our lock on the item node: its [`lost`](HeldNode::lost) signal tells when another
    /// consumer may get the items.
    pub fn hold(&self) -> &HeldNode {
        &self.lock.hold
    }

    /// Deletes the item node (the items are consumed) if we still hold its lock, then our lock;
    /// returns the items.
    ///
    /// # Errors
    /// [`Error::LockLost`](crate::Error::LockLost) when our lock was lost (the node stays for
    /// another consumer); [`Error::Transaction`](crate::Error::Transaction) when the node is
    /// gone (removed by id, or by a consumer that ignores locks); the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe once the delete is sent: the items may or may not have been consumed
    /// (the lock is released either way).
    pub async fn complete(mut self) -> Result<Vec<T>> {
        let outcome =
            self.fw.transaction().while_held(&self.lock.hold).delete(&self.node, Some(self.version)).commit().await;
        self.done = true;
        self.lock.release();
        outcome.map(|_| std::mem::take(&mut self.items))
    }

    /// Gives the items back to the queue unprocessed: releases our lock, the node stays.
    pub fn abandon(self) {
        drop(self);
    }
}

impl<T> Drop for Delivery<T> {
    fn drop(&mut self) {
        if !self.done {
            self.lock.release();
        }
    }
}
