//! The guard of a taken scheduled-job lock: extend, keep alive, watch for loss, unlock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::framework::Stat;
use tokio::sync::watch;
use tokio::time::Instant;

use super::clock::{millis, Clock};
use super::instant::{self, END_OF_FORMAT_MS};
use super::write::{write, Written};
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::{Framework, LossReason};
use crate::sync::lock;
use crate::ZooKeeperError;

/// What `try_lock` hands to the guard.
pub(super) struct Taking {
    pub(super) fw: Framework,
    pub(super) clock: Clock,
    pub(super) name: String,
    pub(super) path: String,
    pub(super) taken_at: i64,
    pub(super) at_most_for: Duration,
    pub(super) at_least_for: Duration,
    pub(super) until: i64,
    pub(super) stat: Stat,
    pub(super) sent_at: Instant,
}

/// Our latest write.
#[derive(Debug, Clone, Copy)]
struct Latest {
    version: i32,
    until: i64,
}

#[derive(Debug)]
struct Inner {
    fw: Framework,
    clock: Clock,
    name: String,
    path: String,
    taken_at: i64,
    at_most_for: Duration,
    at_least_for: Duration,
    fencing_token: i64,
    latest: Mutex<Latest>,
    /// Serialises our writes, so that the monitor compares a read with a settled `latest`.
    writing: tokio::sync::Mutex<()>,
    /// When the hold stops being trustworthy, on the monotonic clock.
    deadline: watch::Sender<Instant>,
    lost: watch::Sender<Option<LossReason>>,
    /// Set once unlocked (or dropped): the background tasks stop.
    done: watch::Sender<bool>,
    monitoring: AtomicBool,
    keeping_alive: AtomicBool,
}

/// A taken scheduled-job lock (from [`ShedLock::try_lock`](crate::ShedLock::try_lock)): run
/// the job, then [`unlock`](Self::unlock).
///
/// # Until when it holds
/// Until the instant written at taking (`taken_at + at_most_for`), moved on by
/// [`extend`](Self::extend) or the [keep-alive](Self::keep_alive). The hold is bound to that
/// instant, not to the ZooKeeper session: a disconnection does not end it, and a replica
/// that dies keeps the job locked until the instant passes.
///
/// # The loss signal
/// [`lost`](Self::lost) resolves when the hold can no longer be trusted:
/// [`LossReason::Expired`] when the deadline passed (see
/// [`ShedLock`](crate::ShedLock)'s "The clock": the earlier of our clock's and the server's
/// reading) or when another replica wrote the node (it took the job over after our instant
/// passed by its clock); [`LossReason::NodeDeleted`] when the node was deleted;
/// [`LossReason::Closed`] when the framework closed. Watching for a foreign write costs a
/// node watch, set up on the first call of [`lost`](Self::lost) or
/// [`keep_alive`](Self::keep_alive).
///
/// # Fencing
/// [`fencing_token`](Self::fencing_token) is the `mzxid` of the write that took the lock (a
/// `setData` or the create): every taking of a name is a later write to the same node, so
/// the token strictly increases over the takings of one name — also across Java replicas'
/// takings, and although the node is never deleted. Extending keeps the token.
///
/// # Dropping
/// Dropping a guard unlocks in the background (the same versioned write as
/// [`unlock`](Self::unlock), errors only logged).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// let locks = zk_recipes::ShedLock::new(&fw);
/// let Some(guard) = locks.try_lock("export", Duration::from_secs(60), Duration::ZERO).await? else {
///     return Ok(());
/// };
/// guard.keep_alive();
/// tokio::select! {
///     reason = guard.lost() => eprintln!("lost the export lock: {reason}"),
///     _ = async { /* the export */ } => {}
/// }
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[must_use = "the lock is unlocked when the guard is dropped"]
#[derive(Debug)]
pub struct ScheduledLockGuard {
    inner: Arc<Inner>,
}

