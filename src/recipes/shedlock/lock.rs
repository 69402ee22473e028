//! ShedLock's ZooKeeper lock: one persistent node per job name holding the instant until which
//! the job is locked.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::clock::{millis, validate_durations, Clock};
use super::guard::{ScheduledLockGuard, Taking};
use super::instant::{self, END_OF_FORMAT_MS};
use super::write::{write, Written};
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::{validate_path, Framework, IfExists};
use crate::ZooKeeperError;

/// Where ShedLock's ZooKeeper provider keeps its lock nodes unless told otherwise.
pub const SHEDLOCK_DEFAULT_ROOT: &str = "/shedlock";

/// A lock for scheduled jobs that joins a [ShedLock](https://github.com/lukas-krecan/ShedLock)
/// pool: "this job runs on one replica only", shared with Java services that use ShedLock's
/// ZooKeeper provider (`ZookeeperCuratorLockProvider`) on the same names.
///
/// # Layout (byte-compatible with ShedLock's ZooKeeper provider)
/// One **persistent** node `<root>/<name>` per job (root [`/shedlock`](SHEDLOCK_DEFAULT_ROOT)
/// by default; a missing root is created as a container), never deleted. Its data is the
/// instant until which the job is locked, UTF-8 ISO-8601 in UTC with exactly three fractional
/// digits: `2026-01-02T03:04:05.678Z`. Empty or unparsable data counts as locked (forever), as
/// ShedLock does. Any instant Java's `Instant.parse` reads is read (fewer or more fractional
/// digits, an offset instead of `Z`).
///
/// # Taking and releasing
/// [`try_lock`](Self::try_lock) never waits: a job that finds its lock held is skipped. It
/// reads the node; when the stored instant has passed, it writes `now + at_most_for` with a
/// versioned `setData` — a version clash means another replica took it first. When the node
/// is missing it creates it — `NodeExists` means another replica won. The
/// [`ScheduledLockGuard`] it returns is released with
/// [`unlock`](ScheduledLockGuard::unlock), which writes `max(now, taken_at + at_least_for)`:
/// a fast job is not run again by a replica whose clock or schedule is a little behind.
///
/// Beyond ShedLock: [`extend`](ScheduledLockGuard::extend), a
/// [keep-alive](ScheduledLockGuard::keep_alive), the [loss signal](ScheduledLockGuard::lost)
/// and a [fencing token](ScheduledLockGuard::fencing_token); every write of ours is versioned,
/// so it never overwrites another replica's taking (ShedLock's own unlock is not versioned).
///
/// # The clock
/// As in ShedLock, replicas compare the stored instant with **their own wall clock**: the lock
/// is only as good as the agreement of the replicas' clocks. A replica whose clock runs ahead
/// by `d` takes a lock `d` early; so keep clock offsets (NTP) well below `at_most_for`, and set
/// `at_least_for` above the offsets and schedule jitter you expect.
///
/// Where the server's time makes a decision safer, it is used: after each write of ours (take,
/// extend), the guard's local deadline — when [`lost`](ScheduledLockGuard::lost) fires with
/// [`LossReason::Expired`](crate::LossReason::Expired) — is the *earlier* of "the
/// written instant by our clock" and "the written instant by the server's clock at our write"
/// (the `mtime` of the write's stat). A client clock that is behind the ensemble's makes the
/// hold shorter, never longer. The deadline is kept on the monotonic clock from the moment the
/// write was sent, so a wall-clock step after taking does not extend it either.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::ShedLock;
///
/// let locks = ShedLock::new(&fw);
/// match locks.try_lock("nightly-report", Duration::from_secs(600), Duration::from_secs(30)).await? {
///     Some(guard) => {
///         // ... the job; stop if `guard.lost()` resolves ...
///         guard.unlock().await?;
///     }
///     None => println!("another replica runs it"),
/// }
/// # Ok(()) }
/// ```
#[doc(alias = "ZookeeperCuratorLockProvider")]
#[doc(alias = "SchedulerLock")]
#[derive(Debug, Clone)]
pub struct ShedLock {
    fw: Framework,
    root: String,
    clock: Clock,
}

