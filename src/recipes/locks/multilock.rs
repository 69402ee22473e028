//! `InterProcessMultiLock`: several locks as one, all or nothing.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{select_all, BoxFuture};
use tokio::time::Instant;

use super::engine::{self, Forever, TimedOut, Until, Wait, Waited};
use super::held::HeldNode;
use super::lock::{HeldLock, InterProcessLock, READ_RANK, SEMAPHORE_RANK, WRITE_RANK};
use super::mutex::InterProcessMutex;
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::Framework;
use crate::framework::LossReason;

/// Several locks held as one: Curator's `InterProcessMultiLock`.
///
/// The members are any [`InterProcessLock`]s: [`InterProcessMutex`]es, semaphore mutexes,
/// either side of read-write locks ([`read_lock`](crate::InterProcessReadWriteLock::read_lock),
/// [`write_lock`](crate::InterProcessReadWriteLock::write_lock)), mixed at will.
///
/// All or nothing: the members are acquired one by one in a stable order (by path, then by
/// kind: mutex, write, read, semaphore mutex; so that two processes locking overlapping sets
/// cannot deadlock each other), under ONE deadline for the whole set; if any member fails or
/// the deadline passes, the members already held are released in reverse order and nothing
/// stays held.
///
/// Members on one path through one framework are held once: the same kind given twice is
/// acquired once and re-entered ([`HeldLock::reenter`]); the read side beside the write side of
/// one read-write lock is held at the writer's place, as a downgrade does. A semaphore mutex
/// given twice is refused: it is not re-entrant and would wait for itself.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::sync::Arc;
/// use zk_recipes::{InterProcessLock, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock};
/// let members: Vec<Arc<dyn InterProcessLock>> = vec![
///     Arc::new(InterProcessMutex::new(&fw, "/locks/orders")?),
///     Arc::new(InterProcessReadWriteLock::new(&fw, "/locks/stock")?.write_lock()),
/// ];
/// let multi = InterProcessMultiLock::new(members)?;
/// let guard = multi.acquire().await?;
/// for (member, node) in guard.members() {
///     println!("{} held as {} (token {})", member.path(), node.path(), node.fencing_token());
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessMultiLock {
    /// In acquisition order.
    members: Vec<Member>,
}

/// A member and its place in the order the members were given.
#[derive(Debug, Clone)]
struct Member {
    lock: Arc<dyn InterProcessLock>,
    given: usize,
}

impl InterProcessMultiLock {
    /// A multi-lock over `members` (any [`InterProcessLock`]s).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty set, or a semaphore mutex given twice.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: &zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::sync::Arc;
    /// use zk_recipes::{InterProcessLock, InterProcessMultiLock, InterProcessSemaphoreMutex};
    /// let one: Arc<dyn InterProcessLock> = Arc::new(InterProcessSemaphoreMutex::new(fw, "/jobs/1")?);
    /// let multi = InterProcessMultiLock::new([one])?;
    /// # Ok(()) }
    /// ```
    pub fn new(members: impl IntoIterator<Item = Arc<dyn InterProcessLock>>) -> Result<Self> {
        let mut members: Vec<Member> =
            members.into_iter().enumerate().map(|(given, lock)| Member { lock, given }).collect();
        if members.is_empty() {
            return Err(Error::invalid("locks", "a multi-lock needs at least one lock"));
        }
        members.sort_by(|a, b| a.lock.path().cmp(b.lock.path()).then(a.lock.rank().cmp(&b.lock.rank())));
        let twice = members.windows(2).find(|w| w[1].held_with(&w[0]) && w[0].lock.rank() == SEMAPHORE_RANK);
        if let Some(w) = twice {
            let path = w[0].lock.path();
            return Err(Error::invalid(
                "locks",
                format!(
                "a multi-lock holds the semaphore mutex at {path} once: it is given twice and would wait for itself"
            ),
            ));
        }
        Ok(Self { members })
    }

