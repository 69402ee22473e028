//! `InterProcessReadWriteLock`: shared readers, exclusive writers, on one path.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::CreateMode;

use super::deadline::{held, in_time, Forever, Until, Wait, Waited};
use super::driver::{sort_key_multi, Driver, Exclusive, Read, READ_NAME, WRITE_NAME};
use super::engine::{self, Acquired, Request};
use super::handle::Shared;
use super::held::HeldNode;
use super::mutex::participants;
use super::owner::Owners;
use super::reentrant::{acquire_reentrant, held_by_current, Entry, LockGuard};
use crate::error::{Error, Result};
use crate::framework::{paths, validate_ttl, Framework};

/// A read-write lock across processes: Curator's `InterProcessReadWriteLock`.
///
/// Readers share; a writer excludes readers and writers. Fair: a reader queued behind a
/// writer waits for it. Both sides are re-entrant per task, like [`InterProcessMutex`](crate::InterProcessMutex).
///
/// * **Downgrade**: a task holding the write lock may take the read lock (it is granted at
///   once, with Curator's layout: a plain ephemeral `__READ__` node carrying the write node's
///   sequence) and then release the write lock.
/// * **Upgrade** (holding only the read lock, asking for the write lock) returns
///   [`Error::Unsupported`] at once. Curator waits forever there: the writer would wait for
///   its own reader.
/// * A reader behind writers watches the nearest writer ahead of it, so a writer's release
///   wakes only the readers right behind it.
///
/// # Curator compatibility
/// Nodes `<path>/_c_<uuid>-__READ__<seq>` and `<path>/_c_<uuid>-__WRIT__<seq>`, sorted by
/// sequence; a Curator process and this one exclude each other.
#[derive(Debug, Clone)]
pub struct InterProcessReadWriteLock {
    shared: Arc<Shared<State>>,
}

/// The holders of each side, per task.
#[derive(Debug, Default)]
struct State {
    readers: Arc<Owners<Entry>>,
    writers: Arc<Owners<Entry>>,
    /// Contender nodes are TTL nodes with this time to live (a server-side lease).
    server_ttl: Option<Duration>,
}

impl InterProcessReadWriteLock {
    /// A read-write lock at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`].
    pub fn new(fw: &Framework, path: &str) -> Result<Self> {
        Ok(Self { shared: Shared::new(fw, path, State::default())? })
    }

    /// Opts in to a server-side lease, as
    /// [`InterProcessMutex::with_server_ttl`](crate::InterProcessMutex::with_server_ttl) does
    /// for the mutex: the read and write contender nodes are TTL nodes (same names, so
    /// Curator's lock queues behind them), touched while they wait and by renewing a
    /// [`LeasedHold`](crate::LeasedHold), reaped by the server once untouched for `ttl`.
    /// (The read node a write holder downgrades to stays an ephemeral node.) Call it on a new
    /// handle, before taking its read or write side.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a TTL of zero or beyond the server's maximum. Acquiring
    /// answers [`Error::Unsupported`] where the server has TTL nodes off.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// use zk_recipes::{InterProcessReadWriteLock, LeasedHold};
    /// let lease = Duration::from_secs(20);
    /// let lock = InterProcessReadWriteLock::new(&fw, "/locks/table")?.with_server_ttl(lease)?;
    /// let held = LeasedHold::acquire_with_lease(&lock.write_lock(), lease).await?;
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_server_ttl(self, ttl: Duration) -> Result<Self> {
        validate_ttl(ttl)?;
        let s = &self.shared;
        let state = State { server_ttl: Some(ttl), ..State::default() };
        Ok(Self { shared: Arc::new(Shared { fw: s.fw.clone(), path: s.path.clone(), state }) })
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The read side as a lock of its own (Curator's `readLock()`), e.g. for an
    /// [`InterProcessMultiLock`](crate::InterProcessMultiLock).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::sync::Arc;
    /// use zk_recipes::{InterProcessLock, InterProcessMultiLock, InterProcessReadWriteLock};
    /// let (a, b) = (InterProcessReadWriteLock::new(&fw, "/a")?, InterProcessReadWriteLock::new(&fw, "/b")?);
    /// let members: [Arc<dyn InterProcessLock>; 2] = [Arc::new(a.read_lock()), Arc::new(b.write_lock())];
    /// let guard = InterProcessMultiLock::new(members)?.acquire().await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn read_lock(&self) -> ReadLock {
        ReadLock { lock: self.clone() }
    }

    /// The write side as a lock of its own (Curator's `writeLock()`); see
    /// [`read_lock`](Self::read_lock).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: &zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let write = zk_recipes::InterProcessReadWriteLock::new(fw, "/a")?.write_lock();
    /// assert_eq!(write.path(), "/a");
    /// # Ok(()) }
    /// ```
    pub fn write_lock(&self) -> WriteLock {
        WriteLock { lock: self.clone() }
    }

    /// Waits for the read lock.
    ///
    /// # Errors
    /// The framework's errors; [`Error::LockLost`] when re-entering a lost hold.
    ///
    /// # Cancel safety
    /// Cancel safe: no node is left behind.
    pub async fn read(&self) -> Result<LockGuard> {
        self.read_until(Forever).await.map(held)
    }

    /// Waits at most `timeout` for the read lock (`Ok(None)` when it passed).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn read_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.read_until(Until(Instant::now() + timeout)).await.map(in_time)
    }

