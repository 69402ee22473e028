//! The kinds of [`Queue`](super::Queue): how an item is named when it is put, and the order
//! it is taken in.

use super::naming::Layout;

mod sealed {
    /// Only this crate's kinds.
    pub trait Sealed {
        fn layout() -> super::Layout;
    }
}

/// A kind of [`Queue`](super::Queue): [`Fifo`], [`ById`], [`ByPriority`] or [`Delayed`].
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::queue::{Queue, QueueKind};
///
/// // code that only takes works with every kind of queue
/// async fn drain<K: QueueKind>(queue: &Queue<Vec<u8>, K>) -> zk_recipes::Result<usize> {
///     let mut n = 0;
///     while queue.try_take().await?.is_some() {
///         n += 1;
///     }
///     Ok(n)
/// }
/// let jobs = zk_recipes::DistributedQueue::new(&fw, "/queues/jobs")?;
/// println!("drained {}", drain(&jobs).await?);
/// # Ok(()) }
/// ```
pub trait QueueKind: sealed::Sealed + Send + Sync + 'static {}

/// Curator's `DistributedQueue`: items `queue-<seq>`, first in, first out.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::queue::{Fifo, Queue};
///
/// let queue: Queue<Vec<u8>, Fifo> = Queue::new(&fw, "/queues/fifo")?;
/// queue.put(&b"first".to_vec()).await?;
/// assert_eq!(queue.take().await?, b"first".to_vec()); // the oldest item first
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Fifo;

/// Curator's `DistributedIdQueue`: items `queue-|<id>|<seq>`, first in, first out; removable
/// by id.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::queue::{ById, Queue};
///
/// let queue: Queue<Vec<u8>, ById> = Queue::new(&fw, "/queues/by-id")?;
/// queue.put(&b"report".to_vec(), "job-7").await?;
/// queue.remove("job-7").await?;                       // withdrawn by its id
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ById;

/// Curator's `DistributedPriorityQueue`: items `queue-1<priority as 8 hex digits><seq>`,
/// lowest priority number first, then first in, first out.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::queue::{ByPriority, Queue};
///
/// let queue: Queue<Vec<u8>, ByPriority> = Queue::new(&fw, "/queues/by-priority")?;
/// queue.put(&b"later".to_vec(), 10).await?;
/// queue.put(&b"urgent".to_vec(), 1).await?;
/// assert_eq!(queue.take().await?, b"urgent".to_vec()); // the lowest priority number first
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ByPriority;

/// Curator's `DistributedDelayQueue`: items `queue-|<epoch ms in hex>|<seq>`, taken from their
/// time on, earliest first.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::queue::{Delayed, Queue};
///
/// let queue: Queue<Vec<u8>, Delayed> = Queue::new(&fw, "/queues/delayed")?;
/// queue.put_after(&b"reminder".to_vec(), std::time::Duration::from_secs(30)).await?;
/// let item = queue.take().await?;                      // not before 30 s from the put
/// # drop(item);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Delayed;

macro_rules! kind {
    ($kind:ty, $layout:expr) => {
        impl sealed::Sealed for $kind {
            fn layout() -> Layout {
                $layout
            }
        }
        impl QueueKind for $kind {}
    };
}

kind!(Fifo, Layout::Fifo);
kind!(ById, Layout::Id);
kind!(ByPriority, Layout::Priority);
kind!(Delayed, Layout::Delay);

/// The layout of kind `K`.
pub(crate) fn layout_of<K: QueueKind>() -> Layout {
    K::layout()
}
