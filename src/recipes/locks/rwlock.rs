//! `InterProcessReadWriteLock`: shared readers, exclusive writers, on one path; its two sides
//! as locks of their own ([`ReadLock`], [`WriteLock`], Curator's `readLock()` / `writeLock()`),
//! and the write side's guard, through which re-entry and downgrade go ([`WriteGuard`]).

use std::sync::Arc;
use std::time::Duration;

use std::ops::Deref;

use super::driver::{Driver, Exclusive, Reader, Request, READ_NAME, RW_NAMES, WRITE_NAME};
use super::engine::{self, contend, create_owned, Forever, Until, Wait, Waited};
use super::handle::Shared;
use super::held::{Acquired, HeldNode, LocalHolds, LockGuard};
use super::mutex::participants;
use super::order::sort_key_multi;
use crate::error::{Error, Result};
use crate::framework::{paths, validate_ttl, CreateMode, Framework, LossReason};

/// A read-write lock across processes: Curator's `InterProcessReadWriteLock`.
///
/// Readers share; a writer excludes readers and writers. Fair: a reader queued behind a
/// writer waits for it. As with [`InterProcessMutex`](crate::InterProcessMutex), every
/// `read()` / `write()` is a hold of its own, and re-entering goes through the guard one holds
/// ([`LockGuard::reenter`], [`WriteGuard::reenter`]).
///
/// * **Downgrade** goes through the write guard: [`WriteGuard::downgrade`] turns it into a
///   read guard at once, keeping the writer's place in the queue (Curator's layout: a plain
///   ephemeral `__READ__` node carrying the write node's sequence), then releases the write
///   node. Writers queued behind it stay out until the read guard is released.
/// * **Upgrade** does not exist: asking for the write lock while holding the read lock waits
///   for that read lock to be released — forever if the same code holds it, as with Curator
///   and with `tokio::sync::RwLock`. Release the read guard first.
/// * A reader behind writers watches the nearest writer ahead of it, so a writer's release
///   wakes only the readers right behind it.
///
/// # Curator compatibility
/// Nodes `<path>/_c_<uuid>-__READ__<seq>` and `<path>/_c_<uuid>-__WRIT__<seq>`, sorted by
/// sequence; a Curator process and this one exclude each other.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessReadWriteLock;
///
/// let lock = InterProcessReadWriteLock::new(&fw, "/locks/catalog")?;
/// {
///     let read = lock.read().await?;                 // readers share
///     read.release().await?;
/// }
/// let write = lock.write().await?;                   // a writer excludes everyone
/// // refresh, then keep reading what was written without letting another writer in between
/// let read = write.downgrade().await?;
/// read.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessReadWriteLock {
    shared: Arc<Shared<State>>,
}

/// What a read-write lock keeps besides its framework and path.
#[derive(Debug, Default)]
struct State {
    /// Read holds through this handle and its clones in this process.
    readers: Arc<LocalHolds>,
    /// Write holds likewise.
    writers: Arc<LocalHolds>,
    /// Contender nodes are TTL nodes with this time to live (a server TTL).
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

    /// Opts in to a server TTL, as
    /// [`InterProcessMutex::with_server_ttl`](crate::InterProcessMutex::with_server_ttl) does
    /// for the mutex: the read and write contender nodes are TTL nodes (same names, so
    /// Curator's lock queues behind them), touched while they wait and by renewing a
    /// [`TimedHold`](crate::TimedHold), reaped by the server once untouched for `ttl`.
    /// (The read node a write holder downgrades to stays an ephemeral node.) Call it on a new
    /// handle, before taking its read or write side.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a TTL under 1 ms (zero included) or beyond ZooKeeper's largest, 2^40 − 1 ms (about 34
    /// years; `Duration::MAX` included). Acquiring
    /// answers [`Error::ServerUnsupported`] where the server has TTL nodes off.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// use zk_recipes::{InterProcessReadWriteLock, TimedHold};
    /// let lease = Duration::from_secs(20);
    /// let lock = InterProcessReadWriteLock::new(&fw, "/locks/table")?.with_server_ttl(lease)?;
    /// let held = TimedHold::acquire(&lock.write_lock(), lease).await?;
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

