//! Retry policies: how often and how long to wait before retrying a retryable failure.
//!
//! The formulas follow Apache Curator's policies so that a service moving from Curator keeps
//! the same timing behaviour.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use zookeeper_client::Error as ZkError;

use crate::ZooKeeperError;

/// Curator caps exponential retries at 29 so that `1 << (n + 1)` cannot overflow an `i32`.
pub const MAX_EXPONENTIAL_RETRIES: u32 = 29;

/// Decides whether a failed operation is tried again, and after how long.
///
/// The framework consults the policy only for *retryable* errors (connection loss, request
/// timeout, session moved, session expired, and the client's custom connection errors: those
/// for which [`Error::ZooKeeper`](crate::Error::ZooKeeper) answers
/// [`is_retryable`](crate::Error::is_retryable)); any other error is returned to the caller at
/// once. Whatever the policy answers, the framework never pauses past the operation's deadline
/// ([`RetryAttempt::remaining`]): a pause that would end after it ends the operation with
/// [`Error::Timeout`](crate::Error::Timeout) at once.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::ZooKeeperError;
/// use zk_recipes::{RetryAttempt, RetryPolicy};
///
/// /// Retries for at most 10 attempts, 50 ms apart (less when the deadline is close), but
/// /// never after a session expiry.
/// #[derive(Debug)]
/// struct TenTimes;
///
/// impl RetryPolicy for TenTimes {
///     fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration> {
///         let pause = Duration::from_millis(50).min(attempt.remaining() / 2);
///         (attempt.retries() < 10 && *attempt.error() != ZooKeeperError::SessionExpired).then_some(pause)
///     }
/// }
/// let first = RetryAttempt::new(0, Duration::ZERO, &ZooKeeperError::ConnectionLoss);
/// assert_eq!(TenTimes.allow_retry(&first), Some(Duration::from_millis(50)));
/// let late = first.with_remaining(Duration::from_millis(20));
/// assert_eq!(TenTimes.allow_retry(&late), Some(Duration::from_millis(10)));
/// // Framework::builder().retry_policy(TenTimes)
/// ```
pub trait RetryPolicy: Debug + Send + Sync {
    /// Returns the pause before the next attempt, or `None` to give up.
    fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration>;
}

/// What a [`RetryPolicy`] decides on: the failed attempt's error, how many retries were made,
/// the time since the first attempt and the time left before the operation's deadline.
#[derive(Debug, Clone, Copy)]
pub struct RetryAttempt<'a> {
    retries: u32,
    elapsed: Duration,
    remaining: Duration,
    error: &'a ZooKeeperError,
}

impl<'a> RetryAttempt<'a> {
    /// An attempt that failed with `error` after `retries` retries, `elapsed` after the first
    /// attempt started, with no deadline in sight (see [`with_remaining`](Self::with_remaining)).
    /// For testing a policy; the framework makes these.
    pub fn new(retries: u32, elapsed: Duration, error: &'a ZooKeeperError) -> Self {
        Self { retries, elapsed, remaining: Duration::MAX, error }
    }

    /// The same attempt with `remaining` left before the operation's deadline
    /// (`Duration::MAX`: no deadline, as [`new`](Self::new) makes it; zero: it has passed).
    pub fn with_remaining(mut self, remaining: Duration) -> Self {
        self.remaining = remaining;
        self
    }

    /// The number of retries made so far (0 before the first retry).
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// The time since the first attempt started.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// The time left before the operation's deadline (its scope's, or the framework's
    /// operation timeout): a pause longer than that is not taken.
    pub fn remaining(&self) -> Duration {
        self.remaining
    }

    /// The error of the attempt that failed (always a retryable one).
    pub fn error(&self) -> &'a ZooKeeperError {
        self.error
    }
}

/// Whether an error may go away by itself, so that retrying the operation makes sense:
/// connection loss, operation timeout, session moved and session expired.
///
/// `zookeeper-client` fails the requests in flight with the error that broke their
/// connection, which is not always `ConnectionLoss`: a read timeout is reported as a custom
/// error ("no response from connection in …ms"), a socket error as a custom error wrapping the
/// I/O error. The client raises custom errors only from its connection handling, so they count
/// as a connection loss here (the request may or may not have been applied).
pub(crate) fn is_retryable(error: &ZkError) -> bool {
    // (one rule: the crate's own error type's)
    ZooKeeperError::from_client(error).is_retryable()
}

impl<P: RetryPolicy + ?Sized> RetryPolicy for Arc<P> {
    fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration> {
        (**self).allow_retry(attempt)
    }
}

impl<P: RetryPolicy + ?Sized> RetryPolicy for Box<P> {
    fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration> {
        (**self).allow_retry(attempt)
    }
}

