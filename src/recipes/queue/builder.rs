//! [`QueueBuilder`]: a queue's options (Curator's `QueueBuilder`), and the constructors of
//! [`Queue`].

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use super::framing::{BytesSerializer, QueueSerializer};
use super::kinds::{layout_of, QueueKind};
use super::queue::Queue;
use super::state::Engine;
use crate::error::Result;
use crate::framework::Framework;

/// Options of a [`Queue`] (Curator's `QueueBuilder`): the item serializer, the lock path,
/// a bound.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::queue::{DistributedQueue, QueueBuilder};
///
/// // a bounded queue whose lock nodes are where Curator's consumers look for them
/// let queue: DistributedQueue = QueueBuilder::new(&fw, "/queues/mail")
///     .lock_path("/queues/mail-locks")
///     .max_items(10_000)
///     .build()?;
/// queue.put(&b"hello".to_vec()).await?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until built"]
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

    /// The queue, of kind `K` ([`Fifo`](crate::queue::Fifo), [`ById`](crate::queue::ById),
    /// [`ByPriority`](crate::queue::ByPriority), [`Delayed`](crate::queue::Delayed)).
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for an invalid path or lock path; [`Error::InvalidArgument`](crate::Error::InvalidArgument)
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