    pub(crate) fn framework(&self) -> &Framework {
        &self.shared.fw
    }

    /// Waits for the read lock: a new hold with a node of its own (re-enter a read hold
    /// through its guard instead: [`LockGuard::reenter`]).
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`read_timeout`](Self::read_timeout) with the time left.
    ///
    /// # Errors
    /// The framework's errors ([`Error::Closed`], [`Error::RetriesExhausted`]...).
    ///
    /// # Cancel safety
    /// Cancel safe: no node is left behind.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: zk_recipes::InterProcessReadWriteLock) -> zk_recipes::Result<()> {
    /// let read = lock.read().await?;
    /// read.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn read(&self) -> Result<LockGuard> {
        engine::forever(self.read_until(Forever)).await
    }

    /// Waits at most `timeout` for the read lock.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first (our node is deleted); otherwise as
    /// [`read`](Self::read).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: zk_recipes::InterProcessReadWriteLock) -> zk_recipes::Result<()> {
    /// let read = lock.read_timeout(std::time::Duration::from_secs(1)).await?;
    /// read.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        engine::within(timeout, |wait| self.read_until(wait)).await
    }

    /// Takes the read lock only if that needs no waiting: `Ok(None)` when a writer holds it
    /// or is queued ahead (our node is deleted).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: zk_recipes::InterProcessReadWriteLock) -> zk_recipes::Result<()> {
    /// if let Some(read) = lock.try_read().await? {
    ///     read.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_read(&self) -> Result<Option<LockGuard>> {
        engine::now(self.read_until(Until::now())).await
    }

    /// Waits for the write lock: a new hold with a node of its own (re-enter a write hold
    /// through its guard instead: [`WriteGuard::reenter`]). Waits for every read hold ahead,
    /// this process's own included: there is no upgrade.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`write_timeout`](Self::write_timeout) with the time left.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: zk_recipes::InterProcessReadWriteLock) -> zk_recipes::Result<()> {
    /// let write = lock.write().await?;
    /// let read = write.downgrade().await?; // readers may join from now on
    /// read.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn write(&self) -> Result<WriteGuard> {
        engine::forever(self.write_until(Forever)).await
    }

    /// Waits at most `timeout` for the write lock.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first (our node is deleted); otherwise as
    /// [`write`](Self::write).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: zk_recipes::InterProcessReadWriteLock) -> zk_recipes::Result<()> {
    /// let write = lock.write_timeout(std::time::Duration::from_secs(1)).await?;
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn write_timeout(&self, timeout: Duration) -> Result<WriteGuard> {
        engine::within(timeout, |wait| self.write_until(wait)).await
    }

    /// Takes the write lock only if that needs no waiting: `Ok(None)` when anyone holds it
    /// or waits ahead (our node is deleted).
    ///
    /// # Errors
    /// As [`write`](Self::write).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: zk_recipes::InterProcessReadWriteLock) -> zk_recipes::Result<()> {
    /// if let Some(write) = lock.try_write().await? {
    ///     write.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_write(&self) -> Result<Option<WriteGuard>> {
        engine::now(self.write_until(Until::now())).await
    }

    /// Whether this process holds the read lock through this handle or a clone of it (its
    /// sides included).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: zk_recipes::InterProcessReadWriteLock) -> zk_recipes::Result<()> {
    /// let read = lock.read().await?;
    /// assert!(lock.is_read_acquired_in_this_process());
    /// # Ok(()) }
    /// ```
    pub fn is_read_acquired_in_this_process(&self) -> bool {
        self.shared.state.readers.count() > 0
    }

    /// Whether this process holds the write lock through this handle or a clone of it (its
    /// sides included).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: zk_recipes::InterProcessReadWriteLock) -> zk_recipes::Result<()> {
    /// let write = lock.write().await?;
    /// assert!(lock.is_write_acquired_in_this_process());
    /// # Ok(()) }
    /// ```
    pub fn is_write_acquired_in_this_process(&self) -> bool {
        self.shared.state.writers.count() > 0
    }

    /// A read hold, contending until `wait` ends (the read side's driver: [`Reader`]).
    pub(crate) async fn read_until<W: Wait>(&self, wait: W) -> Result<Waited<LockGuard, W>> {
        let held = self.contend(&Reader { ttl: self.shared.state.server_ttl }, wait).await?;
        Ok(held.map(|node| LockGuard::new(node, &self.shared.state.readers)))
    }

    /// A write hold, contending until `wait` ends (the write side's driver:
    /// [`Exclusive::writer`]).
    pub(crate) async fn write_until<W: Wait>(&self, wait: W) -> Result<Waited<WriteGuard, W>> {
        let s = &self.shared;
        let held = self.contend(&Exclusive::writer().with_ttl(s.state.server_ttl), wait).await?;
        let beside = Beside { fw: s.fw.clone(), dir: s.path.clone(), readers: s.state.readers.clone() };
        Ok(held.map(|node| WriteGuard::new(LockGuard::new(node, &s.state.writers), beside)))
    }

    async fn contend<W: Wait>(&self, driver: &dyn Driver, wait: W) -> Result<Waited<HeldNode, W>> {
        let s = &self.shared;
        let request = Request { dir: &s.path, data: s.fw.default_data(), driver };
        Ok(contend(&s.fw, &request, wait).await?.waited()?.map(|a| HeldNode::new(&s.fw, a)))
    }

    /// All contender node names in queue order.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn participants(&self) -> Result<Vec<String>> {
        participants(&self.shared.fw, &self.shared.path, RW_NAMES).await
    }
}