/// Curator's `ExponentialBackoffRetry`: sleep `base × r` where `r` is a random integer in
/// `[1, 2^(retries+1))`, optionally capped at `max_sleep`, for at most `max_retries` retries
/// (itself capped at [`MAX_EXPONENTIAL_RETRIES`]).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::ExponentialBackoff;
///
/// // Curator's ExponentialBackoffRetry(100, 5): 100 ms × a random factor that doubles per retry
/// let policy = ExponentialBackoff::new(Duration::from_millis(100), 5);
/// assert_eq!(policy.sleep_for(0, 0), Duration::from_millis(100));
/// // Framework::builder().retry_policy(policy)
/// ```
#[derive(Debug, Clone)]
pub struct ExponentialBackoff {
    base: Duration,
    max_retries: u32,
    max_sleep: Duration,
}

impl ExponentialBackoff {
    /// Backoff starting at `base`, giving up after `max_retries` retries (capped at 29). Any
    /// `base` is taken: zero retries at once, and a sleep too long to count saturates at
    /// `Duration::MAX` (a pause past the operation's deadline is not taken: see
    /// [`RetryPolicy`]).
    pub fn new(base: Duration, max_retries: u32) -> Self {
        Self { base, max_retries: max_retries.min(MAX_EXPONENTIAL_RETRIES), max_sleep: Duration::MAX }
    }

    /// The sleep for retry number `retries` given a random draw `random` (any `u32`): the draw
    /// is reduced to `[0, 2^(retries+1))` and a zero counts as one, as in Curator.
    pub fn sleep_for(&self, retries: u32, random: u32) -> Duration {
        let span = 1u64 << (retries.min(MAX_EXPONENTIAL_RETRIES) + 1);
        let factor = (u64::from(random) % span).max(1);
        let factor = u32::try_from(factor).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.max_sleep)
    }
}

impl RetryPolicy for ExponentialBackoff {
    fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration> {
        let retries = attempt.retries();
        (retries < self.max_retries).then(|| self.sleep_for(retries, fastrand::u32(..)))
    }
}

/// Curator's `BoundedExponentialBackoffRetry`: [`ExponentialBackoff`] whose sleep never
/// exceeds `max_sleep`.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::BoundedExponentialBackoff;
///
/// // as ExponentialBackoff, but no pause longer than 2 s
/// let policy = BoundedExponentialBackoff::new(Duration::from_millis(100), Duration::from_secs(2), 10);
/// assert!(policy.sleep_for(9, u32::MAX) <= Duration::from_secs(2));
/// ```
#[derive(Debug, Clone)]
pub struct BoundedExponentialBackoff(ExponentialBackoff);

impl BoundedExponentialBackoff {
    /// Backoff from `base`, each sleep at most `max_sleep`, at most `max_retries` (≤ 29) retries.
    /// Any durations are taken, as by [`ExponentialBackoff::new`].
    pub fn new(base: Duration, max_sleep: Duration, max_retries: u32) -> Self {
        let mut inner = ExponentialBackoff::new(base, max_retries);
        inner.max_sleep = max_sleep;
        Self(inner)
    }

    /// See [`ExponentialBackoff::sleep_for`]; the result is capped at `max_sleep`.
    pub fn sleep_for(&self, retries: u32, random: u32) -> Duration {
        self.0.sleep_for(retries, random)
    }
}

impl RetryPolicy for BoundedExponentialBackoff {
    fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration> {
        self.0.allow_retry(attempt)
    }
}

/// Curator's `RetryNTimes`: up to `n` retries, `sleep` between them.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::ZooKeeperError;
/// use zk_recipes::{RetryAttempt, RetryNTimes, RetryPolicy};
///
/// let policy = RetryNTimes::new(3, Duration::from_millis(500));
/// assert_eq!(policy.allow_retry(&RetryAttempt::new(2, Duration::ZERO, &ZooKeeperError::ConnectionLoss)), Some(Duration::from_millis(500)));
/// assert_eq!(policy.allow_retry(&RetryAttempt::new(3, Duration::ZERO, &ZooKeeperError::ConnectionLoss)), None);
/// ```
#[derive(Debug, Clone)]
pub struct RetryNTimes {
    n: u32,
    sleep: Duration,
}

impl RetryNTimes {
    /// At most `n` retries with a fixed pause (zero: at once; a pause past the operation's
    /// deadline, `Duration::MAX` included, is not taken: see [`RetryPolicy`]).
    pub fn new(n: u32, sleep: Duration) -> Self {
        Self { n, sleep }
    }
}

impl RetryPolicy for RetryNTimes {
    fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration> {
        (attempt.retries() < self.n).then_some(self.sleep)
    }
}