impl ScheduledLockGuard {
    pub(super) fn new(t: Taking) -> Self {
        let latest = Latest { version: t.stat.version, until: t.until };
        let deadline = deadline_after(t.sent_at, t.until, t.taken_at, &t.stat);
        ScheduledLockGuard {
            inner: Arc::new(Inner {
                fw: t.fw,
                clock: t.clock,
                name: t.name,
                path: t.path,
                taken_at: t.taken_at,
                at_most_for: t.at_most_for,
                at_least_for: t.at_least_for,
                fencing_token: t.stat.mzxid,
                latest: Mutex::new(latest),
                writing: tokio::sync::Mutex::new(()),
                deadline: watch::Sender::new(deadline),
                lost: watch::Sender::new(None),
                done: watch::Sender::new(false),
                monitoring: AtomicBool::new(false),
                keeping_alive: AtomicBool::new(false),
            }),
        }
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The lock node's path (relative to the namespace).
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The fencing token: the `mzxid` of the write that took the lock (see the type's docs).
    pub fn fencing_token(&self) -> i64 {
        self.inner.fencing_token
    }

    /// When the lock was taken, by the lock's clock (to the millisecond).
    pub fn taken_at(&self) -> SystemTime {
        instant::system_time(self.inner.taken_at)
    }

    /// The instant the node holds now (our latest write): others may take the job once it
    /// has passed by their clocks.
    pub fn locked_until(&self) -> SystemTime {
        instant::system_time(lock(&self.inner.latest).until)
    }

    /// The monotonic-clock deadline after which the hold is no longer trusted (see the type's
    /// docs); [`lost`](Self::lost) fires then.
    pub fn deadline(&self) -> Instant {
        *self.inner.deadline.borrow()
    }

    /// Why the hold is lost, if it is (as far as known without a round trip; the deadline
    /// counts at once).
    pub fn loss(&self) -> Option<LossReason> {
        self.inner.loss()
    }

    /// Whether the hold is lost (see [`loss`](Self::loss)).
    pub fn is_lost(&self) -> bool {
        self.loss().is_some()
    }

    /// Resolves when the hold can no longer be trusted, with the reason (see the type's docs).
    ///
    /// # Cancel safety
    /// Cancel safe; call it again (or from several tasks) at will.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::ScheduledLockGuard) {
    /// let reason = guard.lost().await;
    /// eprintln!("{} lost: {reason}", guard.name());
    /// # }
    /// ```
    pub async fn lost(&self) -> LossReason {
        self.inner.start_monitor();
        let mut rx = self.inner.lost.subscribe();
        let mut deadline = self.inner.deadline.subscribe();
        loop {
            if let Some(reason) = self.inner.loss() {
                return reason;
            }
            let at = *deadline.borrow_and_update();
            tokio::select! {
                _ = tokio::time::sleep_until(at) => {}
                _ = deadline.changed() => {}
                _ = rx.changed() => {}
            }
        }
    }

    /// Moves the lock's instant to `by` from now (by the lock's clock) with a versioned write:
    /// refused if another replica wrote the node meanwhile. `by` may be shorter than what is
    /// left (that shortens the hold).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `by` under 1 ms (zero included: the lock's instants are
    /// in milliseconds) or one that reaches past the year 9999 (`Duration::MAX` included);
    /// [`Error::LockLost`] when the hold is lost (nothing is written), or another replica
    /// wrote the node (then the hold is lost); [`Error::OutcomeUnknown`] when a lost reply
    /// leaves it open whether the write was ours (the hold is then counted as lost); the
    /// framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied; the hold's deadline then stays the
    /// earlier one (safe, but [`lost`](Self::lost) may fire early).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::ScheduledLockGuard) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// guard.extend(Duration::from_secs(120)).await?; // two more minutes from now
    /// # Ok(()) }
    /// ```
    pub async fn extend(&self, by: Duration) -> Result<()> {
        // the lock's instants are in milliseconds
        if by < Duration::from_millis(1) {
            return Err(Error::invalid("by", format!("extend: by must be at least 1 ms, not {by:?}")));
        }
        self.inner.extend(by).await
    }

    /// Keeps the hold alive while the guard lives: whenever half of `at_most_for` has passed
    /// since our latest write, the lock is [extended](Self::extend) by `at_most_for` from
    /// then (a failed extension is tried again until the deadline). It stops when the guard
    /// is unlocked or dropped, or the hold is lost — [`lost`](Self::lost) tells which.
    /// Calling it again does nothing.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::ScheduledLockGuard) -> zk_recipes::Result<()> {
    /// guard.keep_alive();
    /// // ... a job that may run longer than at_most_for ...
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn keep_alive(&self) {
        if self.inner.keeping_alive.swap(true, Ordering::SeqCst) {
            return;
        }
        self.inner.start_monitor();
        let inner = self.inner.clone();
        self.inner.fw.runtime().spawn(async move { inner.keep_alive().await });
    }

    /// Unlocks: writes `max(now, taken_at + at_least_for)` (by the lock's clock) with a
    /// versioned write, so another replica's taking is never overwritten, and stops the
    /// keep-alive.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the hold had been lost before (the instant is still written if
    /// nobody else wrote the node), or another replica took the lock over (nothing is
    /// written); the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may or may not have been applied; if not, the lock frees
    /// itself at its instant.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::ScheduledLockGuard) -> zk_recipes::Result<()> {
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    #[doc(alias = "release")]
    pub async fn unlock(self) -> Result<()> {
        let inner = self.inner.clone();
        // stop the background tasks now; `Drop` sees `done` and writes nothing more
        inner.done.send_replace(true);
        drop(self);
        inner.unlock().await
    }
}

impl Drop for ScheduledLockGuard {
    fn drop(&mut self) {
        if self.inner.done.send_replace(true) {
            return;
        }
        let inner = self.inner.clone();
        self.inner.fw.runtime().spawn(async move {
            if let Err(e) = inner.unlock().await {
                tracing::debug!(path = %inner.path, error = %e, "background unlock of a dropped scheduled lock");
            }
        });
    }
}

/// The local deadline after a write of `until` sent at `sent_at` (monotonic) when the lock's
/// clock read `client_now`: the earlier of the two readings of how long is left, our clock's
/// and the server's (`mtime` of the write).
fn deadline_after(sent_at: Instant, until: i64, client_now: i64, stat: &Stat) -> Instant {
    let by_client = until.saturating_sub(client_now);
    let by_server = until.saturating_sub(stat.mtime);
    let left = by_client.min(by_server).max(0);
    deadline::later(sent_at, Duration::from_millis(left as u64))
}

impl Inner {
    fn loss(&self) -> Option<LossReason> {
        if let Some(reason) = *self.lost.borrow() {
            return Some(reason);
        }
        if self.fw.is_closed() {
            return Some(LossReason::Closed);
        }
        (Instant::now() >= *self.deadline.borrow()).then_some(LossReason::Expired)
    }

    fn mark_lost(&self, reason: LossReason) {
        self.lost.send_if_modified(|lost| {
            let first = lost.is_none();
            if first {
                *lost = Some(reason);
            }
            first
        });
    }

    fn lost_error(&self, reason: LossReason) -> Error {
        Error::LockLost { path: self.path.clone(), reason }
    }

    async fn extend(&self, by: Duration) -> Result<()> {
        let _writing = self.writing.lock().await;
        if let Some(reason) = self.loss() {
            return Err(self.lost_error(reason));
        }
        let version = lock(&self.latest).version;
        let sent_at = Instant::now();
        let now = self.clock.now_ms();
        let until = now.saturating_add(millis(by));
        if until >= END_OF_FORMAT_MS {
            return Err(Error::invalid("by", format!("extend: {by:?} reaches past the year 9999")));
        }
        let bytes = instant::format(until).into_bytes();
        let stat = match write(&self.fw, &self.path, Some(version), &bytes).await? {
            Written::Applied(stat) => stat,
            // within our deadline nobody else takes the lock: the bytes are ours
            Written::Ambiguous(stat) if Instant::now() < *self.deadline.borrow() => stat,
            Written::Ambiguous(_) => {
                self.mark_lost(LossReason::Expired);
                return Err(Error::OutcomeUnknown { path: self.path.clone() });
            }
            Written::Refused => {
                self.mark_lost(LossReason::Expired);
                return Err(self.lost_error(LossReason::Expired));
            }
            Written::Missing => {
                self.mark_lost(LossReason::NodeDeleted);
                return Err(self.lost_error(LossReason::NodeDeleted));
            }
        };
        *lock(&self.latest) = Latest { version: stat.version, until };
        self.deadline.send_replace(deadline_after(sent_at, until, now, &stat));
        tracing::debug!(path = %self.path, until = %instant::format(until), "scheduled lock extended");
        Ok(())
    }

    async fn unlock(&self) -> Result<()> {
        let _writing = self.writing.lock().await;
        let loss = self.loss();
        let version = lock(&self.latest).version;
        let until = self.clock.now_ms().max(self.taken_at.saturating_add(millis(self.at_least_for)));
        let bytes = instant::format(until).into_bytes();
        let written = write(&self.fw, &self.path, Some(version), &bytes).await;
        self.mark_lost(LossReason::Closed);
        match written? {
            Written::Applied(_) | Written::Ambiguous(_) => match loss {
                Some(reason) => Err(self.lost_error(reason)),
                None => Ok(()),
            },
            Written::Refused => Err(self.lost_error(loss.unwrap_or(LossReason::Expired))),
            Written::Missing => Err(self.lost_error(loss.unwrap_or(LossReason::NodeDeleted))),
        }
    }

    fn start_monitor(self: &Arc<Self>) {
        if self.monitoring.swap(true, Ordering::SeqCst) {
            return;
        }
        let inner = self.clone();
        self.fw.runtime().spawn(async move { inner.monitor().await });
    }

    /// Until the hold is lost or done: watch the node for a write that is not ours.
    async fn monitor(&self) {
        let mut done = self.done.subscribe();
        let mut status = self.fw.status_watch();
        loop {
            if *done.borrow_and_update() || self.lost.borrow().is_some() {
                return;
            }
            let watched = match self.fw.conn() {
                Ok(conn) => conn.watch_data(&self.path).await,
                Err(e) => Err(e),
            };
            let watcher = match watched {
                Ok((_, stat, watcher)) => {
                    let _settled = self.writing.lock().await;
                    if stat.version > lock(&self.latest).version && !*self.done.borrow() {
                        self.mark_lost(LossReason::Expired);
                        return;
                    }
                    Some(watcher)
                }
                Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => {
                    if !*self.done.borrow() {
                        self.mark_lost(LossReason::NodeDeleted);
                    }
                    return;
                }
                Err(_) if self.fw.is_closed() => {
                    self.mark_lost(LossReason::Closed);
                    return;
                }
                Err(_) => None,
            };
            status.borrow_and_update();
            let mut lost = self.lost.subscribe();
            tokio::select! {
                _ = async { match watcher { Some(w) => { w.changed().await; } None => std::future::pending().await } } => {}
                _ = status.changed(), if watcher.is_none() => {}
                _ = done.changed() => return,
                _ = lost.changed() => return,
            }
        }
    }

    async fn keep_alive(&self) {
        let mut done = self.done.subscribe();
        let mut deadline = self.deadline.subscribe();
        let half = self.at_most_for / 2;
        let mut failures = 0u32;
        loop {
            if *done.borrow_and_update() || self.loss().is_some() {
                return;
            }
            // extend once more than half of at_most_for has passed since our latest write
            let at = deadline.borrow_and_update().checked_sub(half).unwrap_or_else(Instant::now);
            tokio::select! {
                _ = tokio::time::sleep_until(at) => {}
                _ = done.changed() => return,
                _ = deadline.changed() => continue,
            }
            match self.extend(self.at_most_for).await {
                Ok(()) => {
                    if failures > 0 {
                        tracing::info!(path = %self.path, failures, "keep-alive of a scheduled lock works again");
                    }
                    failures = 0;
                }
                Err(Error::LockLost { .. } | Error::OutcomeUnknown { .. } | Error::Closed) => return,
                Err(e) => {
                    // once with its context per run of failures; the retries that follow are debug
                    let left = self.deadline.borrow().saturating_duration_since(Instant::now());
                    match failures {
                        0 => {
                            tracing::warn!(path = %self.path, error = %e, ?left, "keep-alive of a scheduled lock failed; trying again until the lock's deadline (further failures at debug)")
                        }
                        _ => {
                            tracing::debug!(path = %self.path, error = %e, failures, "keep-alive of a scheduled lock failed; trying again")
                        }
                    }
                    failures += 1;
                    // the retry policy gave up: pause before the next round, within the deadline
                    let pause = (*self.deadline.borrow()).min(deadline::after(Duration::from_secs(1)));
                    tokio::select! {
                        _ = tokio::time::sleep_until(pause) => {}
                        _ = done.changed() => return,
                    }
                }
            }
        }
    }
}

/// Compile-time check that the guard can cross tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<ScheduledLockGuard>();
};