impl ShedLock {
    /// A lock over `fw` with ShedLock's default root, `/shedlock`.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) {
    /// let locks = zk_recipes::ShedLock::new(&fw);
    /// assert_eq!(locks.root_path(), "/shedlock");
    /// # }
    /// ```
    pub fn new(fw: &Framework) -> Self {
        ShedLock { fw: fw.clone(), root: SHEDLOCK_DEFAULT_ROOT.to_string(), clock: Clock::default() }
    }

    /// Uses `root` instead of `/shedlock` (ShedLock's `ZookeeperCuratorLockProvider(client,
    /// path)`): the lock nodes are `<root>/<name>`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] when `root` is not a valid absolute path.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let locks = zk_recipes::ShedLock::new(&fw).root("/jobs/locks")?;
    /// assert_eq!(locks.path_of("report")?, "/jobs/locks/report");
    /// # Ok(()) }
    /// ```
    pub fn root(mut self, root: &str) -> Result<Self> {
        validate_path(root)?;
        self.root = root.trim_end_matches('/').to_string();
        if self.root.is_empty() {
            return Err(Error::InvalidPath { path: root.to_string(), reason: "the root cannot be `/`" });
        }
        Ok(self)
    }

    /// Reads the wall clock through `clock` instead of [`SystemTime::now`]: for tests that
    /// put a replica's clock off on purpose. Every instant this lock writes or compares
    /// comes from it.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) {
    /// use std::time::{Duration, SystemTime};
    /// // a replica whose clock is two seconds behind
    /// let late = zk_recipes::ShedLock::new(&fw).clock(|| SystemTime::now() - Duration::from_secs(2));
    /// # }
    /// ```
    pub fn clock<F>(mut self, clock: F) -> Self
    where
        F: Fn() -> SystemTime + Send + Sync + 'static,
    {
        self.clock = Clock(Some(Arc::new(clock)));
        self
    }

    /// The lock's clock, in milliseconds since the epoch.
    pub(super) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The framework the lock works through.
    pub(super) fn framework(&self) -> &Framework {
        &self.fw
    }

    /// The root under which the lock nodes are.
    pub fn root_path(&self) -> &str {
        &self.root
    }

    /// The node of job `name`: `<root>/<name>`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty name or one with a `/`; [`Error::InvalidPath`]
    /// when the path is not valid.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// assert_eq!(zk_recipes::ShedLock::new(&fw).path_of("report")?, "/shedlock/report");
    /// # Ok(()) }
    /// ```
    pub fn path_of(&self, name: &str) -> Result<String> {
        if name.is_empty() {
            return Err(Error::invalid("name", "a scheduled lock needs a non-empty name"));
        }
        if name.contains('/') {
            return Err(Error::invalid("name", format!("a scheduled lock's name cannot contain `/`: {name:?}")));
        }
        let path = format!("{}/{name}", self.root);
        validate_path(&path)?;
        Ok(path)
    }

    /// Takes the lock of job `name` if nobody holds it, without waiting: `Some(guard)` when
    /// taken (run the job), `None` when another replica holds it (skip the job).
    ///
    /// The lock is held until `at_most_for` from now at most — then others may take it even if
    /// this replica never unlocked (it died) — and, once [unlocked](ScheduledLockGuard::unlock),
    /// until `at_least_for` from now at least (zero: free again once unlocked). A try: it never
    /// waits for the lock, and its read and write take one operation's time at most.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty name or one with `/`, an `at_most_for` under
    /// 1 ms (zero included: the lock's instants are in milliseconds), `at_least_for` longer
    /// than `at_most_for`, or an `at_most_for` that reaches past the year 9999
    /// (`Duration::MAX` included; nothing is written); [`Error::InvalidPath`];
    /// [`Error::OutcomeUnknown`] when a reply was lost and the node now holds the very bytes
    /// we wrote, so it cannot be told whether we took it (the job must be skipped; the lock
    /// frees itself after `at_most_for`); the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: when cancelled after its write was sent, the lock may have been taken
    /// without a guard; it then frees itself `at_most_for` later.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// let locks = zk_recipes::ShedLock::new(&fw);
    /// if let Some(guard) = locks.try_lock("cleanup", Duration::from_secs(60), Duration::ZERO).await? {
    ///     println!("running, fencing token {}", guard.fencing_token());
    ///     guard.unlock().await?;
    /// }
    /// # Ok(()) }
    /// ```
    #[doc(alias = "lock")]
    pub async fn try_lock(
        &self,
        name: &str,
        at_most_for: Duration,
        at_least_for: Duration,
    ) -> Result<Option<ScheduledLockGuard>> {
        // a try: one operation's time for its read and its write together
        let timeout = self.fw.operation_timeout();
        deadline::bounded_for(timeout, self.try_lock_within(name, at_most_for, at_least_for)).await
    }