/// Curator's `RetryOneTime`: exactly one retry after `sleep`.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::ZooKeeperError;
/// use zk_recipes::retry::RetryOneTime;
/// use zk_recipes::{RetryAttempt, RetryPolicy};
///
/// let policy = RetryOneTime::new(Duration::from_millis(100));
/// assert!(policy.allow_retry(&RetryAttempt::new(0, Duration::ZERO, &ZooKeeperError::ConnectionLoss)).is_some());
/// assert!(policy.allow_retry(&RetryAttempt::new(1, Duration::ZERO, &ZooKeeperError::ConnectionLoss)).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct RetryOneTime(RetryNTimes);

impl RetryOneTime {
    /// One retry after `sleep` (any duration, as [`RetryNTimes::new`]).
    pub fn new(sleep: Duration) -> Self {
        Self(RetryNTimes::new(1, sleep))
    }
}

impl RetryPolicy for RetryOneTime {
    fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration> {
        self.0.allow_retry(attempt)
    }
}

/// Curator's `RetryUntilElapsed`: retry with a fixed pause while less than `max_elapsed` has
/// passed since the first attempt.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::ZooKeeperError;
/// use zk_recipes::retry::RetryUntilElapsed;
/// use zk_recipes::{RetryAttempt, RetryPolicy};
///
/// // retry every 200 ms for up to 10 s
/// let policy = RetryUntilElapsed::new(Duration::from_secs(10), Duration::from_millis(200));
/// assert!(policy.allow_retry(&RetryAttempt::new(7, Duration::from_secs(3), &ZooKeeperError::ConnectionLoss)).is_some());
/// assert!(policy.allow_retry(&RetryAttempt::new(7, Duration::from_secs(11), &ZooKeeperError::ConnectionLoss)).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct RetryUntilElapsed {
    max_elapsed: Duration,
    sleep: Duration,
}

impl RetryUntilElapsed {
    /// Retry every `sleep` until `max_elapsed` has passed (zero: never retry; `Duration::MAX`:
    /// as long as the operation's deadline allows). `sleep` as in [`RetryNTimes::new`].
    pub fn new(max_elapsed: Duration, sleep: Duration) -> Self {
        Self { max_elapsed, sleep }
    }
}

impl RetryPolicy for RetryUntilElapsed {
    fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration> {
        (attempt.elapsed() < self.max_elapsed).then_some(self.sleep)
    }
}

/// Curator's `RetryForever`: never gives up, fixed pause.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::ZooKeeperError;
/// use zk_recipes::{RetryAttempt, RetryForever, RetryPolicy};
///
/// let policy = RetryForever::new(Duration::from_secs(1));
/// assert_eq!(policy.allow_retry(&RetryAttempt::new(1_000, Duration::from_secs(3_600), &ZooKeeperError::ConnectionLoss)), Some(Duration::from_secs(1)));
/// ```
#[derive(Debug, Clone)]
pub struct RetryForever {
    sleep: Duration,
}

impl RetryForever {
    /// Retry every `sleep`, forever (until the operation's deadline; `sleep` as in
    /// [`RetryNTimes::new`]).
    pub fn new(sleep: Duration) -> Self {
        Self { sleep }
    }
}

impl RetryPolicy for RetryForever {
    fn allow_retry(&self, _attempt: &RetryAttempt<'_>) -> Option<Duration> {
        Some(self.sleep)
    }
}

/// Curator's `SessionFailedRetryPolicy`: delegates to `P` but never retries a session expiry,
/// so that work bound to the old session fails instead of continuing on a new one.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::ZooKeeperError;
/// use zk_recipes::retry::NoRetryOnSessionExpiry;
/// use zk_recipes::{ExponentialBackoff, RetryAttempt, RetryPolicy};
///
/// let policy = NoRetryOnSessionExpiry(ExponentialBackoff::new(Duration::from_millis(100), 3));
/// assert!(policy.allow_retry(&RetryAttempt::new(0, Duration::ZERO, &ZooKeeperError::ConnectionLoss)).is_some());
/// assert!(policy.allow_retry(&RetryAttempt::new(0, Duration::ZERO, &ZooKeeperError::SessionExpired)).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct NoRetryOnSessionExpiry<P>(pub P);