    /// A multi-lock of [`InterProcessMutex`]es at `paths` (Curator's convenience constructor).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no paths; [`Error::InvalidPath`].
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let multi = zk_recipes::InterProcessMultiLock::from_paths(&fw, ["/locks/a", "/locks/b"])?;
    /// multi.acquire().await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn from_paths<S: AsRef<str>>(fw: &Framework, paths: impl IntoIterator<Item = S>) -> Result<Self> {
        let members = paths
            .into_iter()
            .map(|p| Ok(Arc::new(InterProcessMutex::new(fw, p.as_ref())?) as Arc<dyn InterProcessLock>))
            .collect::<Result<Vec<_>>>()?;
        Self::new(members)
    }

    /// Waits until every member is held.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`acquire_timeout`](Self::acquire_timeout) with the time left.
    ///
    /// # Errors
    /// The first member's error (after rolling back).
    ///
    /// # Cancel safety
    /// Cancel safe: members already held are released in the background.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(multi: zk_recipes::InterProcessMultiLock) -> zk_recipes::Result<()> {
    /// let guard = multi.acquire().await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<MultiLockGuard> {
        engine::forever(self.acquire_until(Forever)).await
    }

    /// Waits at most `timeout` for the whole set.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first (nothing is held); otherwise as
    /// [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(multi: zk_recipes::InterProcessMultiLock) -> zk_recipes::Result<()> {
    /// if let Ok(guard) = multi.acquire_timeout(std::time::Duration::from_secs(2)).await {
    ///     guard.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<MultiLockGuard> {
        engine::within(timeout, |wait| self.acquire_until(wait)).await
    }

    async fn acquire_until<W: MemberWait>(&self, wait: W) -> Result<Waited<MultiLockGuard, W>> {
        // one deadline over every member and the rollback on failure
        let operation_timeout =
            self.members.first().map_or(crate::DEFAULT_OPERATION_TIMEOUT, |m| m.lock.framework().operation_timeout());
        deadline::bounded_wait(wait.instant(), operation_timeout, self.acquire_within(wait)).await
    }

    /// [`acquire_until`](Self::acquire_until), inside its deadline.
    async fn acquire_within<W: MemberWait>(&self, wait: W) -> Result<Waited<MultiLockGuard, W>> {
        let mut held = Vec::with_capacity(self.members.len());
        for member in &self.members {
            let earlier = held.last().filter(|(m, _): &&(Member, HeldLock)| member.held_with(m));
            let acquired = match earlier {
                Some((_, h)) => beside(h, member).await.map(Ok),
                None => wait.acquire(&*member.lock).await,
            };
            match acquired {
                Ok(Ok(h)) => held.push((member.clone(), h)),
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
        let mut given: Vec<usize> = (0..held.len()).collect();
        given.sort_by_key(|&i| held[i].0.given);
        Ok(Ok(MultiLockGuard { held, given }))
    }
}

/// A [`Wait`] for one member, through the [`InterProcessLock`] object: forever, or what is
/// left of the set's deadline.
impl Member {
    /// Whether this member is held through the hold of `earlier` (sorted just before it): the
    /// same kind of lock on the same path through the same framework, or the read side after
    /// the write side of one read-write lock.
    fn held_with(&self, earlier: &Member) -> bool {
        let (rank, before) = (self.lock.rank(), earlier.lock.rank());
        self.lock.path() == earlier.lock.path()
            && Arc::ptr_eq(&self.lock.framework().inner, &earlier.lock.framework().inner)
            && (rank == before || (before == WRITE_RANK && rank == READ_RANK))
    }
}

/// The hold of `member` beside `earlier`, a hold of a lock on the same path (sorted before it):
/// the same kind is re-entered, a read beside a write is held at the writer's place.
async fn beside(earlier: &HeldLock, member: &Member) -> Result<HeldLock> {
    match earlier.read_beside() {
        Some(read) if member.lock.rank() == READ_RANK => read.await,
        _ => earlier.reenter(),
    }
}

trait MemberWait: Wait {
    fn acquire(self, lock: &dyn InterProcessLock) -> BoxFuture<'_, Result<Waited<HeldLock, Self>>>;
}

impl MemberWait for Forever {
    fn acquire(self, lock: &dyn InterProcessLock) -> BoxFuture<'_, Result<Waited<HeldLock, Self>>> {
        Box::pin(async move { lock.acquire().await.map(Ok) })
    }
}

