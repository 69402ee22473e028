//! A job on a schedule (an interval, or a cron expression), run at most once per tick across
//! all replicas through the scheduled-job lock.

use std::fmt;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use futures_core::Stream;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use super::clock::{millis, validate_durations};
use super::instant::{self, END_OF_FORMAT_MS};
use super::lock::ShedLock;
use super::tick::{JobContext, Schedule, TickOutcome};
use crate::error::{Error, Result};
use crate::framework::Framework;
use crate::sync::lock;

/// How many outcomes a slow [`ScheduledJob::events`] consumer may fall behind before it
/// misses the oldest.
pub const SCHEDULED_EVENT_CAPACITY: usize = 1024;

/// A job on a schedule, run at most once per tick across all replicas (Spring's
/// `@Scheduled` + ShedLock's `@SchedulerLock`, for tokio).
///
/// Every replica runs the same `Scheduled` under the same name; at each tick each replica
/// [tries the lock](ShedLock::try_lock) and the one that takes it runs the job. Ticks are
/// wall-clock instants that every replica computes alike: for [`every`](Self::every), the
/// multiples of the interval since the Unix epoch (`every(1 min)` ticks at each full
/// minute, wherever a replica started); for [`cron`](Self::cron), the expression's
/// instants in UTC (through the [`croner`](https://docs.rs/croner) crate; five fields, or six
/// with seconds first).
///
/// * `at_most_for` (required): how long the lock holds if the replica running the job dies.
///   With [`keep_alive`](Self::keep_alive) (the default) it is also the extension step while
///   the job runs, so it need not cover the longest run.
/// * `at_least_for`: how long the lock holds at least after the tick, so that a replica whose
///   clock or timer is late does not run the same tick again. Default: half the time to the
///   next tick, capped at `at_most_for`.
///
/// The job is an async closure taking a [`JobContext`]. It is cancelled (its future dropped)
/// when the lock is lost while it runs. A job that runs past later ticks makes this replica
/// skip them; it does not catch up.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use futures_util::StreamExt;
/// use zk_recipes::Scheduled;
/// use zk_recipes::scheduled::TickOutcome;
///
/// let job = Scheduled::new(&fw, "nightly-report")
///     .cron("0 3 * * *")
///     .at_most_for(Duration::from_secs(600))
///     .start(|ctx| async move {
///         println!("report for {:?}, token {}", ctx.tick, ctx.fencing_token);
///         Ok::<_, std::io::Error>(())
///     })
///     .await?;
/// let mut events = std::pin::pin!(job.events());
/// while let Some(outcome) = events.next().await {
///     if let TickOutcome::Failed { error, .. } = outcome {
///         eprintln!("report failed: {error}");
///     }
/// }
/// # Ok(()) }
/// ```
///
/// # With `tokio-cron-scheduler`
/// A job of [`tokio-cron-scheduler`](https://docs.rs/tokio-cron-scheduler) keeps its own
/// schedule and takes the lock itself at each firing:
/// ```ignore
/// use tokio_cron_scheduler::{Job, JobScheduler};
///
/// let locks = zk_recipes::ShedLock::new(&fw);
/// let scheduler = JobScheduler::new().await?;
/// scheduler
///     .add(Job::new_async("0 0 3 * * *", move |_id, _scheduler| {
///         let locks = locks.clone();
///         Box::pin(async move {
///             let most = Duration::from_secs(600);
///             let least = Duration::from_secs(60); // covers the replicas' clock offsets
///             match locks.try_lock("nightly-report", most, least).await {
///                 Ok(Some(guard)) => {
///                     guard.keep_alive();
///                     tokio::select! {
///                         _ = run_report() => {}
///                         reason = guard.lost() => eprintln!("report cancelled: {reason}"),
///                     }
///                     let _ = guard.unlock().await;
///                 }
///                 Ok(None) => {} // another replica runs it
///                 Err(e) => eprintln!("cannot lock the report: {e}"),
///             }
///         })
///     })?)
///     .await?;
/// scheduler.start().await?;
/// ```
#[must_use = "a schedule does nothing until started"]
#[derive(Debug, Clone)]
pub struct Scheduled {
    lock: ShedLock,
    name: String,
    schedule: Option<Schedule>,
    error: Option<std::sync::Arc<Error>>,
    at_most_for: Option<Duration>,
    at_least_for: Option<Duration>,
    keep_alive: bool,
}