impl<P: RetryPolicy> RetryPolicy for NoRetryOnSessionExpiry<P> {
    fn allow_retry(&self, attempt: &RetryAttempt<'_>) -> Option<Duration> {
        if *attempt.error() == ZooKeeperError::SessionExpired {
            return None;
        }
        self.0.allow_retry(attempt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const LOSS: ZooKeeperError = ZooKeeperError::ConnectionLoss;

    #[test]
    fn retryable_errors_are_the_four_transient_ones() {
        for e in [ZkError::ConnectionLoss, ZkError::Timeout, ZkError::SessionMoved, ZkError::SessionExpired] {
            assert!(is_retryable(&e), "{e:?}");
        }
        for e in [ZkError::NoNode, ZkError::NodeExists, ZkError::NoAuth, ZkError::BadVersion, ZkError::NotEmpty] {
            assert!(!is_retryable(&e), "{e:?}");
        }
    }

    #[test]
    fn exponential_sleep_is_base_times_draw_in_range() {
        let p = ExponentialBackoff::new(10 * MS, 10);
        // retries = 0: factor in [1, 2); a zero draw counts as one.
        assert_eq!(p.sleep_for(0, 0), 10 * MS);
        assert_eq!(p.sleep_for(0, 1), 10 * MS);
        assert_eq!(p.sleep_for(0, 2), 10 * MS); // 2 % 2 = 0 -> 1
                                                // retries = 2: factor in [1, 8).
        assert_eq!(p.sleep_for(2, 7), 70 * MS);
        assert_eq!(p.sleep_for(2, 8), 10 * MS);
        assert_eq!(p.sleep_for(2, 13), 50 * MS);
        // every draw stays inside [base, base * (2^(n+1) - 1)]
        for n in 0..12 {
            for r in [0, 1, 2, 3, 1000, u32::MAX] {
                let s = p.sleep_for(n, r);
                assert!(s >= 10 * MS && s <= 10 * MS * ((1 << (n + 1)) - 1), "n={n} r={r} s={s:?}");
            }
        }
    }

    #[test]
    fn exponential_gives_up_after_max_retries_capped_at_29() {
        let p = ExponentialBackoff::new(MS, 3);
        assert!(p.allow_retry(&RetryAttempt::new(0, Duration::ZERO, &LOSS)).is_some());
        assert!(p.allow_retry(&RetryAttempt::new(2, Duration::ZERO, &LOSS)).is_some());
        assert!(p.allow_retry(&RetryAttempt::new(3, Duration::ZERO, &LOSS)).is_none());
        let capped = ExponentialBackoff::new(MS, 1000);
        assert!(capped.allow_retry(&RetryAttempt::new(28, Duration::ZERO, &LOSS)).is_some());
        assert!(capped.allow_retry(&RetryAttempt::new(29, Duration::ZERO, &LOSS)).is_none());
        // no overflow at the cap
        let _ = capped.sleep_for(40, u32::MAX);
    }

    #[test]
    fn bounded_exponential_never_exceeds_max_sleep() {
        let p = BoundedExponentialBackoff::new(10 * MS, 25 * MS, 29);
        assert_eq!(p.sleep_for(5, 63), 25 * MS);
        assert_eq!(p.sleep_for(0, 1), 10 * MS);
        for n in 0..29 {
            let s = p.allow_retry(&RetryAttempt::new(n, Duration::ZERO, &LOSS)).expect("retry");
            assert!(s <= 25 * MS && s >= 10 * MS);
        }
        assert!(p.allow_retry(&RetryAttempt::new(29, Duration::ZERO, &LOSS)).is_none());
    }

    #[test]
    fn n_times_one_time_until_elapsed_forever() {
        let n = RetryNTimes::new(2, 5 * MS);
        assert_eq!(n.allow_retry(&RetryAttempt::new(0, Duration::ZERO, &LOSS)), Some(5 * MS));
        assert_eq!(n.allow_retry(&RetryAttempt::new(1, Duration::ZERO, &LOSS)), Some(5 * MS));
        assert_eq!(n.allow_retry(&RetryAttempt::new(2, Duration::ZERO, &LOSS)), None);

        let one = RetryOneTime::new(7 * MS);
        assert_eq!(one.allow_retry(&RetryAttempt::new(0, Duration::ZERO, &LOSS)), Some(7 * MS));
        assert_eq!(one.allow_retry(&RetryAttempt::new(1, Duration::ZERO, &LOSS)), None);

        let until = RetryUntilElapsed::new(100 * MS, 3 * MS);
        assert_eq!(until.allow_retry(&RetryAttempt::new(50, 99 * MS, &LOSS)), Some(3 * MS));
        assert_eq!(until.allow_retry(&RetryAttempt::new(0, 100 * MS, &LOSS)), None);

        let forever = RetryForever::new(MS);
        assert_eq!(forever.allow_retry(&RetryAttempt::new(u32::MAX, Duration::MAX, &LOSS)), Some(MS));
    }

    #[test]
    fn session_expiry_is_never_retried_by_the_wrapper() {
        let p = NoRetryOnSessionExpiry(RetryForever::new(MS));
        assert_eq!(p.allow_retry(&RetryAttempt::new(0, Duration::ZERO, &ZooKeeperError::SessionExpired)), None);
        assert_eq!(p.allow_retry(&RetryAttempt::new(0, Duration::ZERO, &LOSS)), Some(MS));
        assert_eq!(p.allow_retry(&RetryAttempt::new(0, Duration::ZERO, &ZooKeeperError::SessionMoved)), Some(MS));
    }
}