impl MemberWait for Until {
    fn acquire(self, lock: &dyn InterProcessLock) -> BoxFuture<'_, Result<Waited<HeldLock, Self>>> {
        let left = self.0.saturating_duration_since(Instant::now());
        Box::pin(async move {
            match lock.acquire_timeout(left).await {
                Ok(held) => Ok(Ok(held)),
                Err(Error::Timeout { .. }) => Ok(Err(TimedOut)),
                Err(e) => Err(e),
            }
        })
    }
}

async fn rollback(held: Vec<(Member, HeldLock)>) {
    for (_, h) in held.into_iter().rev() {
        // past a timed acquire's deadline: the time left is the cleanup grace
        if let Err(e) = deadline::cleanup(h.release()).await {
            tracing::debug!(error = %e, "multi-lock rollback: release failed (continues in the background)");
        }
    }
}

/// The hold of every member of an [`InterProcessMultiLock`]. Dropping it releases all in the
/// background.
///
/// # Examples
/// ```no_run
/// # async fn demo(multi: zk_recipes::InterProcessMultiLock) -> zk_recipes::Result<()> {
/// let guard = multi.acquire().await?;
/// let tokens: Vec<i64> = guard.nodes().map(|n| n.fencing_token()).collect();
/// tokio::select! {
///     reason = guard.lost() => println!("lost: {reason}"),
///     _ = async { /* work, passing `tokens` along */ } => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "the locks are released when the guard is dropped"]
#[derive(Debug)]
pub struct MultiLockGuard {
    /// In acquisition order.
    held: Vec<(Member, HeldLock)>,
    /// Indices into `held`, in the order the members were given.
    given: Vec<usize>,
}

impl MultiLockGuard {
    /// Each member with its held node, in the order the members were given to
    /// [`InterProcessMultiLock::new`] (or the paths to
    /// [`from_paths`](InterProcessMultiLock::from_paths)).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(guard: &zk_recipes::MultiLockGuard) {
    /// for (member, node) in guard.members() {
    ///     println!("{} -> {}", member.path(), node.path());
    /// }
    /// # }
    /// ```
    pub fn members(&self) -> impl Iterator<Item = (&dyn InterProcessLock, &HeldNode)> {
        self.given.iter().map(|&i| {
            let (member, held) = &self.held[i];
            (&*member.lock, &**held)
        })
    }

    /// Each member's node, in the order the members were given (as
    /// [`members`](Self::members)).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(guard: &zk_recipes::MultiLockGuard) {
    /// let paths: Vec<&str> = guard.nodes().map(|n| n.path()).collect();
    /// # }
    /// ```
    pub fn nodes(&self) -> impl Iterator<Item = &HeldNode> {
        self.members().map(|(_, node)| node)
    }

    /// Whether any member's hold is lost.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(guard: &zk_recipes::MultiLockGuard) {
    /// assert!(!guard.is_lost());
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.nodes().any(HeldNode::is_lost)
    }

    /// Resolves when any member's hold is lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::MultiLockGuard) {
    /// let reason = guard.lost().await;
    /// # }
    /// ```
    pub async fn lost(&self) -> LossReason {
        let all = self.nodes().map(|n| Box::pin(n.lost()));
        select_all(all).await.0
    }

    /// Releases every member in reverse acquisition order.
    ///
    /// # Errors
    /// The first release error; every member is released either way.
    ///
    /// # Cancel safety
    /// Cancel safe: the rest is released in the background.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::MultiLockGuard) -> zk_recipes::Result<()> {
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<()> {
        let mut first = Ok(());
        while let Some((_, h)) = self.held.pop() {
            if let Err(e) = h.release().await {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}
