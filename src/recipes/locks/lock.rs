//! One shape for every hold: [`InterProcessLock`] (Curator's interface of the same name) and
//! the guard it returns, [`HeldLock`].

use std::fmt::Debug;
use std::ops::Deref;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::held::HeldNode;
use super::lease::Lease;
use super::mutex::InterProcessMutex;
use super::reentrant::LockGuard;
use super::rwlock::{ReadLock, WriteLock};
use super::semaphore::InterProcessSemaphoreMutex;
use crate::error::Result;

mod sealed {
    /// Only this crate's locks are [`InterProcessLock`](super::InterProcessLock)s: the
    /// multi-lock's deadlock-free order relies on knowing every kind.
    pub trait Sealed {
        /// Among members on one path, the multi-lock acquires the lower rank first.
        fn rank(&self) -> u8;
    }
}

pub(crate) use sealed::Sealed;

/// A lock that can be held, of any kind: Curator's `InterProcessLock`.
///
/// Implemented by [`InterProcessMutex`], [`InterProcessSemaphoreMutex`] and both sides of an
/// [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock) ([`ReadLock`],
/// [`WriteLock`]); sealed (no other implementations). Object safe: hold any of them as
/// `Arc<dyn InterProcessLock>`, e.g. as the members of an
/// [`InterProcessMultiLock`](crate::InterProcessMultiLock). The futures are boxed and `Send`.
///
/// The lock types also have inherent `acquire` methods that return their own guard types
/// ([`LockGuard`], [`Lease`]); with the trait in scope, `lock.acquire()` still calls the
/// inherent method, and `InterProcessLock::acquire(&lock)` (or a `dyn InterProcessLock`) the
/// trait's, which returns the common [`HeldLock`].
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use zk_recipes::{InterProcessLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex};
///
/// let locks: Vec<Arc<dyn InterProcessLock>> = vec![
///     Arc::new(InterProcessMutex::new(&fw, "/locks/a")?),
///     Arc::new(InterProcessReadWriteLock::new(&fw, "/locks/b")?.write_lock()),
///     Arc::new(InterProcessSemaphoreMutex::new(&fw, "/locks/c")?),
/// ];
/// for lock in &locks {
///     if let Some(held) = lock.acquire_timeout(Duration::from_secs(1)).await? {
///         println!("{} held as {} (token {})", lock.path(), held.path(), held.fencing_token());
///         held.release().await?;
///     }
/// }
/// # Ok(()) }
/// ```
pub trait InterProcessLock: Sealed + Send + Sync + Debug + 'static {
    /// Waits until the lock is held.
    ///
    /// # Errors
    /// As the kind's own acquire: [`Error::LockLost`](crate::Error::LockLost) when
    /// re-entering a hold that was lost, [`Error::Unsupported`](crate::Error::Unsupported)
    /// for a read-to-write upgrade, the framework's errors
    /// ([`Error::Closed`](crate::Error::Closed), [`Error::RetriesExhausted`](crate::Error::RetriesExhausted)...).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future at any point leaves no node behind.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: &dyn zk_recipes::InterProcessLock) -> zk_recipes::Result<()> {
    /// let held = lock.acquire().await?;
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    fn acquire(&self) -> BoxFuture<'_, Result<HeldLock>>;

    /// Waits at most `timeout`: `Ok(None)` when it passed (our node is deleted).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: &dyn zk_recipes::InterProcessLock) -> zk_recipes::Result<()> {
    /// match lock.acquire_timeout(std::time::Duration::from_millis(500)).await? {
    ///     Some(held) => held.release().await?,
    ///     None => println!("busy"),
    /// }
    /// # Ok(()) }
    /// ```
    fn acquire_timeout(&self, timeout: Duration) -> BoxFuture<'_, Result<Option<HeldLock>>>;

    /// The lock path (for a semaphore mutex: its base path, not the leases directory).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: &zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::{InterProcessLock, InterProcessMutex};
    /// let lock: &dyn InterProcessLock = &InterProcessMutex::new(fw, "/locks/a")?;
    /// assert_eq!(lock.path(), "/locks/a");
    /// # Ok(()) }
    /// ```
    fn path(&self) -> &str;
}