    /// Waits for the write lock.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the current task holds only the read lock (upgrade); the
    /// framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn write(&self) -> Result<LockGuard> {
        self.write_until(Forever).await.map(held)
    }

    /// Waits at most `timeout` for the write lock (`Ok(None)` when it passed).
    ///
    /// # Errors
    /// As [`write`](Self::write).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn write_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.write_until(Until(Instant::now() + timeout)).await.map(in_time)
    }

    pub(crate) async fn read_until<W: Wait>(&self, wait: W) -> Result<Waited<LockGuard, W>> {
        let s = &self.shared;
        acquire_reentrant::<W, _, _>(&s.state.readers, || async move {
            if let Some(write) = held_by_current(&s.state.writers) {
                return self.downgrade(write.node()).await.map(Ok);
            }
            self.contend(READ_NAME, &Read, wait).await
        })
        .await
    }

    pub(crate) async fn write_until<W: Wait>(&self, wait: W) -> Result<Waited<LockGuard, W>> {
        let s = &self.shared;
        if held_by_current(&s.state.writers).is_none() && held_by_current(&s.state.readers).is_some() {
            return Err(Error::Unsupported("upgrading a read lock to a write lock (it would deadlock)"));
        }
        acquire_reentrant::<W, _, _>(&s.state.writers, || self.contend(WRITE_NAME, &Exclusive::WRITE, wait)).await
    }

    async fn contend<W: Wait>(&self, name: &str, driver: &dyn Driver, wait: W) -> Result<Waited<HeldNode, W>> {
        let s = &self.shared;
        let ttl = s.state.server_ttl;
        let request =
            Request { dir: &s.path, name, data: s.fw.default_data(), driver, prefetch: None, ttl, recreate: true };
        Ok(engine::contend(&s.fw, &request, wait).await?.map(|a| HeldNode::new(&s.fw, a, false)))
    }

    /// The read node of a write holder: a plain ephemeral, protected node named after the
    /// write node's sequence, so that it keeps the writer's place in the queue.
    async fn downgrade(&self, write: &HeldNode) -> Result<HeldNode> {
        let s = &self.shared;
        let sequence = sort_key_multi(paths::node_name(write.path()), &[READ_NAME, WRITE_NAME]);
        let name = format!("{READ_NAME}{sequence}");
        let node = engine::create_owned(&s.fw, &s.path, &name, s.fw.default_data(), CreateMode::Ephemeral).await?;
        Ok(HeldNode::new(
            &s.fw,
            Acquired {
                path: node.path,
                stat: node.stat,
                status: s.fw.status(),
                mark: None,
                prefetched: None,
                waited: false,
                ttl: None,
                listing: None,
            },
            false,
        ))
    }

    /// All contender node names in queue order.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn participants(&self) -> Result<Vec<String>> {
        participants(&self.shared.fw, &self.shared.path, &Read).await
    }
}

