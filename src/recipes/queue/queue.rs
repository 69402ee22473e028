//! [`Queue`]: Curator's `DistributedQueue` and its id, priority and delay kinds, over one
//! engine; items framed as Curator's `ItemSerializer` does.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::delivery::Delivery;
use super::engine::Mode;
use super::framing::{self, QueueSerializer};
use super::kinds::{ById, ByPriority, Delayed, Fifo, QueueKind};
use super::state::Engine;
use super::taken::Taken;
use crate::error::Result;
use crate::framework::deadline;
use crate::sync::lock;

/// Curator's `DistributedQueue`: items of type `T` in `queue-<seq>` nodes, first in, first out.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedQueue;
///
/// let queue = DistributedQueue::new(&fw, "/queues/emails")?;
/// queue.put(&b"to: ops".to_vec()).await?;
/// queue.put_multi(&[b"a".to_vec(), b"b".to_vec()]).await?; // one node, two items
/// let first = queue.take().await?;                   // at most once
/// assert_eq!(first, b"to: ops".to_vec());
/// # Ok(()) }
/// ```
pub type DistributedQueue<T = Vec<u8>> = Queue<T, Fifo>;
/// Curator's `DistributedIdQueue`: items with an id, removable by id.
///
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedIdQueue;
/// let queue = DistributedIdQueue::new(&fw, "/jobs/reports")?;
/// queue.put(&b"monthly".to_vec(), "report-42").await?;
/// assert_eq!(queue.remove("report-42").await?, 1); // cancelled before anyone took it
/// # Ok(()) }
/// ```
pub type DistributedIdQueue<T = Vec<u8>> = Queue<T, ById>;
/// Curator's `DistributedPriorityQueue`: lowest priority number first.
///
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedPriorityQueue;
/// let queue = DistributedPriorityQueue::new(&fw, "/jobs/builds")?;
/// queue.put(&b"nightly".to_vec(), 10).await?;
/// queue.put(&b"hotfix".to_vec(), 0).await?;
/// assert_eq!(queue.take().await?, b"hotfix");
/// # Ok(()) }
/// ```
pub type DistributedPriorityQueue<T = Vec<u8>> = Queue<T, ByPriority>;
/// Curator's `DistributedDelayQueue`: items taken from their time on.
///
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::DistributedDelayQueue;
/// let queue = DistributedDelayQueue::new(&fw, "/jobs/reminders")?;
/// queue.put_after(&b"follow up".to_vec(), Duration::from_secs(3600)).await?;
/// // a consumer gets it in an hour (by the consumers' clocks)
/// # Ok(()) }
/// ```
pub type DistributedDelayQueue<T = Vec<u8>> = Queue<T, Delayed>;

