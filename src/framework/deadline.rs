//! Deadlines: how long an operation, and every step of it, may take.
//!
//! A deadline is carried in a scope ([`with_deadline`]): every framework operation awaited
//! inside it, directly or through a recipe, is bounded by it, as a gRPC call's deadline
//! reaches the calls it makes. An operation outside any scope is bounded by the framework's
//! [`operation_timeout`](crate::FrameworkBuilder::operation_timeout). The retry loop honours
//! the bound at every step (see `ops.rs`); the recipes' timed waits open a scope of their
//! own ([`bounded`]).
//!
//! The scope lives in a tokio task-local: it follows the future it wraps, not the tasks that
//! future spawns (a recipe's background work — a release, a cleanup — is not cut by the
//! caller's deadline, by design).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result, TimeoutStep};

/// How long a timed wait may take past its deadline to remove what it leaves (its contender
/// node, its barrier member) in place, before it returns anyway and that goes on in the
/// background. Under the 1 s that the timed waits promise beyond their deadline.
pub(crate) const CLEANUP_GRACE: Duration = Duration::from_millis(500);

/// A point in time by which an operation must be done: given as an [`Instant`] (tokio's or
/// std's) or as a [`Duration`] from now.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::Deadline;
///
/// let in_two_seconds = Deadline::after(Duration::from_secs(2));
/// let same_thing: Deadline = Duration::from_secs(2).into();
/// assert!(same_thing.instant() >= in_two_seconds.instant());
/// assert!(in_two_seconds.remaining() <= Duration::from_secs(2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline {
    at: Instant,
    timeout: Duration,
}

impl Deadline {
    /// The deadline `at`.
    pub fn at(at: impl Into<Instant>) -> Self {
        let at = at.into();
        Self { at, timeout: at.saturating_duration_since(Instant::now()) }
    }

    /// The deadline `timeout` from now. `Duration::MAX` (any timeout too long to add to the
    /// clock) is no bound: a deadline far in the future (about 30 years); `Duration::ZERO` is
    /// a deadline that has passed already.
    pub fn after(timeout: Duration) -> Self {
        Self { at: far(timeout), timeout }
    }

    /// When it passes.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// The time it was set for: the timeout it was made from, or the time left when it was
    /// made from an instant.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The time left (zero once it passed).
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// The earlier of the two (the timeout reported is the earlier's).
    fn min(self, other: Self) -> Self {
        if other.at < self.at {
            other
        } else {
            self
        }
    }
}

impl From<Instant> for Deadline {
    fn from(at: Instant) -> Self {
        Self::at(at)
    }
}

impl From<std::time::Instant> for Deadline {
    fn from(at: std::time::Instant) -> Self {
        Self::at(at)
    }
}

impl From<Duration> for Deadline {
    fn from(timeout: Duration) -> Self {
        Self::after(timeout)
    }
}

/// How far in the future a duration too long to add lands: about 30 years, longer than any
/// process runs, and small enough to add to any instant a clock reads.
const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `d` after `at`, saturating: a duration too long to add (`Duration::MAX` is how callers spell
/// "no bound") lands [`FAR`] after `at`. The one place where the crate adds a duration to an
/// instant: no `Instant + Duration` elsewhere, which panics on overflow.
pub(crate) fn later(at: Instant, d: Duration) -> Instant {
    at.checked_add(d).or_else(|| at.checked_add(FAR)).unwrap_or(at)
}

/// [`later`] for the wall clock (the deadlines written into node names and data).
pub(crate) fn wall_later(at: std::time::SystemTime, d: Duration) -> std::time::SystemTime {
    at.checked_add(d).or_else(|| at.checked_add(FAR)).unwrap_or(at)
}

/// `timeout` from now; a timeout too long to add is far in the future (about 30 years).
fn far(timeout: Duration) -> Instant {
    later(Instant::now(), timeout)
}

/// A scope's deadline, and until when what an abandoned wait leaves may still be removed in
/// place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope {
    pub deadline: Deadline,
    /// The deadline of cleanups inside the scope (a timed wait's grace); the deadline's own
    /// otherwise.
    cleanup_until: Instant,
}

tokio::task_local! {
    static SCOPE: Scope;
}

