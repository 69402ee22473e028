//! One shape for every hold: [`InterProcessLock`] (Curator's interface of the same name) and
//! the guard it returns, [`HeldLock`].

use std::fmt::Debug;
use std::ops::Deref;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::held::{HeldNode, LockGuard};
use super::leases::Lease;
use super::mutex::InterProcessMutex;
use super::rwlock::{ReadLock, WriteGuard, WriteLock};
use super::semaphore_mutex::InterProcessSemaphoreMutex;
use crate::error::{Error, Result};

mod sealed {
    /// Only this crate's locks are [`InterProcessLock`](super::InterProcessLock)s: the
    /// multi-lock's deadlock-free order relies on knowing every kind.
    pub trait Sealed {
        /// Among members on one path, the multi-lock acquires the lower rank first.
        fn rank(&self) -> u8;
        /// The framework the lock works through.
        fn framework(&self) -> &crate::framework::Framework;
    }
}

pub(crate) use sealed::Sealed;

/// The multi-lock's order among members on one path: mutex, write, read, semaphore mutex.
pub(crate) const MUTEX_RANK: u8 = 0;
pub(crate) const WRITE_RANK: u8 = 1;
pub(crate) const READ_RANK: u8 = 2;
pub(crate) const SEMAPHORE_RANK: u8 = 3;

/// A lock that can be held, of any kind: Curator's `InterProcessLock`.
///
/// Implemented by [`InterProcessMutex`], [`InterProcessSemaphoreMutex`] and both sides of an
/// [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock) ([`ReadLock`],
/// [`WriteLock`]); sealed (no other implementations). Object safe: hold any of them as
/// `Arc<dyn InterProcessLock>`, e.g. as the members of an
/// [`InterProcessMultiLock`](crate::InterProcessMultiLock). The futures are boxed and `Send`.
///
/// Two forms of one acquire, and how they relate: each lock type's own `acquire`,
/// `acquire_timeout` and `try_acquire` return its own guard ([`LockGuard`], [`WriteGuard`],
/// [`Lease`]: what that kind can do, such as re-entering or downgrading), and this trait's
/// return that same guard erased into a [`HeldLock`] (`From` each guard), which is what a
/// `dyn InterProcessLock` can promise. Both run the same code. A method call on the concrete
/// type picks its own form (Rust prefers inherent methods), also with this trait in scope; call
/// `InterProcessLock::acquire(&lock)`, or go through `dyn InterProcessLock`, for the erased
/// one — or convert a guard with `HeldLock::from(guard)`.
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
///     if let Some(held) = lock.try_acquire().await? {
///         println!("{} held as {} (token {})", lock.path(), held.path(), held.fencing_token());
///         held.release().await?;
///     }
/// }
/// # Ok(()) }
/// ```
pub trait InterProcessLock: Sealed + Send + Sync + Debug + 'static {
    /// Waits until the lock is held.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`acquire_timeout`](Self::acquire_timeout) with the time left.
    ///
    /// # Errors
    /// As the kind's own acquire: the framework's errors
    /// ([`Error::Closed`], [`Error::RetriesExhausted`]...).
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

    /// Waits at most `timeout`.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first (our node is deleted); otherwise as
    /// [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(lock: &dyn zk_recipes::InterProcessLock) -> zk_recipes::Result<()> {
    /// match lock.acquire_timeout(std::time::Duration::from_millis(500)).await {
    ///     Ok(held) => held.release().await?,
    ///     Err(e) if e.is_timeout() => println!("busy"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    fn acquire_timeout(&self, timeout: Duration) -> BoxFuture<'_, Result<HeldLock>>;

    /// Acquires only if that needs no waiting: `Ok(None)` when it is held (our node is
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
    /// # async fn demo(lock: &dyn zk_recipes::InterProcessLock) -> zk_recipes::Result<()> {
    /// if let Some(held) = lock.try_acquire().await? {
    ///     held.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    fn try_acquire(&self) -> BoxFuture<'_, Result<Option<HeldLock>>>;

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
trait ErasedGuard: Send + Sync + Debug {
    fn node(&self) -> &HeldNode;
    fn release(self: Box<Self>) -> BoxFuture<'static, Result<()>>;
    /// Another hold on the same node ([`LockGuard::reenter`]); leases are not re-entrant.
    fn reenter(&self) -> Result<HeldLock>;
    /// A read hold at this write hold's place in the queue (write holds only).
    fn read_beside(&self) -> Option<BoxFuture<'_, Result<HeldLock>>> {
        None
    }
}

impl ErasedGuard for LockGuard {
    fn node(&self) -> &HeldNode {
        self
    }