/// The read side of an [`InterProcessReadWriteLock`] as a lock of its own (Curator's
/// `readLock()`): what [`InterProcessReadWriteLock::read_lock`] returns, an
/// [`InterProcessLock`](crate::InterProcessLock) (e.g. a member of an
/// [`InterProcessMultiLock`](crate::InterProcessMultiLock)). It is the same lock, not a
/// copy: its holds count in the read-write lock's
/// [`is_read_acquired_in_this_process`](InterProcessReadWriteLock::is_read_acquired_in_this_process).
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
    pub(super) lock: InterProcessReadWriteLock,
}

impl ReadLock {
    /// Waits for the read lock: [`InterProcessReadWriteLock::read`].
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`acquire_timeout`](Self::acquire_timeout) with the time left.
    ///
    /// # Errors
    /// As [`InterProcessReadWriteLock::read`].
    ///
    /// # Cancel safety
    /// Cancel safe: no node is left behind.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::lock::ReadLock) -> zk_recipes::Result<()> {
    /// side.acquire().await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.lock.read().await
    }

    /// Waits at most `timeout` for the read lock:
    /// [`InterProcessReadWriteLock::read_timeout`].
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when `timeout` passed first; otherwise as
    /// [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::lock::ReadLock) -> zk_recipes::Result<()> {
    /// let guard = side.acquire_timeout(std::time::Duration::from_secs(1)).await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.lock.read_timeout(timeout).await
    }

    /// Takes the read lock only if that needs no waiting (`Ok(None)` otherwise):
    /// [`InterProcessReadWriteLock::try_read`].
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::lock::ReadLock) -> zk_recipes::Result<()> {
    /// if let Some(guard) = side.try_acquire().await? {
    ///     guard.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.lock.try_read().await
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

    pub(crate) fn framework(&self) -> &Framework {
        self.lock.framework()
    }
}

