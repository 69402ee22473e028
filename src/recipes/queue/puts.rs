//! The puts of each kind of [`Queue`]: how an item is named (Curator's layouts).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::framing;
use super::kinds::{ById, ByPriority, Delayed, Fifo};
use super::locking::Deleted;
use super::naming;
use super::queue::Queue;
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::recipes::layout::QUEUE_ITEM_NAME;

impl<T: Send + 'static> Queue<T, Fifo> {
    /// Adds `item` at the tail (one node). With a bound, waits for room first.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`put_timeout`](Self::put_timeout) with the time left.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty item; [`Error::TooLarge`]; the
    /// serializer's errors; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe once the create is sent: the item may or may not have been added.
    pub async fn put(&self, item: &T) -> Result<String> {
        self.put_node(QUEUE_ITEM_NAME.to_string(), std::slice::from_ref(item), None).await
    }

    /// [`put`](Self::put), waiting at most `timeout` for room in a bounded queue.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
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
    /// size must stay below [`MAX_ITEM_BYTES`](crate::queue::MAX_ITEM_BYTES).
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
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`put_timeout`](Self::put_timeout) with the time left.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty id; as [`DistributedQueue::put`](crate::DistributedQueue::put) otherwise.
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`](crate::DistributedQueue::put).
    pub async fn put(&self, item: &T, id: &str) -> Result<String> {
        self.put_node(naming::id_prefix(id)?, std::slice::from_ref(item), None).await
    }

    /// [`put`](Self::put), waiting at most `timeout` for room in a bounded queue.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
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
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`put_timeout`](Self::put_timeout) with the time left.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative priority; as [`DistributedQueue::put`](crate::DistributedQueue::put)
    /// otherwise.
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`](crate::DistributedQueue::put).
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

    /// [`put`](Self::put), waiting at most `timeout` for room in a bounded queue.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the queue stayed full; as [`put`](Self::put) otherwise.
    ///
    /// # Cancel safety
    /// As [`put`](Self::put).
    pub async fn put_timeout(&self, item: &T, priority: i32, timeout: Duration) -> Result<String> {
        self.put_node(naming::priority_prefix(priority)?, std::slice::from_ref(item), Some(timeout)).await
    }
}

/// `at` in milliseconds since the epoch, as a delay queue item's name holds it: 0 before the
/// epoch (refused), and at most `i64::MAX` (Java's `long`: what Curator reads) for a time too far
/// to count.
fn epoch_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).min(i64::MAX as u64))
}

impl<T: Send + 'static> Queue<T, Delayed> {
    /// Adds `item`, to be taken from `at` on (the consumers' clocks decide, as in Curator). A
    /// time too far to count in a Java `long` of milliseconds is taken as its largest.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a time not after the epoch; as
    /// [`DistributedQueue::put`](crate::DistributedQueue::put) otherwise.
    ///
    /// # Cancel safety
    /// As [`DistributedQueue::put`](crate::DistributedQueue::put).
    pub async fn put_at(&self, item: &T, at: SystemTime) -> Result<String> {
        self.put_multi_at(std::slice::from_ref(item), at).await
    }

    /// Adds `items` in one node, to be taken together from `at` on (Curator's `putMulti`).
    ///
    /// # Errors
    /// As [`put_at`](Self::put_at); [`Error::InvalidArgument`] for no items.
    ///
    /// # Cancel safety
    /// As [`put_at`](Self::put_at).
    pub async fn put_multi_at(&self, items: &[T], at: SystemTime) -> Result<String> {
        self.put_node(naming::delay_prefix(epoch_ms(at))?, items, None).await
    }

    /// [`put_multi_at`](Self::put_multi_at), waiting at most `timeout` for room in a bounded
    /// queue.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the queue stayed full; as [`put_at`](Self::put_at) otherwise.
    ///
    /// # Cancel safety
    /// As [`put_at`](Self::put_at).
    pub async fn put_multi_at_timeout(&self, items: &[T], at: SystemTime, timeout: Duration) -> Result<String> {
        self.put_node(naming::delay_prefix(epoch_ms(at))?, items, Some(timeout)).await
    }

    /// Adds `item`, to be taken `delay` from now: at once for `Duration::ZERO`; a delay too long
    /// to add to the clock (`Duration::MAX`) lands about 30 years from now.
    ///
    /// # Errors
    /// As [`put_at`](Self::put_at).
    ///
    /// # Cancel safety
    /// As [`put_at`](Self::put_at).
    pub async fn put_after(&self, item: &T, delay: Duration) -> Result<String> {
        self.put_at(item, deadline::wall_later(SystemTime::now(), delay)).await
    }
}
