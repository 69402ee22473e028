//! The two sides of an [`InterProcessReadWriteLock`] as locks of their own (Curator's
//! `readLock()` / `writeLock()`).

use std::time::Duration;

use super::acquire::{Acquire, Wait, Waited};
use super::reentrant::LockGuard;
use super::rwlock::InterProcessReadWriteLock;
use super::write_guard::WriteGuard;
use crate::error::Result;
use crate::framework::Framework;

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
        self.acquire_forever().await
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
        self.acquire_within(timeout).await
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
        self.acquire_now().await
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
        self.acquire_forever().await
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
        self.acquire_within(timeout).await
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
        self.acquire_now().await
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

impl Acquire for ReadLock {
    type Guard = LockGuard;

    async fn acquire_until<W: Wait>(&self, wait: W) -> Result<Waited<LockGuard, W>> {
        self.lock.read_until(wait).await
    }
}

impl Acquire for WriteLock {
    type Guard = WriteGuard;

    async fn acquire_until<W: Wait>(&self, wait: W) -> Result<Waited<WriteGuard, W>> {
        self.lock.write_until(wait).await
    }
}
