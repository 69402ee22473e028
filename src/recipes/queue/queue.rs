//! [`Queue`]: Curator's `DistributedQueue` and its id, priority and delay kinds, over one
//! engine; items framed as Curator's `ItemSerializer` does.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use super::delivery::Delivery;
use super::engine::{Deleted, Engine, Mode, Taken};
use super::framing::{self, BytesSerializer, QueueSerializer};
use super::kinds::{layout_of, ById, ByPriority, Delayed, Fifo, QueueKind};
use super::naming;
use crate::error::{Error, Result};
use crate::framework::Framework;
use crate::recipes::layout::QUEUE_ITEM_NAME;
use crate::sync::lock;

/// Curator's `DistributedQueue`: items of type `T` in `queue-<seq>` nodes, first in, first out.
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

/// Options of a [`Queue`] (Curator's `QueueBuilder`): the item serializer, the lock path,
/// a bound.
pub struct QueueBuilder<T> {
    fw: Framework,
    path: String,
    lock_path: Option<String>,
    max_items: Option<usize>,
    serializer: Arc<dyn QueueSerializer<T>>,
}

impl QueueBuilder<Vec<u8>> {
    /// Options for a queue at `path` of raw byte items ([`BytesSerializer`]), locks at
    /// `<path>-locks`, no bound.
    pub fn new(fw: &Framework, path: &str) -> Self {
        Self {
            fw: fw.clone(),
            path: path.to_string(),
            lock_path: None,
            max_items: None,
            serializer: Arc::new(BytesSerializer),
        }
    }
}

impl<T: Send + 'static> QueueBuilder<T> {
    /// Items of type `U`, turned into bytes by `serializer`.
    pub fn serializer<U>(self, serializer: impl QueueSerializer<U>) -> QueueBuilder<U> {
        QueueBuilder {
            fw: self.fw,
            path: self.path,
            lock_path: self.lock_path,
            max_items: self.max_items,
            serializer: Arc::new(serializer),
        }
    }

    /// Where consumers lock the items they take (Curator's `lockPath`: share it with Curator's
    /// lock-safe consumers of the same queue). Default: `<path>-locks`.
    pub fn lock_path(mut self, lock_path: &str) -> Self {
        self.lock_path = Some(lock_path.to_string());
        self
    }

    /// A bound: puts wait while the queue holds `max_items` item nodes or more (a soft bound,
    /// as Curator's: producers that check at the same moment may all pass).
    pub fn max_items(mut self, max_items: usize) -> Self {
        self.max_items = Some(max_items);
        self
    }

    /// The queue, of kind `K` ([`Fifo`], [`ById`], [`ByPriority`], [`Delayed`]).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path or lock path; [`Error::InvalidArgument`]
    /// for a lock path inside the queue or a bound of 0.
    pub fn build<K: QueueKind>(self) -> Result<Queue<T, K>> {
        let locks = self.lock_path.unwrap_or_else(|| format!("{}-locks", self.path));
        let engine = Engine::new(&self.fw, &self.path, Some(locks), layout_of::<K>(), self.max_items)?;
        Ok(Queue {
            engine: Arc::new(engine),
            serializer: self.serializer,
            buffer: Arc::new(Mutex::new(VecDeque::new())),
            kind: PhantomData,
        })
    }
}

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
/// * **At most once** — [`take`](Self::take) / [`poll`](Self::poll): the node is deleted,
///   then its items are handed over. A consumer that dies while processing loses them.
/// * **At least once** ("safe") — [`take_safe`](Self::take_safe) /
///   [`poll_safe`](Self::poll_safe): the node is locked and handed over as a [`Delivery`];
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
/// * Bad input: an empty item, an item (or node) over [`MAX_ITEM_BYTES`](crate::MAX_ITEM_BYTES),
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
    engine: Arc<Engine>,
    serializer: Arc<dyn QueueSerializer<T>>,
    buffer: Arc<Mutex<VecDeque<T>>>,
    kind: PhantomData<fn() -> K>,
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