/// Runs `future` under `deadline`: every framework operation it awaits — directly, or
/// through a recipe — returns [`Error::Timeout`] (or, for a plain write whose reply never
/// came, [`Error::OutcomeUnknown`]) once the deadline passes, whatever the server does.
/// A scope inside another keeps the earlier of the two deadlines: an inner scope can shorten
/// the time of what it wraps, never lengthen it.
///
/// The deadline does not cut `future` itself: what it awaits other than ZooKeeper runs as it
/// would (wrap it in [`tokio::time::timeout_at`] for that). It does not reach tasks that
/// `future` spawns.
///
/// A `Duration` is from now. `Duration::MAX` (any duration too long to add to the clock) is
/// no bound: the operations inside are not cut (a scope takes the place of the framework's
/// [`operation_timeout`](crate::FrameworkBuilder::operation_timeout)). `Duration::ZERO` (or an
/// instant that has passed) is a deadline passed already: every operation inside fails with
/// [`Error::Timeout`].
///
/// # Cancel safety
/// As cancel safe as `future`.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::{with_deadline, InterProcessMutex};
///
/// // a request handler with 800 ms to answer: the lock, the read and the write share them
/// let mutex = InterProcessMutex::new(&fw, "/locks/orders")?;
/// with_deadline(Duration::from_millis(800), async {
///     let guard = mutex.acquire().await?;
///     let (stock, stat) = fw.get_data("/stock/apples").await?;
///     fw.set_data("/stock/apples", &stock, Some(stat.version)).await?;
///     guard.release().await
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn with_deadline<F: Future>(deadline: impl Into<Deadline>, future: F) -> F::Output {
    let deadline = match current() {
        Some(outer) => outer.deadline.min(deadline.into()),
        None => deadline.into(),
    };
    SCOPE.scope(Scope { deadline, cleanup_until: deadline.at }, future).await
}

/// The deadline of the scope this runs in ([`with_deadline`]), if any.
///
/// # Examples
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// use zk_recipes::{current_deadline, with_deadline};
///
/// assert!(current_deadline().is_none());
/// with_deadline(Duration::from_secs(5), async {
///     let outer = current_deadline().unwrap();
///     // an inner scope only shortens it
///     with_deadline(Duration::from_secs(60), async { assert_eq!(current_deadline(), Some(outer)) }).await;
/// })
/// .await;
/// # }
/// ```
pub fn current_deadline() -> Option<Deadline> {
    current().map(|scope| scope.deadline)
}

/// The scope this runs in, if any.
pub(crate) fn current() -> Option<Scope> {
    SCOPE.try_with(|scope| *scope).ok()
}

/// Runs a cleanup (a withdraw's delete) of the scope this runs in until its cleanup deadline
/// (a timed wait's grace past its deadline); outside a scope, as it is.
pub(crate) async fn cleanup<F: Future>(future: F) -> F::Output {
    match current() {
        Some(scope) => {
            let deadline = Deadline { at: scope.cleanup_until, timeout: scope.deadline.timeout };
            SCOPE.scope(Scope { deadline, cleanup_until: scope.cleanup_until }, future).await
        }
        None => future.await,
    }
}

/// A timed wait of a recipe: runs `body` under the deadline `at` (or the caller's scope's,
/// when earlier); what it leaves may be removed in place for [`CLEANUP_GRACE`] more, and then
/// `body` is dropped — the recipes are cancel safe: what it leaves goes in the background —
/// and the result is [`Error::Timeout`] in [`TimeoutStep::Cleanup`]. `timeout` is what the
/// caller asked for (reported in the error).
pub(crate) async fn bounded<T, F>(at: Instant, timeout: Duration, body: F) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    let mut deadline = Deadline { at, timeout };
    if let Some(outer) = current() {
        deadline = outer.deadline.min(deadline);
    }
    let cleanup_until = later(deadline.at, CLEANUP_GRACE);
    let scoped = SCOPE.scope(Scope { deadline, cleanup_until }, body);
    match tokio::time::timeout_at(cleanup_until, scoped).await {
        Ok(result) => result,
        Err(_) => {
            tracing::debug!(?timeout, "a timed wait outlived its deadline: what it left goes in the background");
            Err(Error::timeout(deadline.timeout, TimeoutStep::Cleanup))
        }
    }
}

/// [`bounded`] for a wait of at most `timeout` from now.
pub(crate) async fn bounded_for<T, F>(timeout: Duration, body: F) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    bounded(far(timeout), timeout, body).await
}