    fn release(self: Box<Self>) -> BoxFuture<'static, Result<()>> {
        Box::pin(LockGuard::release(*self))
    }

    fn reenter(&self) -> Result<HeldLock> {
        LockGuard::reenter(self).map(HeldLock::from)
    }
}

impl ErasedGuard for WriteGuard {
    fn node(&self) -> &HeldNode {
        self
    }

    fn release(self: Box<Self>) -> BoxFuture<'static, Result<()>> {
        Box::pin(WriteGuard::release(*self))
    }

    fn reenter(&self) -> Result<HeldLock> {
        WriteGuard::reenter(self).map(HeldLock::from)
    }

    fn read_beside(&self) -> Option<BoxFuture<'_, Result<HeldLock>>> {
        Some(Box::pin(async move { WriteGuard::read_beside(self).await.map(HeldLock::from) }))
    }
}

impl ErasedGuard for Lease {
    fn node(&self) -> &HeldNode {
        self
    }

    fn release(self: Box<Self>) -> BoxFuture<'static, Result<()>> {
        Box::pin(Lease::release(*self))
    }

    fn reenter(&self) -> Result<HeldLock> {
        Err(Error::Unsupported("re-entering a semaphore lease (leases are not re-entrant)"))
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
    guard: Box<dyn ErasedGuard>,
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
        self.guard.release().await
    }

    /// Re-enters this hold: another hold on the same node, at once (see
    /// [`LockGuard::reenter`]); the node is deleted when the last of them goes.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the hold is already known lost; [`Error::Unsupported`] for a
    /// semaphore's [`Lease`] (the semaphore mutex's hold included), which is not re-entrant.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(held: zk_recipes::HeldLock) -> zk_recipes::Result<()> {
    /// let again = held.reenter()?;
    /// assert_eq!(again.fencing_token(), held.fencing_token());
    /// # Ok(()) }
    /// ```
    pub fn reenter(&self) -> Result<HeldLock> {
        self.guard.reenter()
    }

    /// A read hold beside this write hold (multi-locks holding both sides of one read-write
    /// lock); `None` for any other hold.
    pub(crate) fn read_beside(&self) -> Option<BoxFuture<'_, Result<HeldLock>>> {
        self.guard.read_beside()
    }
}

impl Deref for HeldLock {
    type Target = HeldNode;

    fn deref(&self) -> &HeldNode {
        self.guard.node()
    }
}

impl From<LockGuard> for HeldLock {
    fn from(guard: LockGuard) -> Self {
        Self { guard: Box::new(guard) }
    }
}

impl From<WriteGuard> for HeldLock {
    fn from(guard: WriteGuard) -> Self {
        Self { guard: Box::new(guard) }
    }
}

impl From<Lease> for HeldLock {
    fn from(lease: Lease) -> Self {
        Self { guard: Box::new(lease) }
    }
}

/// Implements [`InterProcessLock`] for `$lock` at multi-lock `$rank`: its `Acquire` trio (the
/// same code as its own `acquire`, `acquire_timeout` and `try_acquire`), its guard erased into
/// a [`HeldLock`]. A macro rather than a blanket implementation, so that the docs list the
/// implementing types.
macro_rules! inter_process_lock {
    ($lock:ty, $rank:expr) => {
        impl Sealed for $lock {
            fn rank(&self) -> u8 {
                $rank
            }

            fn framework(&self) -> &crate::framework::Framework {
                <$lock>::framework(self)
            }
        }

        impl InterProcessLock for $lock {
            fn acquire(&self) -> BoxFuture<'_, Result<HeldLock>> {
                Box::pin(async move { <$lock>::acquire(self).await.map(HeldLock::from) })
            }

            fn acquire_timeout(&self, timeout: Duration) -> BoxFuture<'_, Result<HeldLock>> {
                Box::pin(async move { <$lock>::acquire_timeout(self, timeout).await.map(HeldLock::from) })
            }

            fn try_acquire(&self) -> BoxFuture<'_, Result<Option<HeldLock>>> {
                Box::pin(async move { Ok(<$lock>::try_acquire(self).await?.map(HeldLock::from)) })
            }

            fn path(&self) -> &str {
                <$lock>::path(self)
            }
        }
    };
}

// the multi-lock's order on one path: mutex, write, read, semaphore mutex (as before the trait)
inter_process_lock!(InterProcessMutex, MUTEX_RANK);
inter_process_lock!(WriteLock, WRITE_RANK);
inter_process_lock!(ReadLock, READ_RANK);
inter_process_lock!(InterProcessSemaphoreMutex, SEMAPHORE_RANK);