/// What [`HeldLock`] wraps: a guard of one of the lock kinds.
trait Hold: Send + Sync + Debug {
    fn node(&self) -> &HeldNode;
    fn release(self: Box<Self>) -> BoxFuture<'static, Result<()>>;
}

impl Hold for LockGuard {
    fn node(&self) -> &HeldNode {
        self
    }

    fn release(self: Box<Self>) -> BoxFuture<'static, Result<()>> {
        Box::pin(LockGuard::release(*self))
    }
}

impl Hold for Lease {
    fn node(&self) -> &HeldNode {
        self
    }

    fn release(self: Box<Self>) -> BoxFuture<'static, Result<()>> {
        Box::pin(Lease::release(*self))
    }
}

/// The hold of any [`InterProcessLock`]: a [`LockGuard`] or a [`Lease`] behind one type.
///
/// Derefs to [`HeldNode`] (`path()`, `fencing_token()`, `lost()`...). Owned, `Send`, `Sync`,
/// `'static`. Dropping it releases in the background (guaranteed delete), as the guard it
/// wraps does; never blocks, never panics.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::{HeldLock, InterProcessMutex};
/// let held: HeldLock = InterProcessMutex::new(&fw, "/locks/a")?.acquire().await?.into();
/// println!("token {}", held.fencing_token());
/// held.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "the lock is released when the guard is dropped"]
#[derive(Debug)]
pub struct HeldLock {
    hold: Box<dyn Hold>,
}

impl HeldLock {
    /// Releases the hold (as the wrapped guard's `release`).
    ///
    /// # Errors
    /// [`Error::LockLost`](crate::Error::LockLost) when the hold had been lost before the
    /// release (nothing is left behind either way); the delete's error otherwise (the delete
    /// then continues in the background).
    ///
    /// # Cancel safety
    /// Cancel safe: if cancelled, the delete continues in the background.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(held: zk_recipes::HeldLock) -> zk_recipes::Result<()> {
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(self) -> Result<()> {
        self.hold.release().await
    }
}

impl Deref for HeldLock {
    type Target = HeldNode;

    fn deref(&self) -> &HeldNode {
        self.hold.node()
    }
}

impl From<LockGuard> for HeldLock {
    fn from(guard: LockGuard) -> Self {
        Self { hold: Box::new(guard) }
    }
}

impl From<Lease> for HeldLock {
    fn from(lease: Lease) -> Self {
        Self { hold: Box::new(lease) }
    }
}

/// Implements [`InterProcessLock`] for `$lock` with its inherent `$acquire` /
/// `$acquire_timeout` methods, at multi-lock `$rank`.
macro_rules! inter_process_lock {
    ($lock:ty, $rank:expr, $acquire:ident, $acquire_timeout:ident) => {
        impl Sealed for $lock {
            fn rank(&self) -> u8 {
                $rank
            }
        }

        impl InterProcessLock for $lock {
            fn acquire(&self) -> BoxFuture<'_, Result<HeldLock>> {
                Box::pin(async move { <$lock>::$acquire(self).await.map(HeldLock::from) })
            }

            fn acquire_timeout(&self, timeout: Duration) -> BoxFuture<'_, Result<Option<HeldLock>>> {
                Box::pin(async move { Ok(<$lock>::$acquire_timeout(self, timeout).await?.map(HeldLock::from)) })
            }

            fn path(&self) -> &str {
                <$lock>::path(self)
            }
        }
    };
}

// the multi-lock's order on one path: mutex, write, read, semaphore mutex (as before the trait)
inter_process_lock!(InterProcessMutex, 0, acquire, acquire_timeout);
inter_process_lock!(WriteLock, 1, acquire, acquire_timeout);
inter_process_lock!(ReadLock, 2, acquire, acquire_timeout);
inter_process_lock!(InterProcessSemaphoreMutex, 3, acquire, acquire_timeout);