impl Scheduled {
    /// A schedule for job `name` over `fw`, with the lock's default root (`/shedlock`).
    /// Give it a schedule ([`every`](Self::every) or [`cron`](Self::cron)) and
    /// [`at_most_for`](Self::at_most_for), then [`start`](Self::start) it.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) {
    /// use std::time::Duration;
    /// let schedule = zk_recipes::Scheduled::new(&fw, "cleanup")
    ///     .every(Duration::from_secs(60))
    ///     .at_most_for(Duration::from_secs(30));
    /// # }
    /// ```
    pub fn new(fw: &Framework, name: &str) -> Self {
        Scheduled {
            lock: ShedLock::new(fw),
            name: name.to_string(),
            schedule: None,
            error: None,
            at_most_for: None,
            at_least_for: None,
            keep_alive: true,
        }
    }

    /// Uses `lock` (its root and clock) instead of `ShedLock::new(fw)`.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::{Scheduled, ShedLock};
    /// let schedule = Scheduled::new(&fw, "cleanup").lock(ShedLock::new(&fw).root("/jobs")?);
    /// # Ok(()) }
    /// ```
    pub fn lock(mut self, lock: ShedLock) -> Self {
        self.lock = lock;
        self
    }

    /// Ticks at every multiple of `interval` since the Unix epoch (so all replicas tick
    /// together). A zero or sub-millisecond interval, and one whose first tick would come
    /// after the year 9999 (where the lock's instants end; `Duration::MAX` included), are
    /// refused by [`start`](Self::start).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) {
    /// let s = zk_recipes::Scheduled::new(&fw, "poll").every(std::time::Duration::from_secs(10));
    /// # }
    /// ```
    pub fn every(mut self, interval: Duration) -> Self {
        self.error = None;
        let ms = millis(interval);
        if ms == 0 {
            self.error =
                Some(Error::invalid("every", format!("every: an interval of at least 1 ms, not {interval:?}")).into());
        } else if ms >= END_OF_FORMAT_MS {
            self.error = Some(
                Error::invalid("every", format!("every: {interval:?} ticks after the year 9999, where the lock ends"))
                    .into(),
            );
        }
        self.schedule = Some(Schedule::Every(ms.max(1)));
        self
    }

    /// Ticks at the instants of the cron expression `expr`, in UTC: five fields (`minute hour
    /// day-of-month month day-of-week`) or six with seconds first, with ranges, steps, names,
    /// `L`, `#` and `W` (the [`croner`](https://docs.rs/croner) crate). An expression that
    /// does not parse is refused by [`start`](Self::start).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) {
    /// let s = zk_recipes::Scheduled::new(&fw, "nightly").cron("0 3 * * *"); // 03:00 UTC daily
    /// # }
    /// ```
    pub fn cron(mut self, expr: &str) -> Self {
        self.error = None;
        let mut cron = croner::Cron::new(expr);
        cron.with_seconds_optional();
        match cron.parse() {
            Ok(cron) => self.schedule = Some(Schedule::Cron(Box::new(cron), expr.to_string())),
            Err(e) => self.error = Some(Error::invalid("cron", format!("cron {expr:?}: {e}")).into()),
        }
        self
    }

    /// How long the lock holds at most if this replica dies while running the job (ShedLock's
    /// `lockAtMostFor`). Required: under 1 ms (zero included), or reaching past the year 9999
    /// (`Duration::MAX` included), it is refused by [`start`](Self::start).
    pub fn at_most_for(mut self, at_most_for: Duration) -> Self {
        self.at_most_for = Some(at_most_for);
        self
    }

    /// How long the lock holds at least from the tick (ShedLock's `lockAtLeastFor`); at most
    /// `at_most_for` (a longer one is refused by [`start`](Self::start)). Zero: the lock is
    /// free again once the job is done. Default: half the time to the next tick, capped at
    /// `at_most_for`.
    pub fn at_least_for(mut self, at_least_for: Duration) -> Self {
        self.at_least_for = Some(at_least_for);
        self
    }

    /// Whether the lock is [kept alive](crate::ScheduledLockGuard::keep_alive) while the job
    /// runs (default `true`). Without it, a job still running at `at_most_for` is cancelled.
    pub fn keep_alive(mut self, keep_alive: bool) -> Self {
        self.keep_alive = keep_alive;
        self
    }

