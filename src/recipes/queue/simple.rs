//! `SimpleDistributedQueue`: raw bytes in `qn-` nodes (the ZooKeeper distribution's queue).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::engine::Mode;
use super::naming::Layout;
use super::state::Engine;
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::Framework;
use crate::recipes::layout::SIMPLE_QUEUE_ITEM_NAME;

/// A queue of raw byte items: Curator's `SimpleDistributedQueue` (and the ZooKeeper
/// distribution's `DistributedQueue`), first in, first out.
///
/// Each item is one persistent sequential node `<path>/qn-<seq>` holding the item's bytes.
/// A take deletes the item's node in a transaction, so each item goes to exactly one
/// consumer — also when the reply to that delete is lost (the framework's transaction markers
/// tell whether it was applied: Curator's consumer would report it as taken by someone else
/// and lose it).
///
/// # Notable behaviors
/// * Taking is **at most once**: the item's node is deleted before the item is returned; a
///   consumer that dies after that loses the item. For processed-then-deleted (at least
///   once), use a [`DistributedQueue`](crate::DistributedQueue) and
///   [`take_safe`](crate::Queue::take_safe).
/// * Waiting ([`take`](Self::take), [`take_timeout`](Self::take_timeout)) sets a children watch; no polling.
///   Order is FIFO for one consumer; several consumers each take the oldest item they can
///   get.
/// * Empty items and items larger than [`MAX_ITEM_BYTES`](crate::queue::MAX_ITEM_BYTES) are
///   refused ([`Error::InvalidArgument`], [`Error::TooLarge`]).
///
/// # Curator compatibility
/// Same nodes as Curator's `SimpleDistributedQueue`: the queue's node is a container, items
/// are `qn-<seq>` persistent sequential nodes with the raw bytes; children not starting with
/// `qn-` are skipped. Curator producers and consumers share a queue with ours.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::SimpleDistributedQueue;
/// let queue = SimpleDistributedQueue::new(&fw, "/jobs/thumbnails")?;
/// queue.offer(b"image-17.png").await?;
/// let job = queue.take().await?;
/// assert_eq!(job, b"image-17.png");
/// assert_eq!(queue.try_take().await?, None);
/// assert!(queue.take_timeout(Duration::from_millis(100)).await.is_err_and(|e| matches!(e, zk_recipes::Error::Timeout { .. })));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SimpleDistributedQueue {
    engine: Arc<Engine>,
}

impl SimpleDistributedQueue {
    /// A queue at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path (or the root).
    pub fn new(fw: &Framework, path: &str) -> Result<Self> {
        Ok(Self { engine: Arc::new(Engine::new(fw, path, None, Layout::Simple, None)?) })
    }

    /// The same queue with a bound: [`offer`](Self::offer) waits while it holds `max_items`
    /// items or more (a soft bound: producers that check at the same moment may all pass).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for 0.
    pub fn with_max_items(self, max_items: usize) -> Result<Self> {
        let e = &self.engine;
        Ok(Self { engine: Arc::new(Engine::new(&e.fw, &e.dir, None, Layout::Simple, Some(max_items))?) })
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        &self.engine.dir
    }

    /// Adds an item at the tail; returns its node's path. With a bound
    /// ([`with_max_items`](Self::with_max_items)), waits for room first.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`offer_timeout`](Self::offer_timeout) with the time left.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty item; [`Error::TooLarge`]; the framework's
    /// errors.
    ///
    /// # Cancel safety
    /// Not cancel safe once the create is sent: the item may or may not have been added.
    pub async fn offer(&self, data: &[u8]) -> Result<String> {
        self.offer_within(data, None).await
    }

    /// [`offer`](Self::offer), waiting at most `timeout` for room in a bounded queue.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the queue stayed full; as [`offer`](Self::offer) otherwise.
    ///
    /// # Cancel safety
    /// As [`offer`](Self::offer).
    pub async fn offer_timeout(&self, data: &[u8], timeout: Duration) -> Result<String> {
        self.offer_within(data, Some(timeout)).await
    }

    async fn offer_within(&self, data: &[u8], timeout: Option<Duration>) -> Result<String> {
        let created = self.engine.put(vec![(SIMPLE_QUEUE_ITEM_NAME.to_string(), data.to_vec())], timeout).await?;
        created.into_iter().next().ok_or_else(|| Error::invalid("item", "an empty queue item"))
    }

    /// Adds several items at the tail, in order, in one transaction (all or none): one node
    /// each. Their total size must stay below [`MAX_ITEM_BYTES`](crate::queue::MAX_ITEM_BYTES).
    ///
    /// # Errors
    /// As [`offer`](Self::offer) ([`Error::TooLarge`] for the total).
    ///
    /// # Cancel safety
    /// As [`offer`](Self::offer).
    pub async fn offer_all(&self, items: &[Vec<u8>]) -> Result<Vec<String>> {
        let items = items.iter().map(|data| (SIMPLE_QUEUE_ITEM_NAME.to_string(), data.clone())).collect();
        self.engine.put(items, None).await
    }

    /// Removes the head of the queue and returns it, waiting (by a children watch) until
    /// there is one. At most once: the node is deleted before the item is returned.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`take_timeout`](Self::take_timeout) with the time left.
    ///
    /// # Errors
    /// The framework's errors ([`Error::Closed`], [`Error::RetriesExhausted`]...).
    ///
    /// # Cancel safety
    /// Cancel safe while waiting; an item whose delete was sent when the future is dropped is
    /// taken and lost with it.
    pub async fn take(&self) -> Result<Vec<u8>> {
        if let Some(left) = deadline::scope_left() {
            return self.take_timeout(left).await;
        }
        loop {
            if let Some(taken) = self.engine.take(Mode::AtMostOnce, None).await? {
                return Ok(taken.data);
            }
        }
    }

    /// [`take`](Self::take), waiting at most `timeout` for an item.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when no item came in time; as [`take`](Self::take) otherwise.
    ///
    /// # Cancel safety
    /// As [`take`](Self::take).
    #[doc(alias = "poll")]
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Vec<u8>> {
        match self.engine.take(Mode::AtMostOnce, Some(deadline::after(timeout))).await? {
            Some(taken) => Ok(taken.data),
            None => Err(Error::timeout(timeout, crate::TimeoutStep::Waiting)),
        }
    }

    /// Removes the head of the queue and returns it if there is one now (`None` when the
    /// queue is empty); never waits for an item (Curator's `poll()`).
    ///
    /// # Errors
    /// As [`take`](Self::take).
    ///
    /// # Cancel safety
    /// As [`take`](Self::take).
    #[doc(alias = "poll")]
    pub async fn try_take(&self) -> Result<Option<Vec<u8>>> {
        Ok(self.engine.take(Mode::AtMostOnce, Some(Instant::now())).await?.map(|t| t.data))
    }

    /// The head of the queue without removing it (`None` when empty).
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn peek(&self) -> Result<Option<Vec<u8>>> {
        Ok(self.engine.peek().await?.map(|(_, data)| data))
    }

    /// The head of the queue without removing it.
    ///
    /// # Errors
    /// [`Error::NoSuchItem`] when the queue is empty; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn element(&self) -> Result<Vec<u8>> {
        self.peek().await?.ok_or_else(|| Error::NoSuchItem { path: self.engine.dir.clone() })
    }

    /// How many items the queue holds.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn size(&self) -> Result<usize> {
        Ok(self.engine.items().await?.len())
    }
}