/// The read side of an [`InterProcessReadWriteLock`] as a lock of its own (Curator's
/// `readLock()`): what [`InterProcessReadWriteLock::read_lock`] returns, an
/// [`InterProcessLock`](crate::InterProcessLock) (e.g. a member of an
/// [`InterProcessMultiLock`](crate::InterProcessMultiLock)). Shares the read-write lock's
/// re-entrancy bookkeeping: it is the same lock, not a copy.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessReadWriteLock;
/// let side = InterProcessReadWriteLock::new(&fw, "/locks/table")?.read_lock();
/// let guard = side.acquire().await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ReadLock {
    lock: InterProcessReadWriteLock,
}

impl ReadLock {
    /// Waits for the read lock: [`InterProcessReadWriteLock::read`].
    ///
    /// # Errors
    /// As [`InterProcessReadWriteLock::read`].
    ///
    /// # Cancel safety
    /// Cancel safe: no node is left behind.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::ReadLock) -> zk_recipes::Result<()> {
    /// side.acquire().await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.lock.read().await
    }

    /// Waits at most `timeout` for the read lock (`Ok(None)` when it passed):
    /// [`InterProcessReadWriteLock::read_timeout`].
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::ReadLock) -> zk_recipes::Result<()> {
    /// if let Some(guard) = side.acquire_timeout(std::time::Duration::from_secs(1)).await? {
    ///     guard.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.lock.read_timeout(timeout).await
    }

    /// The lock path (shared by both sides).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: &zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let side = zk_recipes::InterProcessReadWriteLock::new(fw, "/locks/table")?.read_lock();
    /// assert_eq!(side.path(), "/locks/table");
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        self.lock.path()
    }
}

/// The write side of an [`InterProcessReadWriteLock`] as a lock of its own (Curator's
/// `writeLock()`): what [`InterProcessReadWriteLock::write_lock`] returns, an
/// [`InterProcessLock`](crate::InterProcessLock) (e.g. a member of an
/// [`InterProcessMultiLock`](crate::InterProcessMultiLock)). Shares the read-write lock's
/// re-entrancy bookkeeping: it is the same lock, not a copy.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessReadWriteLock;
/// let side = InterProcessReadWriteLock::new(&fw, "/locks/table")?.write_lock();
/// let guard = side.acquire().await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct WriteLock {
    lock: InterProcessReadWriteLock,
}

impl WriteLock {
    /// Waits for the write lock: [`InterProcessReadWriteLock::write`].
    ///
    /// # Errors
    /// As [`InterProcessReadWriteLock::write`].
    ///
    /// # Cancel safety
    /// Cancel safe: no node is left behind.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::WriteLock) -> zk_recipes::Result<()> {
    /// side.acquire().await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.lock.write().await
    }

    /// Waits at most `timeout` for the write lock (`Ok(None)` when it passed):
    /// [`InterProcessReadWriteLock::write_timeout`].
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::WriteLock) -> zk_recipes::Result<()> {
    /// if let Some(guard) = side.acquire_timeout(std::time::Duration::from_secs(1)).await? {
    ///     guard.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.lock.write_timeout(timeout).await
    }

    /// The lock path (shared by both sides).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: &zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let side = zk_recipes::InterProcessReadWriteLock::new(fw, "/locks/table")?.write_lock();
    /// assert_eq!(side.path(), "/locks/table");
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        self.lock.path()
    }
}