/// A recipe's wait until `until`, [`bounded`] by it; a deadline that has passed already (a
/// `try_*` form, which does not wait) is bounded by one operation's time, `operation_timeout`,
/// instead. `None` (a wait without a deadline) is bounded by the caller's scope, if any (see
/// [`scope_left`]: the public waits without a timeout take their timed form under a scope;
/// this catches the rest), else runs as it is.
pub(crate) async fn bounded_wait<T, F>(until: Option<Instant>, operation_timeout: Duration, body: F) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    let Some(at) = until else {
        return match current() {
            Some(scope) => bounded(scope.deadline.at, scope.deadline.timeout, body).await,
            None => body.await,
        };
    };
    let now = Instant::now();
    match at.checked_duration_since(now) {
        Some(left) if !left.is_zero() => bounded(at, left, body).await,
        _ => bounded(far(operation_timeout), operation_timeout, body).await,
    }
}

/// The shape of a recipe's timed wait: `wait` is given its deadline (`timeout` from now, or
/// the caller's scope's deadline when that is earlier) and says what it got by then (`None`:
/// its condition did not hold in time, which is [`Error::Timeout`] in
/// [`TimeoutStep::Waiting`], naming the timeout that ran out); it runs as [`bounded_wait`] (a
/// zero `timeout` is a `try`: its requests get `operation_timeout`).
pub(crate) async fn timed<T, F>(
    operation_timeout: Duration,
    timeout: Duration,
    wait: impl FnOnce(Instant) -> F,
) -> Result<T>
where
    F: Future<Output = Result<Option<T>>>,
{
    let own = far(timeout);
    let (at, ran_out) = match current() {
        Some(scope) if scope.deadline.at < own => (scope.deadline.at, scope.deadline.timeout),
        _ => (own, timeout),
    };
    bounded_wait(Some(own), operation_timeout, wait(at)).await?.ok_or(Error::timeout(ran_out, TimeoutStep::Waiting))
}

/// `timeout` from now (far in the future for a timeout too long to add).
pub(crate) fn after(timeout: Duration) -> Instant {
    far(timeout)
}

/// The time left in the caller's scope ([`with_deadline`]), if it runs in one: a recipe's
/// wait without a timeout (`acquire()`, `take()`...) is its timed form with that timeout
/// there, so that it ends by the scope's deadline as the scope promises.
pub(crate) fn scope_left() -> Option<Duration> {
    current_deadline().map(|deadline| deadline.remaining())
}

/// `at`, or the scope's deadline when that is earlier ([`with_deadline`]).
pub(crate) fn in_scope(at: Instant) -> Instant {
    current().map_or(at, |scope| scope.deadline.at.min(at))
}

/// The deadline of an operation starting now: the scope's, or `default` from now.
pub(crate) fn of_operation(default: Duration) -> Deadline {
    current_deadline().unwrap_or_else(|| Deadline::after(default))
}

#[cfg(test)]
mod tests {
    use super::*;
    use assert_matches::assert_matches;

    #[tokio::test]
    async fn scopes_nest_to_the_earlier_deadline_and_cleanups_get_the_grace() {
        assert!(current().is_none());
        let five = Deadline::after(Duration::from_secs(5));
        with_deadline(five, async {
            assert_eq!(current_deadline(), Some(five));
            with_deadline(Duration::from_secs(1), async {
                let inner = current_deadline().unwrap();
                assert!(inner.instant() < five.instant(), "a shorter inner scope wins");
                // a cleanup of a plain scope has no grace
                cleanup(async { assert_eq!(current_deadline(), Some(inner)) }).await;
            })
            .await;
            with_deadline(Duration::from_secs(60), async { assert_eq!(current_deadline(), Some(five)) }).await;
        })
        .await;
        let started = Instant::now();
        let out: Result<()> = bounded_for(Duration::from_millis(50), async {
            let at = current_deadline().unwrap().instant();
            cleanup(async { assert_eq!(current_deadline().unwrap().instant(), at + CLEANUP_GRACE) }).await;
            Ok(())
        })
        .await;
        assert_matches!(out, Ok(()));
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_bounded_wait_that_never_ends_is_cut_after_the_grace() {
        let started = Instant::now();
        let out: Result<()> = bounded_for(Duration::from_secs(1), std::future::pending()).await;
        assert_matches!(out, Err(Error::Timeout { timeout, step: TimeoutStep::Cleanup }) if timeout == Duration::from_secs(1));
        assert_eq!(started.elapsed(), Duration::from_secs(1) + CLEANUP_GRACE);
    }
}