/// A distributed queue of `T` items, of kind `K`: use the aliases [`DistributedQueue`],
/// [`DistributedIdQueue`], [`DistributedPriorityQueue`], [`DistributedDelayQueue`].
///
/// Each put writes one persistent sequential node under the queue's path, holding one or
/// several items framed as Curator's `ItemSerializer` does (a version word, then an opcode
/// and a length before each item, an end opcode).
///
/// # Consumed exactly once
/// Consumers take an item node by deleting it in a transaction that also creates-and-deletes
/// (at most once) or checks (safe) the item's lock node `<lock path>/<item name>`. So a node
/// is deleted once, by one consumer, and never while another consumer holds its lock — also
/// when a consumer's session dies mid-take, and when the reply to the delete is lost
/// (the framework's transaction markers tell whether it was applied). Two modes, named for
/// what they promise:
/// * **At most once** — [`take`](Self::take) / [`take_timeout`](Self::take_timeout) /
///   [`try_take`](Self::try_take): the node is deleted,
///   then its items are handed over. A consumer that dies while processing loses them.
/// * **At least once** ("safe") — [`take_safe`](Self::take_safe) /
///   [`take_safe_timeout`](Self::take_safe_timeout) / [`try_take_safe`](Self::try_take_safe):
///   the node is locked and handed over as a [`Delivery`];
///   [`Delivery::complete`] deletes it after processing, guarded by the lock. A consumer that
///   dies before completing leaves the node for the next one: processed again, never lost.
///
/// Curator's lock-safe mode deletes the node without checking that its lock is still held,
/// so a consumer whose session died mid-processing can delete an item another consumer was
/// handed meanwhile (CURATOR-605).
///
/// # Notable behaviors
/// * Waiting sets a children watch (and an exists watch on a lock another consumer holds);
///   no polling. A consumer lists the children once and works through that listing (FIFO
///   kinds), so draining N items costs O(N) listings' worth of names, not O(N²).
/// * Items of one node taken at most once are handed over one by one from a local buffer.
/// * Bad input: an empty item, an item (or node) over [`MAX_ITEM_BYTES`](crate::queue::MAX_ITEM_BYTES),
///   an empty id, a negative priority → typed errors, nothing written.
///
/// # Curator compatibility
/// Same nodes as Curator 5.x: the queue's node persistent, items `queue-…` persistent
/// sequential with the `ItemSerializer` framing, lock nodes `<lock path>/<item name>`
/// ephemeral. A Curator producer's items are taken by our consumers and ours by Curator's, for
/// every kind (Curator's consumer takes them in lock-safe mode when given the same lock path).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedQueue;
/// let queue = DistributedQueue::new(&fw, "/jobs/mail")?;
/// queue.put(&b"welcome:ann".to_vec()).await?;
/// queue.put_multi(&[b"welcome:bob".to_vec(), b"welcome:cy".to_vec()]).await?;
///
/// // at least once: process, then complete
/// let delivery = queue.take_safe().await?;
/// for item in delivery.items() { /* send the mail */ }
/// delivery.complete().await?;
///
/// // at most once
/// let next = queue.take().await?;
/// # Ok(()) }
/// ```
pub struct Queue<T, K> {
    pub(super) engine: Arc<Engine>,
    pub(super) serializer: Arc<dyn QueueSerializer<T>>,
    pub(super) buffer: Arc<Mutex<VecDeque<T>>>,
    pub(super) kind: PhantomData<fn() -> K>,
}

impl<T, K> Clone for Queue<T, K> {
    fn clone(&self) -> Self {
        Self {
            engine: self.engine.clone(),
            serializer: self.serializer.clone(),
            buffer: self.buffer.clone(),
            kind: PhantomData,
        }
    }
}

impl<T, K> std::fmt::Debug for Queue<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("engine", &self.engine).finish_non_exhaustive()
    }
}