impl<K: QueueKind> Queue<Vec<u8>, K> {
    /// A queue of raw byte items at `path`, locks at `<path>-locks`, no bound; see
    /// [`QueueBuilder`] for the options.
    ///
    /// # Errors
    /// As [`QueueBuilder::build`].
    pub fn new(fw: &Framework, path: &str) -> Result<Self> {
        QueueBuilder::new(fw, path).build()
    }

    /// The options of a queue at `path`.
    pub fn builder(fw: &Framework, path: &str) -> QueueBuilder<Vec<u8>> {
        QueueBuilder::new(fw, path)
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
    async fn put_node(&self, prefix: String, items: &[T], timeout: Option<Duration>) -> Result<String> {
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
    ///
    /// # Errors
    /// [`Error::CorruptData`] for a node that is not Curator's framing (it is consumed: the
    /// next take goes on); the serializer's errors; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe while waiting; a node whose delete was sent when the future is dropped is
    /// consumed, its items lost.
    pub async fn take(&self) -> Result<T> {
        loop {
            if let Some(item) = self.poll_until(None).await? {
                return Ok(item);
            }
        }
    }

    /// [`take`](Self::take), waiting at most `timeout`: `None` when no item came.
    ///
    /// # Errors
    /// As [`take`](Self::take).
    ///
    /// # Cancel safety
    /// As [`take`](Self::take).
    pub async fn poll(&self, timeout: Duration) -> Result<Option<T>> {
        self.poll_until(Some(Instant::now() + timeout)).await
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
    ///
    /// # Errors
    /// [`Error::CorruptData`] for a node that is not Curator's framing (it is deleted, under
    /// our lock: the next take goes on); the serializer's errors; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: a lock taken by a dropped call is released.
    pub async fn take_safe(&self) -> Result<Delivery<T>> {
        loop {
            if let Some(delivery) = self.poll_safe_until(None).await? {
                return Ok(delivery);
            }
        }
    }

    /// [`take_safe`](Self::take_safe), waiting at most `timeout`: `None` when no item came.
    ///
    /// # Errors
    /// As [`take_safe`](Self::take_safe).
    ///
    /// # Cancel safety
    /// As [`take_safe`](Self::take_safe).
    pub async fn poll_safe(&self, timeout: Duration) -> Result<Option<Delivery<T>>> {
        self.poll_safe_until(Some(Instant::now() + timeout)).await
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

impl<T: Send + 'static> Queue<T, Fifo> {
    /// Adds `item` at the tail (one node). With a bound, waits for room first.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty item; [`Error::ItemTooLarge`]; the
    /// serializer's errors; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe once the create is sent: the item may or may not have been added.
    pub async fn put(&self, item: &T) -> Result<String> {
        self.put_node(QUEUE_ITEM_NAME.to_string(), std::slice::from_ref(item), None).await
    }

    /// [`put`](Self::put), waiting at most `timeout` for room in a bounded queue.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the queue stayed full; as [`put`](Self::put) otherwise.
    ///
    /// # Cancel safety
    /// As [`put`](Self::put).
    pub async fn put_timeout(&self, item: &T, timeout: Duration) -> Result<String> {
        self.put_node(QUEUE_ITEM_NAME.to_string(), std::slice::from_ref(item), Some(timeout)).await
    }

    /// Adds `items` in one node (Curator's `putMulti`): consumed together.
    ///
    /// # Errors
    /// As [`put`](Self::put); [`Error::InvalidArgument`] for no items.
    ///
    /// # Cancel safety
    /// As [`put`](Self::put).
    pub async fn put_multi(&self, items: &[T]) -> Result<String> {
        self.put_node(QUEUE_ITEM_NAME.to_string(), items, None).await
    }

    /// Adds `items` one node each, in order, in one transaction (all or none); their total
    /// size must stay below [`MAX_ITEM_BYTES`](crate::MAX_ITEM_BYTES).
    ///
    /// # Errors
    /// As [`put`](Self::put).
    ///
    /// # Cancel safety
    /// As [`put`](Self::put).
    pub async fn put_all(&self, items: &[T]) -> Result<Vec<String>> {
        let mut nodes = Vec::with_capacity(items.len());
        for item in items {
            let data = framing::encode(&[self.serializer.serialize(item)?])?;
            nodes.push((QUEUE_ITEM_NAME.to_string(), data));
        }
        self.engine.put(nodes, None).await
    }
}

impl<T: Send + 'static> Queue<T, ById> {
    /// Adds `item` with `id` at the tail (`/` and `|` in the id become `_`, as in Curator).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty id; as [`DistributedQueue::put`] otherwise.
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put(&self, item: &T, id: &str) -> Result<String> {
        self.put_node(naming::id_prefix(id)?, std::slice::from_ref(item), None).await
    }

    /// [`put`](Self::put), waiting at most `timeout` for room in a bounded queue.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the queue stayed full; as [`put`](Self::put) otherwise.
    ///
    /// # Cancel safety
    /// As [`put`](Self::put).
    pub async fn put_timeout(&self, item: &T, id: &str, timeout: Duration) -> Result<String> {
        self.put_node(naming::id_prefix(id)?, std::slice::from_ref(item), Some(timeout)).await
    }

    /// Removes every item with `id` that no consumer holds; returns how many.
    ///
    /// # Errors
    /// [`Error::NoSuchItem`] when no item has that id; [`Error::InvalidArgument`] for an
    /// empty id; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: some items may have been removed.
    pub async fn remove(&self, id: &str) -> Result<usize> {
        naming::id_prefix(id)?;
        let fixed = naming::fix_id(id);
        let mut removed = 0;
        let mut found = false;
        for name in self.engine.items().await? {
            if naming::id_of(&name) == Some(fixed.as_str()) {
                found = true;
                if self.engine.delete_item(&name, None).await? == Deleted::Yes {
                    removed += 1;
                }
            }
        }
        if !found {
            return Err(Error::NoSuchItem { path: format!("{} (id {id:?})", self.engine.dir) });
        }
        Ok(removed)
    }
}

impl<T: Send + 'static> Queue<T, ByPriority> {
    /// Adds `item` with `priority`: lower numbers are taken first; equal ones first in, first
    /// out.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative priority; as [`DistributedQueue::put`]
    /// otherwise.
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put(&self, item: &T, priority: i32) -> Result<String> {
        self.put_node(naming::priority_prefix(priority)?, std::slice::from_ref(item), None).await
    }

    /// Adds `items` with `priority` in one node.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    ///
    /// # Cancel safety
    /// As [`put`](Self::put).
    pub async fn put_multi(&self, items: &[T], priority: i32) -> Result<String> {
        self.put_node(naming::priority_prefix(priority)?, items, None).await
    }
}

impl<T: Send + 'static> Queue<T, Delayed> {
    /// Adds `item`, to be taken from `at` on (the consumers' clocks decide, as in Curator).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time not after the epoch; as
    /// [`DistributedQueue::put`] otherwise.
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`].
    pub async fn put_at(&self, item: &T, at: SystemTime) -> Result<String> {
        let epoch = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        self.put_node(naming::delay_prefix(epoch)?, std::slice::from_ref(item), None).await
    }

    /// Adds `item`, to be taken `delay` from now.
    ///
    /// # Errors
    /// As [`put_at`](Self::put_at).
    ///
    /// # Cancel safety
    /// As [`put_at`](Self::put_at).
    pub async fn put_after(&self, item: &T, delay: Duration) -> Result<String> {
        self.put_at(item, SystemTime::now() + delay).await
    }
}
