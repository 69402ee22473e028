//! `InterProcessMultiLock`: several locks as one, all or nothing.

use std::time::Duration;

use futures_util::future::select_all;
use tokio::time::Instant;

use super::deadline::{held, in_time, Forever, Until, Wait, Waited};
use super::held::{HeldNode, LossReason};
use super::lease::Lease;
use super::mutex::InterProcessMutex;
use super::reentrant::LockGuard;
use super::rwlock::InterProcessReadWriteLock;
use super::semaphore::InterProcessSemaphoreMutex;
use crate::error::{Error, Result};
use crate::framework::Framework;

/// One member of an [`InterProcessMultiLock`].
#[non_exhaustive]
#[derive(Debug, Clone)]
pub enum Lockable {
    /// An [`InterProcessMutex`].
    Mutex(InterProcessMutex),
    /// The read side of an [`InterProcessReadWriteLock`].
    Read(InterProcessReadWriteLock),
    /// The write side of an [`InterProcessReadWriteLock`].
    Write(InterProcessReadWriteLock),
    /// An [`InterProcessSemaphoreMutex`].
    SemaphoreMutex(InterProcessSemaphoreMutex),
}

impl Lockable {
    fn path(&self) -> &str {
        match self {
            Self::Mutex(m) => m.path(),
            Self::Read(l) | Self::Write(l) => l.path(),
            Self::SemaphoreMutex(m) => m.path(),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Self::Mutex(_) => 0,
            Self::Write(_) => 1,
            Self::Read(_) => 2,
            Self::SemaphoreMutex(_) => 3,
        }
    }

    async fn acquire_until<W: Wait>(&self, wait: W) -> Result<Waited<Held, W>> {
        Ok(match self {
            Self::Mutex(m) => m.acquire_until(wait).await?.map(Held::Lock),
            Self::Read(l) => l.read_until(wait).await?.map(Held::Lock),
            Self::Write(l) => l.write_until(wait).await?.map(Held::Lock),
            Self::SemaphoreMutex(m) => m.acquire_until(wait).await?.map(Held::Lease),
        })
    }
}

impl From<InterProcessMutex> for Lockable {
    fn from(m: InterProcessMutex) -> Self {
        Self::Mutex(m)
    }
}

impl From<InterProcessSemaphoreMutex> for Lockable {
    fn from(m: InterProcessSemaphoreMutex) -> Self {
        Self::SemaphoreMutex(m)
    }
}

#[derive(Debug)]
enum Held {
    Lock(LockGuard),
    Lease(Lease),
}

impl Held {
    fn node(&self) -> &HeldNode {
        match self {
            Held::Lock(g) => g,
            Held::Lease(l) => l,
        }
    }

    async fn release(self) -> Result<()> {
        match self {
            Held::Lock(g) => g.release().await,
            Held::Lease(l) => l.release().await,
        }
    }
}

/// Several locks held as one: Curator's `InterProcessMultiLock`.
///
/// All or nothing: the members are acquired one by one in a stable order (by path, so that
/// two processes locking overlapping sets cannot deadlock each other), under ONE deadline for
/// the whole set; if any member fails or the deadline passes, the members already held are
/// released in reverse order and nothing stays held.
#[derive(Debug, Clone)]
pub struct InterProcessMultiLock {
    members: Vec<Lockable>,
}

impl InterProcessMultiLock {
    /// A multi-lock over `members`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty set.
    pub fn new(members: impl IntoIterator<Item = Lockable>) -> Result<Self> {
        let mut members: Vec<Lockable> = members.into_iter().collect();
        if members.is_empty() {
            return Err(Error::InvalidArgument("a multi-lock needs at least one lock".into()));
        }
        members.sort_by(|a, b| a.path().cmp(b.path()).then(a.rank().cmp(&b.rank())));
        Ok(Self { members })
    }

    /// A multi-lock of [`InterProcessMutex`]es at `paths` (Curator's convenience constructor).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no paths; [`Error::InvalidPath`].
    pub fn from_paths<S: AsRef<str>>(fw: &Framework, paths: impl IntoIterator<Item = S>) -> Result<Self> {
        let members = paths
            .into_iter()
            .map(|p| InterProcessMutex::new(fw, p.as_ref()).map(Lockable::Mutex))
            .collect::<Result<Vec<_>>>()?;
        Self::new(members)
    }

    /// Waits until every member is held.
    ///
    /// # Errors
    /// The first member's error (after rolling back).
    ///
    /// # Cancel safety
    /// Cancel safe: members already held are released in the background.
    pub async fn acquire(&self) -> Result<MultiLockGuard> {
        self.acquire_until(Forever).await.map(held)
    }

    /// Waits at most `timeout` for the whole set (`Ok(None)` when it passed; nothing held).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<MultiLockGuard>> {
        self.acquire_until(Until(Instant::now() + timeout)).await.map(in_time)
    }

    async fn acquire_until<W: Wait>(&self, wait: W) -> Result<Waited<MultiLockGuard, W>> {
        let mut held = Vec::with_capacity(self.members.len());
        for member in &self.members {
            match member.acquire_until(wait).await {
                Ok(Ok(h)) => held.push(h),
                Ok(Err(timed_out)) => {
                    rollback(held).await;
                    return Ok(Err(timed_out));
                }
                Err(e) => {
                    rollback(held).await;
                    return Err(e);
                }
            }
        }
        Ok(Ok(MultiLockGuard { held }))
    }
}

async fn rollback(held: Vec<Held>) {
    for h in held.into_iter().rev() {
        if let Err(e) = h.release().await {
            tracing::debug!(error = %e, "multi-lock rollback: release failed (continues in the background)");
        }
    }
}

/// The hold of every member of an [`InterProcessMultiLock`]. Dropping it releases all in the
/// background.
#[must_use = "the locks are released when the guard is dropped"]
#[derive(Debug)]
pub struct MultiLockGuard {
    held: Vec<Held>,
}

impl MultiLockGuard {
    /// Each member's node, in acquisition order.
    pub fn nodes(&self) -> impl Iterator<Item = &HeldNode> {
        self.held.iter().map(Held::node)
    }

    /// Whether any member's hold is lost.
    pub fn is_lost(&self) -> bool {
        self.nodes().any(HeldNode::is_lost)
    }

    /// Resolves when any member's hold is lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> LossReason {
        let all = self.nodes().map(|n| Box::pin(n.lost()));
        select_all(all).await.0
    }

    /// Releases every member in reverse order.
    ///
    /// # Errors
    /// The first release error; every member is released either way.
    ///
    /// # Cancel safety
    /// Cancel safe: the rest is released in the background.
    pub async fn release(mut self) -> Result<()> {
        let mut first = Ok(());
        while let Some(h) = self.held.pop() {
            if let Err(e) = h.release().await {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}