/// The write side of an [`InterProcessReadWriteLock`] as a lock of its own (Curator's
/// `writeLock()`): what [`InterProcessReadWriteLock::write_lock`] returns, an
/// [`InterProcessLock`](crate::InterProcessLock) (e.g. a member of an
/// [`InterProcessMultiLock`](crate::InterProcessMultiLock)). It is the same lock, not a
/// copy: its holds count in the read-write lock's
/// [`is_write_acquired_in_this_process`](InterProcessReadWriteLock::is_write_acquired_in_this_process).
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
    pub(super) lock: InterProcessReadWriteLock,
}

impl WriteLock {
    /// Waits for the write lock: [`InterProcessReadWriteLock::write`].
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`acquire_timeout`](Self::acquire_timeout) with the time left.
    ///
    /// # Errors
    /// As [`InterProcessReadWriteLock::write`].
    ///
    /// # Cancel safety
    /// Cancel safe: no node is left behind.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::lock::WriteLock) -> zk_recipes::Result<()> {
    /// side.acquire().await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<WriteGuard> {
        self.lock.write().await
    }

    /// Waits at most `timeout` for the write lock:
    /// [`InterProcessReadWriteLock::write_timeout`].
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when `timeout` passed first; otherwise as
    /// [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::lock::WriteLock) -> zk_recipes::Result<()> {
    /// let guard = side.acquire_timeout(std::time::Duration::from_secs(1)).await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<WriteGuard> {
        self.lock.write_timeout(timeout).await
    }

    /// Takes the write lock only if that needs no waiting (`Ok(None)` otherwise):
    /// [`InterProcessReadWriteLock::try_write`].
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(side: zk_recipes::lock::WriteLock) -> zk_recipes::Result<()> {
    /// if let Some(guard) = side.try_acquire().await? {
    ///     guard.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<WriteGuard>> {
        self.lock.try_write().await
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

    pub(crate) fn framework(&self) -> &Framework {
        self.lock.framework()
    }
}

impl InterProcessReadWriteLock {
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
}

/// What a write guard needs of its read-write lock to hold a read beside itself.
#[derive(Debug, Clone)]
pub(crate) struct Beside {
    pub fw: Framework,
    /// The lock path.
    pub dir: String,
    /// The lock's read holds in this process.
    pub readers: Arc<LocalHolds>,
}

/// A held write lock of an [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock).
///
/// Derefs to [`HeldNode`] (`path()`, `fencing_token()`, `lost()`...). Owned, `Send` and
/// `'static`. Dropping it releases in the background (guaranteed delete), never blocks, never
/// panics. Re-entering ([`reenter`](Self::reenter)) and downgrading to a read hold
/// ([`downgrade`](Self::downgrade)) go through it: possession of the guard is the proof.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessReadWriteLock;
/// let lock = InterProcessReadWriteLock::new(&fw, "/locks/table")?;
/// let write = lock.write().await?;
/// // ... rewrite the table ...
/// let read = write.downgrade().await?; // readers may join, writers still wait
/// // ... read what was written ...
/// read.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "the lock is released when the guard is dropped"]
#[derive(Debug)]
pub struct WriteGuard {
    guard: LockGuard,
    beside: Beside,
}

impl WriteGuard {
    pub(crate) fn new(guard: LockGuard, beside: Beside) -> Self {
        Self { guard, beside }
    }

    /// Re-enters this write hold: another guard on the same node, at once (see
    /// [`LockGuard::reenter`]).
    ///
    /// # Errors
    /// [`Error::LockLost`] when the hold is already known lost.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(write: zk_recipes::WriteGuard) -> zk_recipes::Result<()> {
    /// let again = write.reenter()?;
    /// assert_eq!(again.guard_count(), 2);
    /// # Ok(()) }
    /// ```
    #[doc(alias = "acquire")]
    pub fn reenter(&self) -> Result<WriteGuard> {
        Ok(WriteGuard { guard: self.guard.reenter()?, beside: self.beside.clone() })
    }