    /// The first tick strictly after `after`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] without a schedule, for a refused one, or when a cron
    /// expression has no further tick.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::time::{Duration, UNIX_EPOCH};
    /// let s = zk_recipes::Scheduled::new(&fw, "j").every(Duration::from_secs(60));
    /// assert_eq!(s.next_tick(UNIX_EPOCH + Duration::from_secs(90))?, UNIX_EPOCH + Duration::from_secs(120));
    /// # Ok(()) }
    /// ```
    pub fn next_tick(&self, after: SystemTime) -> Result<SystemTime> {
        let schedule = self.checked_schedule()?;
        schedule.next_after(instant::millis(after)).map(instant::system_time)
    }

    fn checked_schedule(&self) -> Result<&Schedule> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        self.schedule.as_ref().ok_or_else(|| Error::invalid("schedule", "a schedule needs `every(..)` or `cron(..)`"))
    }

    /// Starts the schedule: a background task that waits for each tick, tries the lock, and
    /// runs `job` when it took it. Resolves once the task is spawned; outcomes are reported by
    /// [`ScheduledJob::events`] from the first tick on.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a missing or refused schedule, a missing
    /// `at_most_for`, or durations the lock refuses (see [`ShedLock::try_lock`]); for an
    /// empty name or one with `/`.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is started before it resolves.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// let job = zk_recipes::Scheduled::new(&fw, "cleanup")
    ///     .every(Duration::from_secs(60))
    ///     .at_most_for(Duration::from_secs(30))
    ///     .start(|_ctx| async { Ok::<_, String>(()) })
    ///     .await?;
    /// job.close().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start<F, Fut, E>(self, job: F) -> Result<ScheduledJob>
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let schedule = self.checked_schedule()?.clone();
        let at_most_for =
            self.at_most_for.ok_or_else(|| Error::invalid("at_most_for", "a schedule needs `at_most_for(..)`"))?;
        validate_durations(at_most_for, self.at_least_for.unwrap_or_default())?;
        self.lock.path_of(&self.name)?;
        let (events, first) = broadcast::channel(SCHEDULED_EVENT_CAPACITY);
        let (stop, stopped) = watch::channel(false);
        let runner = Runner {
            lock: self.lock.clone(),
            name: self.name.clone(),
            schedule,
            at_most_for,
            at_least_for: self.at_least_for,
            keep_alive: self.keep_alive,
            events: events.clone(),
            stop: stopped,
        };
        let task = self.lock.framework().runtime().spawn(runner.run(job));
        // the handle keeps no sender: the events end once the runner is gone
        let events = events.downgrade();
        Ok(ScheduledJob { name: self.name, events, first: Mutex::new(Some(first)), stop, task: Mutex::new(Some(task)) })
    }
}

/// A started [`Scheduled`]: its outcomes, and [`close`](Self::close). Dropping it stops the
/// schedule as `close` does, in the background.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::Scheduled;
///
/// let job = Scheduled::new(&fw, "nightly-export")
///     .cron("0 2 * * *")
///     .at_most_for(Duration::from_secs(3_600))
///     .start(|_ctx| async move { Ok::<_, std::io::Error>(()) })
///     .await?;
/// println!("scheduled {}", job.name());
/// // ... on shutdown: stop scheduling (a run in progress is cancelled)
/// job.close().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the handle stops the schedule"]
#[derive(Debug)]
pub struct ScheduledJob {
    name: String,
    events: broadcast::WeakSender<TickOutcome>,
    first: Mutex<Option<broadcast::Receiver<TickOutcome>>>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl ScheduledJob {
    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What happens at each tick on this replica, in order: a `Stream`, since each outcome
    /// matters. The first call sees every outcome since [`start`](Scheduled::start); later
    /// calls see those from the call on. A consumer more than
    /// [`SCHEDULED_EVENT_CAPACITY`] outcomes behind misses the oldest. Ends when the schedule
    /// is closed.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(job: zk_recipes::ScheduledJob) {
    /// use futures_util::StreamExt;
    /// let mut events = std::pin::pin!(job.events());
    /// while let Some(outcome) = events.next().await {
    ///     println!("{outcome:?}");
    /// }
    /// # }
    /// ```
    pub fn events(&self) -> impl Stream<Item = TickOutcome> + Send + 'static {
        let first = lock(&self.first).take();
        let mut rx = first.or_else(|| self.events.upgrade().map(|tx| tx.subscribe()));
        let name = self.name.clone();
        async_stream::stream! {
            let Some(rx) = rx.as_mut() else { return };
            loop {
                match rx.recv().await {
                    Ok(outcome) => yield outcome,
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, %name, "a scheduled job's events consumer fell behind");
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        }
    }

    /// Stops the schedule: no further tick is tried; a job running now is cancelled (its
    /// future dropped) and its lock unlocked. Resolves once the background task has stopped.
    /// A second call is `Ok(())`.
    ///
    /// # Errors
    /// None today; the `Result` is the lifecycle's shape.
    ///
    /// # Cancel safety
    /// Cancel safe: the schedule stops all the same.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(job: zk_recipes::ScheduledJob) -> zk_recipes::Result<()> {
    /// job.close().await?;
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) -> Result<()> {
        self.stop.send_replace(true);
        let task = lock(&self.task).take();
        if let Some(task) = task {
            let _ = task.await;
        }
        Ok(())
    }
}