impl<T: Send + 'static, K: QueueKind> Queue<T, K> {
    /// The queue's path.
    pub fn path(&self) -> &str {
        &self.engine.dir
    }

    /// Where consumers lock the items they take.
    pub fn lock_path(&self) -> &str {
        self.engine.locks.as_deref().unwrap_or_default()
    }

    /// Puts `items` into one node named `<prefix><seq>`.
    pub(super) async fn put_node(&self, prefix: String, items: &[T], timeout: Option<Duration>) -> Result<String> {
        let bytes = items.iter().map(|item| self.serializer.serialize(item)).collect::<Result<Vec<_>>>()?;
        let data = framing::encode(&bytes)?;
        let created = self.engine.put(vec![(prefix, data)], timeout).await?;
        Ok(created.into_iter().next().unwrap_or_default())
    }

    /// How many item nodes the queue holds (a node written by `put_multi` counts once).
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn size(&self) -> Result<usize> {
        Ok(self.engine.items().await?.len())
    }

    /// Takes the next item, at most once: its node is deleted before it is handed over
    /// (the other items of a `put_multi` node wait in this handle's buffer). Waits, by watch,
    /// until there is one.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`take_timeout`](Self::take_timeout) with the time left.
    ///
    /// # Errors
    /// [`Error::CorruptData`](crate::Error::CorruptData) for a node that is not Curator's framing (it is consumed: the
    /// next take goes on); the serializer's errors; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe while waiting; a node whose delete was sent when the future is dropped is
    /// consumed, its items lost.
    pub async fn take(&self) -> Result<T> {
        if let Some(left) = deadline::scope_left() {
            return self.take_timeout(left).await;
        }
        loop {
            if let Some(item) = self.poll_until(None).await? {
                return Ok(item);
            }
        }
    }

    /// [`take`](Self::take), waiting at most `timeout` for an item.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when no item came in time; as
    /// [`take`](Self::take) otherwise.
    ///
    /// # Cancel safety
    /// As [`take`](Self::take).
    #[doc(alias = "poll")]
    pub async fn take_timeout(&self, timeout: Duration) -> Result<T> {
        let deadline = deadline::after(timeout);
        loop {
            if let Some(item) = self.poll_until(Some(deadline)).await? {
                return Ok(item);
            }
            if Instant::now() >= deadline {
                return Err(crate::Error::timeout(timeout, crate::TimeoutStep::Waiting));
            }
        }
    }

    /// Takes the next item if there is one now (`None` otherwise); never waits for an item.
    ///
    /// # Errors
    /// As [`take`](Self::take).
    ///
    /// # Cancel safety
    /// As [`take`](Self::take).
    #[doc(alias = "poll")]
    pub async fn try_take(&self) -> Result<Option<T>> {
        self.poll_until(Some(Instant::now())).await
    }

    async fn poll_until(&self, deadline: Option<Instant>) -> Result<Option<T>> {
        if let Some(item) = lock(&self.buffer).pop_front() {
            return Ok(Some(item));
        }
        let Some(taken) = self.engine.take(Mode::AtMostOnce, deadline).await? else { return Ok(None) };
        let mut items = self.decode(&taken)?.into_iter();
        let first = items.next();
        lock(&self.buffer).extend(items);
        Ok(first)
    }

    /// Takes the next item node at least once ("safe"): locked, not deleted; process its
    /// items, then [`Delivery::complete`]. Waits, by watch, until there is one.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`take_safe_timeout`](Self::take_safe_timeout) with the time left.
    ///
    /// # Errors
    /// [`Error::CorruptData`](crate::Error::CorruptData) for a node that is not Curator's framing (it is deleted, under
    /// our lock: the next take goes on); the serializer's errors; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: a lock taken by a dropped call is released.
    pub async fn take_safe(&self) -> Result<Delivery<T>> {
        if let Some(left) = deadline::scope_left() {
            return self.take_safe_timeout(left).await;
        }
        loop {
            if let Some(delivery) = self.poll_safe_until(None).await? {
                return Ok(delivery);
            }
        }
    }

    /// [`take_safe`](Self::take_safe), waiting at most `timeout` for an item.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when no item came in time; as
    /// [`take_safe`](Self::take_safe) otherwise.
    ///
    /// # Cancel safety
    /// As [`take_safe`](Self::take_safe).
    pub async fn take_safe_timeout(&self, timeout: Duration) -> Result<Delivery<T>> {
        let deadline = deadline::after(timeout);
        loop {
            if let Some(delivery) = self.poll_safe_until(Some(deadline)).await? {
                return Ok(delivery);
            }
            if Instant::now() >= deadline {
                return Err(crate::Error::timeout(timeout, crate::TimeoutStep::Waiting));
            }
        }
    }

    /// Takes the next item node at least once if there is one now (`None` otherwise); never
    /// waits for an item.
    ///
    /// # Errors
    /// As [`take_safe`](Self::take_safe).
    ///
    /// # Cancel safety
    /// As [`take_safe`](Self::take_safe).
    pub async fn try_take_safe(&self) -> Result<Option<Delivery<T>>> {
        self.poll_safe_until(Some(Instant::now())).await
    }

    async fn poll_safe_until(&self, deadline: Option<Instant>) -> Result<Option<Delivery<T>>> {
        let Some(mut taken) = self.engine.take(Mode::Safe, deadline).await? else { return Ok(None) };
        let Some(hold) = taken.hold.take() else { return Ok(None) };
        match self.decode(&taken) {
            Ok(items) => Ok(Some(Delivery::new(&self.engine.fw, items, taken.path, taken.version, hold))),
            Err(e) => {
                // consume what no consumer can read, under our lock
                let delivery = Delivery::new(&self.engine.fw, Vec::<T>::new(), taken.path, taken.version, hold);
                delivery.complete().await?;
                Err(e)
            }
        }
    }

    fn decode(&self, taken: &Taken) -> Result<Vec<T>> {
        framing::decode(&taken.path, &taken.data)?.iter().map(|bytes| self.serializer.deserialize(bytes)).collect()
    }
}