    /// [`try_lock`](Self::try_lock), inside its deadline.
    async fn try_lock_within(
        &self,
        name: &str,
        at_most_for: Duration,
        at_least_for: Duration,
    ) -> Result<Option<ScheduledLockGuard>> {
        let path = self.path_of(name)?;
        validate_durations(at_most_for, at_least_for)?;
        let data = self.fw.request("get_data", &path, |conn| {
            let path = &path;
            async move { conn.get_data(path).await.if_exists() }
        });
        let version = match data.await? {
            None => None,
            Some((data, stat)) => match instant::parse(&data) {
                Some(until) if until <= self.clock.now_ms() => Some(stat.version),
                _ => return Ok(None),
            },
        };
        let sent_at = tokio::time::Instant::now();
        let taken_at = self.clock.now_ms();
        let until = taken_at.saturating_add(millis(at_most_for));
        if until >= END_OF_FORMAT_MS {
            return Err(Error::invalid(
                "at_most_for",
                format!("at_most_for {at_most_for:?} reaches past the year 9999"),
            ));
        }
        let bytes = instant::format(until).into_bytes();
        let stat = match write(&self.fw, &path, version, &bytes).await? {
            Written::Applied(stat) => stat,
            Written::Refused | Written::Missing => return Ok(None),
            Written::Ambiguous(_) => return Err(Error::OutcomeUnknown { path }),
        };
        tracing::debug!(%path, until = %instant::format(until), mzxid = stat.mzxid, "scheduled lock taken");
        Ok(Some(ScheduledLockGuard::new(Taking {
            fw: self.fw.clone(),
            clock: self.clock.clone(),
            name: name.to_string(),
            path,
            taken_at,
            at_most_for,
            at_least_for,
            until,
            stat,
            sent_at,
        })))
    }

    /// What the node of job `name` holds now, as stored (`2026-01-02T03:04:05.678Z`), or
    /// `None` when there is no node yet. The text is returned as is, also when it does not
    /// parse (which counts as locked).
    ///
    /// # Errors
    /// As [`path_of`](Self::path_of); the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// if let Some(until) = zk_recipes::ShedLock::new(&fw).locked_until("report").await? {
    ///     println!("report locked until {until}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn locked_until(&self, name: &str) -> Result<Option<String>> {
        let path = self.path_of(name)?;
        match self.fw.get_data_plain(&path).await {
            Ok((data, _)) => Ok(Some(String::from_utf8_lossy(&data).into_owned())),
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether job `name` is locked now by this lock's clock: its instant has not passed, or
    /// its data does not parse. `false` when there is no node.
    ///
    /// # Errors
    /// As [`locked_until`](Self::locked_until).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let busy = zk_recipes::ShedLock::new(&fw).is_locked("report").await?;
    /// # Ok(()) }
    /// ```
    pub async fn is_locked(&self, name: &str) -> Result<bool> {
        Ok(match self.locked_until(name).await? {
            None => false,
            Some(text) => instant::parse(text.as_bytes()).is_none_or(|until| until > self.clock.now_ms()),
        })
    }
}
