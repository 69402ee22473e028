//! `InterProcessReadWriteLock`: shared readers, exclusive writers, on one path.

use std::sync::Arc;
use std::time::Duration;

use super::acquire::{Acquire, Wait, Waited};
use super::contend::contend;
use super::driver::{Driver, Request};
use super::handle::Shared;
use super::held::HeldNode;
use super::mutex::participants;
use super::reentrant::{HoldCount, LockGuard};
use super::rules::{Exclusive, Read, Rules, READ_NAME, WRITE_NAME};
use super::write_guard::{Beside, WriteGuard};
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::framework::{validate_ttl, Framework};
use crate::observe::Kind;

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
    readers: Arc<HoldCount>,
    /// Write holds likewise.
    writers: Arc<HoldCount>,
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
        self.read_lock().acquire_forever().await
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
        self.read_lock().acquire_within(timeout).await
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
        self.read_lock().acquire_now().await
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
        self.write_lock().acquire_forever().await
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
        self.write_lock().acquire_within(timeout).await
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
        self.write_lock().acquire_now().await
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

    pub(crate) async fn read_until<W: Wait>(&self, wait: W) -> Result<Waited<LockGuard, W>> {
        let held = self.contend(false, wait).await?;
        Ok(held.map(|node| LockGuard::new(node, &self.shared.state.readers)))
    }

    pub(crate) async fn write_until<W: Wait>(&self, wait: W) -> Result<Waited<WriteGuard, W>> {
        let held = self.contend(true, wait).await?;
        let s = &self.shared;
        let beside = Beside { fw: s.fw.clone(), dir: s.path.clone(), readers: s.state.readers.clone() };
        Ok(held.map(|node| WriteGuard::new(LockGuard::new(node, &s.state.writers), beside)))
    }

    async fn contend<W: Wait>(&self, write: bool, wait: W) -> Result<Waited<HeldNode, W>> {
        let s = &self.shared;
        let driver = SideDriver { write, ttl: s.state.server_ttl };
        let request = Request { dir: &s.path, data: s.fw.default_data(), driver: &driver };
        Ok(contend(&s.fw, &request, wait).await?.waited()?.map(|a| HeldNode::new(&s.fw, a, true)))
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

/// A side's driver: `__READ__` or `__WRIT__` nodes (TTL nodes when the lock has a server
/// TTL), ordered by Curator's read-write predicates; no local queue (a reader queued among
/// writers means something while it waits).
#[derive(Debug)]
struct SideDriver {
    write: bool,
    ttl: Option<Duration>,
}

impl Driver for SideDriver {
    fn kind(&self) -> Kind {
        if self.write {
            Kind::Write
        } else {
            Kind::Read
        }
    }

    fn rules(&self) -> &dyn Rules {
        if self.write {
            &Exclusive::WRITE
        } else {
            &Read
        }
    }

    fn node_name(&self) -> &str {
        if self.write {
            WRITE_NAME
        } else {
            READ_NAME
        }
    }

    fn server_ttl(&self) -> Option<Duration> {
        self.ttl
    }
}
