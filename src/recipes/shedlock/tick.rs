//! What a schedule is made of: its ticks, what happens at each, and what a job is handed.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};
use crate::framework::LossReason;

#[derive(Clone)]
pub(super) enum Schedule {
    /// Every multiple of this many milliseconds since the Unix epoch.
    Every(i64),
    Cron(Box<croner::Cron>, String),
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Every(ms) => write!(f, "Every({ms} ms)"),
            Schedule::Cron(_, expr) => write!(f, "Cron({expr:?})"),
        }
    }
}

impl Schedule {
    /// The first tick strictly after `after_ms` (milliseconds since the epoch).
    pub(super) fn next_after(&self, after_ms: i64) -> Result<i64> {
        match self {
            Schedule::Every(every) => after_ms
                .div_euclid(*every)
                .checked_add(1)
                .and_then(|n| n.checked_mul(*every))
                .ok_or_else(|| Error::invalid("after", format!("no tick of every {every} ms after {after_ms} ms"))),
            Schedule::Cron(cron, expr) => {
                let after = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(after_ms)
                    .ok_or_else(|| Error::invalid("after", format!("no cron tick after {after_ms} ms")))?;
                let next = cron
                    .find_next_occurrence(&after, false)
                    .map_err(|e| Error::invalid("cron", format!("cron {expr:?}: no next tick: {e}")))?;
                Ok(next.timestamp_millis())
            }
        }
    }
}

/// What happened at one tick of a [`ScheduledJob`](crate::ScheduledJob), on this replica.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use futures_util::StreamExt;
/// use zk_recipes::Scheduled;
/// use zk_recipes::scheduled::TickOutcome;
///
/// let job = Scheduled::new(&fw, "cleanup")
///     .every(Duration::from_secs(60))
///     .at_most_for(Duration::from_secs(300))
///     .start(|_ctx| async move { Ok::<_, std::io::Error>(()) })
///     .await?;
/// let mut outcomes = std::pin::pin!(job.events());
/// while let Some(outcome) = outcomes.next().await {
///     match outcome {
///         TickOutcome::Ran { elapsed, .. } => println!("ran here in {elapsed:?}"),
///         TickOutcome::Skipped { .. } => {}          // another replica ran this tick
///         other if other.ran_here() => eprintln!("ran here, not to its end: {other:?}"),
///         other => eprintln!("{other:?}"),           // LockFailed: ZooKeeper trouble
///     }
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug)]
pub enum TickOutcome {
    /// This replica took the lock and the job ran to its end with `Ok`.
    Ran {
        /// The tick (by the lock's clock).
        tick: SystemTime,
        /// The fencing token of the taking.
        fencing_token: i64,
        /// How long the job ran.
        elapsed: Duration,
    },
    /// Another replica held the lock: the job did not run here.
    Skipped {
        /// The tick.
        tick: SystemTime,
    },
    /// This replica ran the job and it returned an error (the lock was unlocked).
    Failed {
        /// The tick.
        tick: SystemTime,
        /// The fencing token of the taking.
        fencing_token: i64,
        /// The job's error, as text.
        error: String,
    },
    /// This replica ran the job and lost the lock while it ran: the job was cancelled (its
    /// future dropped).
    Cancelled {
        /// The tick.
        tick: SystemTime,
        /// The fencing token of the taking.
        fencing_token: i64,
        /// Why the lock was lost.
        reason: LossReason,
    },
    /// Taking the lock failed (the job did not run here).
    LockFailed {
        /// The tick.
        tick: SystemTime,
        /// The error.
        error: Error,
    },
}

/// A copy; a `LockFailed` outcome carries a copy of its error.
impl Clone for TickOutcome {
    fn clone(&self) -> Self {
        match self {
            Self::Ran { tick, fencing_token, elapsed } => {
                Self::Ran { tick: *tick, fencing_token: *fencing_token, elapsed: *elapsed }
            }
            Self::Skipped { tick } => Self::Skipped { tick: *tick },
            Self::Failed { tick, fencing_token, error } => {
                Self::Failed { tick: *tick, fencing_token: *fencing_token, error: error.clone() }
            }
            Self::Cancelled { tick, fencing_token, reason } => {
                Self::Cancelled { tick: *tick, fencing_token: *fencing_token, reason: *reason }
            }
            Self::LockFailed { tick, error } => Self::LockFailed { tick: *tick, error: error.duplicate() },
        }
    }
}

/// Two `LockFailed` outcomes are equal when their errors are of one kind with one message.
impl PartialEq for TickOutcome {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::Ran { tick: a, fencing_token: x, elapsed: p },
                Self::Ran { tick: b, fencing_token: y, elapsed: q },
            ) => (a, x, p) == (b, y, q),
            (Self::Skipped { tick: a }, Self::Skipped { tick: b }) => a == b,
            (
                Self::Failed { tick: a, fencing_token: x, error: p },
                Self::Failed { tick: b, fencing_token: y, error: q },
            ) => (a, x, p) == (b, y, q),
            (
                Self::Cancelled { tick: a, fencing_token: x, reason: p },
                Self::Cancelled { tick: b, fencing_token: y, reason: q },
            ) => (a, x, p) == (b, y, q),
            (Self::LockFailed { tick: a, error: p }, Self::LockFailed { tick: b, error: q }) => a == b && p.same(q),
            _ => false,
        }
    }
}

impl Eq for TickOutcome {}

impl TickOutcome {
    /// The tick this outcome is about.
    pub fn tick(&self) -> SystemTime {
        match self {
            TickOutcome::Ran { tick, .. }
            | TickOutcome::Skipped { tick }
            | TickOutcome::Failed { tick, .. }
            | TickOutcome::Cancelled { tick, .. }
            | TickOutcome::LockFailed { tick, .. } => *tick,
        }
    }

    /// Whether the job ran here (to its end, with `Ok` or an error, or until cancelled).
    pub fn ran_here(&self) -> bool {
        matches!(self, TickOutcome::Ran { .. } | TickOutcome::Failed { .. } | TickOutcome::Cancelled { .. })
    }
}

/// What a job run is handed.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::{JobContext, Scheduled};
///
/// async fn report(ctx: JobContext) -> Result<(), std::io::Error> {
///     // the token makes writes of a stalled run refusable by the store
///     println!("{} for tick {:?}, token {}", ctx.name, ctx.tick, ctx.fencing_token);
///     Ok(())
/// }
/// let job = Scheduled::new(&fw, "report")
///     .every(Duration::from_secs(3_600))
///     .at_most_for(Duration::from_secs(600))
///     .start(report)
///     .await?;
/// # drop(job);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobContext {
    /// The job's name.
    pub name: String,
    /// The tick being run (by the lock's clock).
    pub tick: SystemTime,
    /// The fencing token of this taking (see
    /// [`ScheduledLockGuard::fencing_token`](crate::ScheduledLockGuard::fencing_token)).
    pub fencing_token: i64,
}
