//! `InterProcessSemaphoreMutex`: a semaphore of one lease, as a lock.

use std::time::Duration;

use super::leases::Lease;
use super::semaphore::InterProcessSemaphoreV2;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::framework::{paths, Framework};

/// A non-re-entrant mutex: a [`InterProcessSemaphoreV2`] with one lease (Curator's
/// `InterProcessSemaphoreMutex`, same layout). A task that holds it and acquires again waits
/// like anyone else.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::InterProcessSemaphoreMutex;
///
/// let mutex = InterProcessSemaphoreMutex::new(&fw, "/locks/migration")?;
/// let lease = mutex.acquire_timeout(Duration::from_secs(10)).await?;
/// // not re-entrant: a second acquire here would wait for this lease
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessSemaphoreMutex {
    semaphore: InterProcessSemaphoreV2,
}

impl InterProcessSemaphoreMutex {
    /// A semaphore mutex at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`].
    pub fn new(fw: &Framework, path: &str) -> Result<Self> {
        Ok(Self { semaphore: InterProcessSemaphoreV2::new(fw, path, 1)? })
    }

    /// Waits until held.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`acquire_timeout`](Self::acquire_timeout) with the time left.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire(&self) -> Result<Lease> {
        self.semaphore.acquire().await
    }

    /// Waits at most `timeout`.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first (nothing is left behind); the
    /// framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        self.semaphore.acquire_timeout(timeout).await
    }

    /// Takes the mutex only if that needs no waiting: `Ok(None)` when it is held (our node is
    /// deleted).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(mutex: zk_recipes::InterProcessSemaphoreMutex) -> zk_recipes::Result<()> {
    /// if let Some(lease) = mutex.try_acquire().await? {
    ///     lease.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        self.semaphore.try_acquire().await
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        paths::parent(&self.semaphore.leases_dir)
    }

    pub(crate) fn framework(&self) -> &Framework {
        &self.semaphore.fw
    }
}