impl Drop for ScheduledJob {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// The background task of a started schedule.
struct Runner {
    lock: ShedLock,
    name: String,
    schedule: Schedule,
    at_most_for: Duration,
    at_least_for: Option<Duration>,
    keep_alive: bool,
    events: broadcast::Sender<TickOutcome>,
    stop: watch::Receiver<bool>,
}

impl Runner {
    async fn run<F, Fut, E>(mut self, job: F)
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let mut after = self.lock.now_ms();
        loop {
            let tick = match self.schedule.next_after(after) {
                Ok(tick) => tick,
                Err(e) => {
                    tracing::warn!(name = %self.name, error = %e, "scheduled job has no further tick");
                    return;
                }
            };
            if !self.sleep_until(tick).await {
                return;
            }
            let Some(outcome) = self.tick(tick, &job).await else { return };
            let _ = self.events.send(outcome);
            // a job that ran past later ticks does not catch up
            after = tick.max(self.lock.now_ms());
        }
    }

    /// Sleeps until the lock's clock reads `tick`; `false` when stopped.
    async fn sleep_until(&mut self, tick: i64) -> bool {
        loop {
            if *self.stop.borrow_and_update() {
                return false;
            }
            let left = tick.saturating_sub(self.lock.now_ms());
            if left <= 0 {
                return true;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(left as u64)) => {}
                _ = self.stop.changed() => return false,
            }
        }
    }

    /// One tick; `None` when stopped meanwhile.
    async fn tick<F, Fut, E>(&mut self, tick: i64, job: &F) -> Option<TickOutcome>
    where
        F: Fn(JobContext) -> Fut,
        Fut: Future<Output = std::result::Result<(), E>>,
        E: fmt::Display,
    {
        let at = instant::system_time(tick);
        let at_least_for = match self.at_least_for {
            Some(d) => d,
            None => {
                let gap = self.schedule.next_after(tick).map_or(0, |next| next.saturating_sub(tick));
                Duration::from_millis((gap / 2).max(0) as u64).min(self.at_most_for)
            }
        };
        // not raced with `stop`: a taking cut short would leave the lock held without a guard
        let taken = self.lock.try_lock(&self.name, self.at_most_for, at_least_for).await;
        let guard = match taken {
            Ok(Some(guard)) => guard,
            Ok(None) => return Some(TickOutcome::Skipped { tick: at }),
            Err(error) => return Some(TickOutcome::LockFailed { tick: at, error }),
        };
        if self.keep_alive {
            guard.keep_alive();
        }
        let fencing_token = guard.fencing_token();
        let ctx = JobContext { name: self.name.clone(), tick: at, fencing_token };
        let started = tokio::time::Instant::now();
        let outcome = tokio::select! {
            biased;
            _ = self.stop.changed() => None,
            reason = guard.lost() => Some(TickOutcome::Cancelled { tick: at, fencing_token, reason }),
            result = job(ctx) => Some(match result {
                Ok(()) => TickOutcome::Ran { tick: at, fencing_token, elapsed: started.elapsed() },
                Err(e) => TickOutcome::Failed { tick: at, fencing_token, error: e.to_string() },
            }),
        };
        if let Err(e) = guard.unlock().await {
            tracing::debug!(name = %self.name, error = %e, "unlocking a scheduled job's lock");
        }
        outcome
    }
}
