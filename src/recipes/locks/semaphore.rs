//! `InterProcessSemaphoreV2` and `InterProcessSemaphoreMutex`.

use std::time::Duration;

use tokio::time::Instant;

use super::deadline::{held, in_time, Forever, Until, Wait, Waited};
use super::driver::LeaseCount;
use super::engine::{self, Request};
use super::held::HeldNode;
use super::lease::Lease;
use super::mutex::{participants, InterProcessMutex};
use crate::error::{Error, Result};
use crate::framework::{paths, Framework};
use crate::recipes::layout::{LEASE_NAME, SEMAPHORE_LEASES, SEMAPHORE_LOCKS};

/// A counting semaphore across processes: Curator's `InterProcessSemaphoreV2`.
///
/// At most `max_leases` leases are held at once by all participants together. Layout (as
/// Curator): an [`InterProcessMutex`] at `<path>/locks` serialises acquirers; leases are
/// ephemeral-sequential nodes `<path>/leases/_c_<uuid>-lease-<seq>`; a holder of the mutex
/// creates its lease node and waits until there are at most `max_leases` lease nodes.
///
/// # Notable behaviors
/// * `max_leases` is a convention every participant must agree on: nothing on the server
///   checks it (as in Curator).
/// * [`acquire_many`](Self::acquire_many) takes all its leases under one hold of the internal
///   mutex (Curator takes it once per lease, which can deadlock two `acquire(2)` callers at
///   max 2: each gets one lease and waits for a second forever).
/// * Not re-entrant: every acquire takes new leases.
///
/// # Curator compatibility
/// Same nodes, names and protocol as Curator 5.x; a Curator process and this one share the
/// lease count.
#[derive(Debug, Clone)]
pub struct InterProcessSemaphoreV2 {
    fw: Framework,
    leases_dir: String,
    lock: InterProcessMutex,
    max_leases: usize,
}

impl InterProcessSemaphoreV2 {
    /// A semaphore at `path` with `max_leases` leases.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; [`Error::InvalidArgument`] for zero leases or more than
    /// `i32::MAX`.
    pub fn new(fw: &Framework, path: &str, max_leases: usize) -> Result<Self> {
        paths::validate_recipe_path(path)?;
        if max_leases == 0 || max_leases > i32::MAX as usize {
            return Err(Error::InvalidArgument(format!("max leases must be in 1..={}, got {max_leases}", i32::MAX)));
        }
        Ok(Self {
            fw: fw.clone(),
            leases_dir: paths::join(path, SEMAPHORE_LEASES),
            lock: InterProcessMutex::new(fw, &paths::join(path, SEMAPHORE_LOCKS))?,
            max_leases,
        })
    }

    /// The maximum number of leases.
    pub fn max_leases(&self) -> usize {
        self.max_leases
    }

    /// Waits for one lease.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: no node (lease or internal lock) is left behind.
    pub async fn acquire(&self) -> Result<Lease> {
        self.acquire_one(Forever).await.map(held)
    }

    /// One lease, under `wait`.
    pub(crate) async fn acquire_one<W: Wait>(&self, wait: W) -> Result<Waited<Lease, W>> {
        match self.acquire_until(1, wait).await? {
            Ok(leases) => leases.into_iter().next().map(Ok).ok_or_else(|| Error::InvalidArgument("no lease".into())),
            Err(timed_out) => Ok(Err(timed_out)),
        }
    }

    /// Waits for `n` leases, all or nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `n` is 0 or more than `max_leases`; the framework's
    /// errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_many(&self, n: usize) -> Result<Vec<Lease>> {
        self.acquire_until(n, Forever).await.map(held)
    }

    /// Waits at most `timeout` for one lease (`Ok(None)` when it passed).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.acquire_one(Until(Instant::now() + timeout)).await.map(in_time)
    }

    /// Waits at most `timeout` for `n` leases, all or nothing (`Ok(None)` when it passed;
    /// leases taken meanwhile are returned).
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_many_timeout(&self, n: usize, timeout: Duration) -> Result<Option<Vec<Lease>>> {
        self.acquire_until(n, Until(Instant::now() + timeout)).await.map(in_time)
    }

    pub(crate) async fn acquire_until<W: Wait>(&self, n: usize, wait: W) -> Result<Waited<Vec<Lease>, W>> {
        if n == 0 || n > self.max_leases {
            return Err(Error::InvalidArgument(format!("cannot acquire {n} of {} leases", self.max_leases)));
        }
        let lock = match self.lock.acquire_until(wait).await? {
            Ok(lock) => lock,
            Err(timed_out) => return Ok(Err(timed_out)),
        };
        let driver = LeaseCount { max_leases: self.max_leases };
        let mut leases = Vec::with_capacity(n);
        let data = self.fw.default_data();
        for _ in 0..n {
            let request =
                Request { dir: &self.leases_dir, name: LEASE_NAME, data, driver: &driver, prefetch: None, ttl: None };
            match engine::contend(&self.fw, &request, wait).await {
                Ok(Ok(acquired)) => leases.push(Lease::new(HeldNode::new(&self.fw, acquired, false))),
                Ok(Err(timed_out)) => {
                    return_all(leases).await.ok();
                    release_quietly(lock).await;
                    return Ok(Err(timed_out));
                }
                Err(e) => {
                    return_all(leases).await.ok();
                    release_quietly(lock).await;
                    return Err(e);
                }
            }
        }
        // The lease holder need not wait for the internal lock's release: dropping sends its
        // delete at once (ordered before anything we do next) and finishes it in the background.
        drop(lock);
        Ok(Ok(leases))
    }

    /// The current lease nodes, in order.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn participants(&self) -> Result<Vec<String>> {
        participants(&self.fw, &self.leases_dir, &LeaseCount { max_leases: self.max_leases }).await
    }
}

async fn release_quietly(lock: super::reentrant::LockGuard) {
    if let Err(e) = lock.release().await {
        tracing::debug!(error = %e, "semaphore: releasing the internal lock failed (continues in the background)");
    }
}

/// Returns every lease (Curator's `returnAll`), reporting the first error.
///
/// # Errors
/// The first release error; all leases are returned either way.
///
/// # Cancel safety
/// Cancel safe: leases not yet returned are returned in the background when dropped.
pub async fn return_all(leases: impl IntoIterator<Item = Lease>) -> Result<()> {
    let mut first = Ok(());
    for lease in leases {
        if let Err(e) = lease.release().await {
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}

/// A non-re-entrant mutex: a [`InterProcessSemaphoreV2`] with one lease (Curator's
/// `InterProcessSemaphoreMutex`, same layout). A task that holds it and acquires again waits
/// like anyone else.
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
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire(&self) -> Result<Lease> {
        self.semaphore.acquire().await
    }

    /// Waits at most `timeout` (`Ok(None)` when it passed).
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.semaphore.acquire_timeout(timeout).await
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        paths::parent(&self.semaphore.leases_dir)
    }
}
