//! `InterProcessSemaphoreV2` and `InterProcessSemaphoreMutex`.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::driver::Request;
use super::engine::{self, contend, Ended, Forever, Until, Wait, Waited};
use super::expiring_permit::{delete_permit, swap_for_permit, ExpiringPermit};
use super::held::{HeldNode, LockGuard};
use super::leases::{CountedLease, FastLease, Lease};
use super::mutex::{participants, InterProcessMutex};
use super::permit_name::check_permit_id;
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::{paths, validate_ttl, Framework};
use crate::observe::Kind;
use crate::recipes::layout::{LEASE_NAME, SEMAPHORE_LEASES, SEMAPHORE_LOCKS};
use crate::ZooKeeperError;

/// A counting semaphore across processes: Curator's `InterProcessSemaphoreV2`.
///
/// At most `max_leases` leases are held at once by all processes together. Layout (as
/// Curator): an [`InterProcessMutex`] at `<path>/locks` serialises acquirers; leases are
/// ephemeral-sequential nodes `<path>/leases/_c_<uuid>-lease-<seq>`; a holder of the mutex
/// creates its lease node and waits until there are at most `max_leases` lease nodes.
///
/// # Fast path
/// While no one queues for the internal mutex, one lease is taken without it: our lease node
/// holds when fewer than `max_leases` leases sort before it (expirable permits count as
/// before it wherever they sort), and otherwise waits for one of the leases right before it
/// to go. That is about 6 requests to the servers per lease instead of about 9 (the mutex's
/// create, listing and delete are gone), and a waiter is woken by the lease before it, not
/// by every change. It stays safe beside Curator's rule: a lease that holds by either rule
/// has fewer than `max_leases` leases before it from then on, so no more than `max_leases`
/// hold. It stays fair to Curator: an acquire that finds a contender under `<path>/locks`
/// (a Curator acquirer, which holds that mutex while it waits for a lease, or one of ours
/// taking several leases) takes the mutex too and queues behind it. Only
/// [`acquire_many`](Self::acquire_many) with more than one lease always takes the mutex.
///
/// # Notable behaviors
/// * `max_leases` is a convention every process must agree on: nothing on the server
///   checks it (as in Curator).
/// * [`acquire_many`](Self::acquire_many) takes all its leases under one hold of the internal
///   mutex (Curator takes it once per lease, which can deadlock two `acquire(2)` callers at
///   max 2: each gets one lease and waits for a second forever).
/// * Not re-entrant: every acquire takes new leases.
/// * **Expirable permits.** [`acquire_with_expiry`](Self::acquire_with_expiry) takes a lease
///   that belongs to no session and ends at a deadline ([`ExpiringPermit`]): any process can
///   release it by its id ([`release_permit`](Self::release_permit)); once expired, a waiter
///   that needs its place deletes it (and the server does, as a TTL node, where TTL nodes are
///   enabled). The maximum holds throughout: a permit is swapped for an ordinary lease in one
///   transaction, and reclaimed only by deleting it. The deadline is a wall-clock time, so
///   the processes' clocks must agree to well within the expiry (NTP); see
///   [`ExpiringPermit`].
/// * **Foreign children take no lease.** A child of `leases/` whose name does not end with
///   `lease-` and a ZooKeeper sequence is not counted (Curator counts it), and is logged once
///   at WARN; see [`InterProcessMutex`]'s "Foreign children".
///
/// # Curator compatibility
/// Same nodes, names and protocol as Curator 5.x; a Curator process and this one share the
/// lease count. An expirable permit is a persistent (TTL) node
/// `<path>/leases/_c_<uuid>-expires-<deadline ms>-lease-<seq>`: Curator counts it as one lease;
/// Curator waiters do not reclaim expired permits (ours, and the server's TTL, do).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::InterProcessSemaphoreV2;
///
/// let pool = InterProcessSemaphoreV2::new(&fw, "/pools/render", 3)?; // 3 leases across all processes
/// let lease = pool.acquire().await?;
/// render(lease.fencing_token()).await;
/// lease.release().await?;
///
/// // a permit that belongs to no session: released by id from anywhere, or reclaimed at expiry
/// let permit = pool.acquire_with_expiry(Duration::from_secs(600)).await?;
/// let id = permit.permit_id().to_string();
/// pool.release_permit(&id).await?;
/// # async fn render(_: i64) {}
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessSemaphoreV2 {
    pub(super) fw: Framework,
    pub(super) leases_dir: String,
    locks_dir: String,
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
            return Err(Error::invalid(
                "max_leases",
                format!("max leases must be in 1..={}, got {max_leases}", i32::MAX),
            ));
        }
        let locks_dir = paths::join(path, SEMAPHORE_LOCKS);
        Ok(Self {
            fw: fw.clone(),
            leases_dir: paths::join(path, SEMAPHORE_LEASES),
            lock: InterProcessMutex::new(fw, &locks_dir)?.with_kind(Kind::SemaphoreLock),
            locks_dir,
            max_leases,
        })
    }

    /// The maximum number of leases.
    pub fn max_leases(&self) -> usize {
        self.max_leases
    }

    /// Waits for one lease.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`acquire_timeout`](Self::acquire_timeout) with the time left.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: no node (lease or internal lock) is left behind.
    pub async fn acquire(&self) -> Result<Lease> {
        engine::forever(self.acquire_one(Forever)).await
    }

    /// One lease, under `wait`.
    pub(crate) async fn acquire_one<W: Wait>(&self, wait: W) -> Result<Waited<Lease, W>> {
        match self.acquire_n(1, wait).await? {
            Ok(leases) => leases.into_iter().next().map(Ok).ok_or_else(|| Error::invalid("n", "no lease")),
            Err(timed_out) => Ok(Err(timed_out)),
        }
    }

    /// Waits for `n` leases, all or nothing.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`acquire_many_timeout`](Self::acquire_many_timeout)
    /// with the time left.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `n` is 0 or more than `max_leases`; the framework's
    /// errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_many(&self, n: usize) -> Result<Vec<Lease>> {
        engine::forever(self.acquire_n(n, Forever)).await
    }

    /// Waits at most `timeout` for one lease.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first (nothing is left behind); otherwise as
    /// [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(pool: zk_recipes::InterProcessSemaphoreV2) -> zk_recipes::Result<()> {
    /// match pool.acquire_timeout(std::time::Duration::from_secs(1)).await {
    ///     Ok(lease) => lease.release().await?,
    ///     Err(e) if e.is_timeout() => println!("all leases taken"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        engine::within(timeout, |wait| self.acquire_one(wait)).await
    }

    /// Takes one lease only if that needs no waiting: `Ok(None)` when every lease is taken
    /// (nothing is left behind).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(pool: zk_recipes::InterProcessSemaphoreV2) -> zk_recipes::Result<()> {
    /// if let Some(lease) = pool.try_acquire().await? {
    ///     lease.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        engine::now(self.acquire_one(Until::now())).await
    }

    /// Waits at most `timeout` for `n` leases, all or nothing.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first (leases taken meanwhile are returned);
    /// otherwise as [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_many_timeout(&self, n: usize, timeout: Duration) -> Result<Vec<Lease>> {
        engine::within(timeout, |wait| self.acquire_n(n, wait)).await
    }

    /// Waits for one lease that expires `expiry` after it is held: a permit that outlives
    /// this session and process, released by [`ExpiringPermit::release`] or by id with
    /// [`release_permit`](Self::release_permit) from any process, and reclaimed once expired.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`acquire_with_expiry_timeout`](Self::acquire_with_expiry_timeout)
    /// with the time left.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an expiry under 1 ms (zero included) or beyond
    /// ZooKeeper's largest TTL, 2^40 − 1 ms (about 34 years; `Duration::MAX` included: a permit
    /// always expires); [`Error::LockLost`] when the lease taken was lost before it became a
    /// permit; [`Error::OutcomeUnknown`] when the last step (one transaction turning the lease
    /// into the permit) was not answered in time; the framework's errors. Whatever the error,
    /// no permit is left: one the transaction may still make is deleted in the background.
    ///
    /// # Cancel safety
    /// Cancel safe: no node is left behind. Cancelled during the last step, a permit the
    /// transaction made (or makes later, once a stalled server answers) is deleted in the
    /// background, in whatever session comes next: no slot stays taken by a permit without a
    /// handle.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// use zk_recipes::InterProcessSemaphoreV2;
    /// let pool = InterProcessSemaphoreV2::new(&fw, "/pools/licenses", 10)?;
    /// let permit = pool.acquire_with_expiry(Duration::from_secs(300)).await?;
    /// println!("permit {} until {:?}", permit.permit_id(), permit.expires_at());
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_with_expiry(&self, expiry: Duration) -> Result<ExpiringPermit> {
        engine::forever(self.acquire_expiring(expiry, Forever)).await
    }

    /// As [`acquire_with_expiry`](Self::acquire_with_expiry), waiting at most `timeout`.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first; otherwise as
    /// [`acquire_with_expiry`](Self::acquire_with_expiry).
    ///
    /// # Cancel safety
    /// As [`acquire_with_expiry`](Self::acquire_with_expiry).
    pub async fn acquire_with_expiry_timeout(&self, expiry: Duration, timeout: Duration) -> Result<ExpiringPermit> {
        engine::within(timeout, |wait| self.acquire_expiring(expiry, wait)).await
    }

    async fn acquire_expiring<W: Wait>(&self, expiry: Duration, wait: W) -> Result<Waited<ExpiringPermit, W>> {
        // the lease and its swap for the permit under one deadline
        deadline::bounded_wait(wait.instant(), self.fw.operation_timeout(), self.acquire_expiring_within(expiry, wait))
            .await
    }

    /// [`acquire_expiring`](Self::acquire_expiring), inside its deadline.
    async fn acquire_expiring_within<W: Wait>(&self, expiry: Duration, wait: W) -> Result<Waited<ExpiringPermit, W>> {
        validate_ttl(expiry)?;
        let ttl = self.fw.capabilities().await?.ttl_nodes;
        let lease = match self.acquire_one(wait).await? {
            Ok(lease) => lease,
            Err(timed_out) => return Ok(Err(timed_out)),
        };
        let semaphore = paths::parent(&self.leases_dir);
        swap_for_permit(&self.fw, semaphore, &self.leases_dir, lease, expiry, ttl).await.map(Ok)
    }

    /// Releases the expirable permit `permit_id` ([`ExpiringPermit::permit_id`]), taken by any
    /// process.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `permit_id` is not an expirable permit's id (an
    /// ordinary lease is its holder's to return); [`Error::UnknownPermit`] when there is no
    /// such permit (released already, reclaimed after its expiry, or never taken); the
    /// framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: the permit may or may not have been released; releasing again tells.
    pub async fn release_permit(&self, permit_id: &str) -> Result<()> {
        check_permit_id(permit_id)?;
        match delete_permit(&self.fw, &paths::join(&self.leases_dir, permit_id)).await {
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Err(Error::UnknownPermit {
                semaphore: paths::parent(&self.leases_dir).to_string(),
                permit_id: permit_id.to_string(),
            }),
            other => other,
        }
    }

    pub(crate) async fn acquire_n<W: Wait>(&self, n: usize, wait: W) -> Result<Waited<Vec<Lease>, W>> {
        // one deadline over every step: the internal lock, each lease, the returns on failure
        deadline::bounded_wait(wait.instant(), self.fw.operation_timeout(), self.acquire_n_within(n, wait)).await
    }

    /// [`acquire_n`](Self::acquire_n), inside its deadline.
    async fn acquire_n_within<W: Wait>(&self, n: usize, wait: W) -> Result<Waited<Vec<Lease>, W>> {
        if n == 0 || n > self.max_leases {
            return Err(Error::invalid("n", format!("cannot acquire {n} of {} leases", self.max_leases)));
        }
        let (started, mut restarts) = (Instant::now(), 0);
        loop {
            if n == 1 {
                // yields to the internal lock's queue
                let driver = FastLease { max: self.max_leases, lock_dir: &self.locks_dir, now: SystemTime::now };
                let request = Request { dir: &self.leases_dir, data: self.fw.default_data(), driver: &driver };
                match contend(&self.fw, &request, wait).await? {
                    Ended::Held(acquired) => return Ok(Ok(vec![Lease::new(HeldNode::new(&self.fw, *acquired))])),
                    Ended::TimedOut(timed_out) => return Ok(Err(timed_out)),
                    Ended::Yielded => {}
                }
                // someone queues for the internal lock: behind them
            }
            match self.acquire_under_lock(n, wait).await {
                Ok(taken) => return Ok(taken),
                // A lease node vanished while we waited under the lock: our session was lost
                // (the lock with it) or someone deleted it. Waiting on without the lock could
                // wait for a waiter that waits for us: from the top, as the retry policy allows.
                Err(lost @ Error::LockLost { .. }) => {
                    let vanished = crate::ZooKeeperError::NoNode;
                    if self
                        .fw
                        .retry_policy()
                        .allow_retry(&crate::RetryAttempt::new(restarts, started.elapsed(), &vanished))
                        .is_none()
                    {
                        return Err(lost);
                    }
                    restarts += 1;
                    tracing::debug!(path = %self.leases_dir, "semaphore: a lease node vanished under the internal lock: acquiring again");
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// `n` leases under the internal lock, by Curator's count (its own acquire). A lease node
    /// that vanishes ends it with [`Error::LockLost`] (every lease taken and the lock are
    /// returned first).
    async fn acquire_under_lock<W: Wait>(&self, n: usize, wait: W) -> Result<Waited<Vec<Lease>, W>> {
        let lock = match self.lock.acquire_until(wait).await? {
            Ok(lock) => lock,
            Err(timed_out) => return Ok(Err(timed_out)),
        };
        // a lease node that vanishes under the lock: from the top (`acquire_n_within`)
        let driver = CountedLease { max: self.max_leases, now: SystemTime::now };
        let request = Request { dir: &self.leases_dir, data: self.fw.default_data(), driver: &driver };
        // (n may be up to i32::MAX: room for what is likely, not for n)
        let mut leases = Vec::with_capacity(n.min(1_024));
        for _ in 0..n {
            let outcome = match contend(&self.fw, &request, wait).await.and_then(Ended::waited) {
                Ok(Ok(acquired)) => {
                    leases.push(Lease::new(HeldNode::new(&self.fw, acquired)));
                    continue;
                }
                Ok(Err(timed_out)) => Ok(Err(timed_out)),
                Err(e) => Err(e),
            };
            return_all(leases).await.ok();
            release_quietly(lock).await;
            return outcome;
        }
        // The lease holder need not wait for the internal lock's release: dropping sends its
        // delete at once (ordered before anything we do next) and finishes it in the background.
        drop(lock);
        Ok(Ok(leases))
    }

    /// Returns every lease (Curator's `returnAll`), reporting the first error. Leases may come
    /// from several semaphores.
    ///
    /// # Errors
    /// The first release error; all leases are returned either way.
    ///
    /// # Cancel safety
    /// Cancel safe: leases not yet returned are returned in the background when dropped.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::InterProcessSemaphoreV2;
    ///
    /// let pool = InterProcessSemaphoreV2::new(&fw, "/pools/render", 3)?;
    /// let leases = pool.acquire_many(2).await?;
    /// InterProcessSemaphoreV2::return_all(leases).await?;
    /// # Ok(()) }
    /// ```
    #[doc(alias = "returnAll")]
    pub async fn return_all(leases: impl IntoIterator<Item = Lease>) -> Result<()> {
        return_all(leases).await
    }

    /// The current lease nodes, in order.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn participants(&self) -> Result<Vec<String>> {
        participants(&self.fw, &self.leases_dir, &[LEASE_NAME]).await
    }
}

async fn release_quietly(lock: LockGuard) {
    if let Err(e) = lock.release().await {
        tracing::debug!(error = %e, "semaphore: releasing the internal lock failed (continues in the background)");
    }
}

/// Returns every lease, reporting the first error (see [`InterProcessSemaphoreV2::return_all`]).
pub(crate) async fn return_all(leases: impl IntoIterator<Item = Lease>) -> Result<()> {
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