    /// Turns this write hold into a read hold that keeps the writer's place in the queue
    /// (Curator's downgrade: take the read lock while holding the write lock, then release the
    /// write lock). The read hold is granted at once; writers queued behind stay out until it
    /// is released, readers may join. Then this guard is released; the write node is deleted
    /// unless other guards re-entered from this one still hold it.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the write hold is lost (nothing is created, this guard is
    /// dropped); the framework's errors when the read node cannot be created (this guard is
    /// dropped, its node deleted in the background).
    ///
    /// # Cancel safety
    /// Cancel safe: dropped before it completes, no read node is left behind, and the write
    /// hold is released in the background.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(write: zk_recipes::WriteGuard) -> zk_recipes::Result<()> {
    /// let read = write.downgrade().await?;
    /// read.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn downgrade(self) -> Result<LockGuard> {
        let read = self.read_beside().await?;
        if let Err(e) = self.release().await {
            tracing::debug!(error = %e, "downgrade: releasing the write node failed (continues in the background)");
        }
        Ok(read)
    }

    /// A read hold beside this write hold, at its place in the queue; this guard keeps holding.
    ///
    /// A plain ephemeral `__READ__` node with the write node's sequence, granted at once
    /// (nothing that sorts before it can be a writer). Refused when the write hold is lost, or
    /// when the read node was made by another session than the write node's (the session was
    /// re-created meanwhile): a read node at an old place in the queue would sort before
    /// writers that hold now.
    pub(crate) async fn read_beside(&self) -> Result<LockGuard> {
        let (write, b) = (&*self.guard, &self.beside);
        let lost = |reason| Error::LockLost { path: write.path().to_string(), reason };
        if let Some(reason) = write.loss() {
            return Err(lost(reason));
        }
        let sequence = sort_key_multi(paths::node_name(write.path()), &[READ_NAME, WRITE_NAME]);
        let name = format!("{READ_NAME}{sequence}");
        let status = b.fw.status();
        let node = create_owned(&b.fw, &b.dir, &name, b.fw.default_data(), CreateMode::Ephemeral).await?;
        let acquired = Acquired::created(node.path, node.stat, status, crate::observe::Kind::Read);
        // a TTL write node has no ephemeral owner: its session is the one that created it
        let same_session = acquired.stat.ephemeral_owner == write.session_id();
        let read = LockGuard::new(HeldNode::new(&b.fw, acquired), &b.readers);
        match write.loss() {
            None if same_session => Ok(read),
            reason => {
                drop(read); // its node is deleted in the background
                Err(lost(reason.unwrap_or(LossReason::SessionLost)))
            }
        }
    }

    /// Releases this hold (see [`LockGuard::release`]).
    ///
    /// # Errors
    /// [`Error::LockLost`] when the lock had been lost before the release; the delete's error
    /// otherwise (it continues in the background).
    ///
    /// # Cancel safety
    /// Cancel safe: if cancelled, the delete continues in the background.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(write: zk_recipes::WriteGuard) -> zk_recipes::Result<()> {
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(self) -> Result<()> {
        self.guard.release().await
    }

    /// How many guards share this guard's hold (see [`LockGuard::guard_count`]).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(write: zk_recipes::WriteGuard) {
    /// assert_eq!(write.guard_count(), 1);
    /// # }
    /// ```
    pub fn guard_count(&self) -> usize {
        self.guard.guard_count()
    }

    /// The former name of [`guard_count`](Self::guard_count).
    #[deprecated(since = "0.1.0", note = "renamed `guard_count`: it counts the guards that share one hold")]
    pub fn hold_count(&self) -> usize {
        self.guard_count()
    }
}

impl Deref for WriteGuard {
    type Target = HeldNode;

    fn deref(&self) -> &HeldNode {
        &self.guard
    }
}

impl From<WriteGuard> for LockGuard {
    /// The write hold as a plain [`LockGuard`] (it can no longer downgrade).
    fn from(write: WriteGuard) -> LockGuard {
        write.guard
    }
}
