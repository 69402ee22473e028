//! The acquire / timeout / try trio, written once for every lock kind ([`Acquire`]), and how
//! long an acquire may wait, in its type: waiting [`Forever`] cannot time out.
//!
//! A kind implements one generic acquire, [`Acquire::acquire_until`], over [`Wait`]; it ends
//! in a [`Waited`]: the guard, or the wait's [`Wait::TimedOut`]. For [`Forever`] that is
//! uninhabited ([`Infallible`]), so the forever form gets its guard with no "timed out" branch
//! to handle (see [`never_timed_out`]); for [`Until`] it is [`TimedOut`], turned into the
//! public [`Error::Timeout`] by [`timed`] (or into `None` by [`in_time`] for the `try_` forms,
//! which do not wait). The three forms are [`Acquire`]'s provided methods: each kind's public
//! `acquire`, `acquire_timeout` and `try_acquire` call them, and so does the
//! [`InterProcessLock`](super::InterProcessLock) implementation shared by every kind.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::framework::deadline;

/// How long an acquire may wait.
pub(crate) trait Wait: Copy + Send + Sync + std::fmt::Debug + 'static {
    /// What the acquire reports when its deadline passes.
    type TimedOut: Copy + Send + Sync + std::fmt::Debug;

    /// The deadline, with the outcome to report when it passes (`None`: no deadline).
    fn deadline(self) -> Option<(Instant, Self::TimedOut)>;

    /// The deadline alone.
    fn instant(self) -> Option<Instant> {
        self.deadline().map(|(at, _)| at)
    }
}

/// Wait as long as it takes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Forever;

/// Give up at this instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Until(pub Instant);

/// The deadline of an [`Until`] passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimedOut;

impl Wait for Forever {
    type TimedOut = Infallible;

    fn deadline(self) -> Option<(Instant, Infallible)> {
        None
    }
}

impl Wait for Until {
    type TimedOut = TimedOut;

    fn deadline(self) -> Option<(Instant, TimedOut)> {
        Some((self.0, TimedOut))
    }
}

/// The outcome of a wait `W`: what was acquired, or `W`'s timeout.
pub(crate) type Waited<T, W> = std::result::Result<T, <W as Wait>::TimedOut>;

/// What a wait that cannot time out acquired.
pub(crate) fn never_timed_out<T>(waited: Waited<T, Forever>) -> T {
    let Ok(value) = waited;
    value
}

/// What a bounded wait acquired (`None`: its deadline passed).
pub(crate) fn in_time<T>(waited: Waited<T, Until>) -> Option<T> {
    waited.ok()
}

/// The public shape of a wait with a timeout: the value, or [`Error::Timeout`] naming
/// `timeout`.
pub(crate) fn timed<T>(waited: Waited<T, Until>, timeout: Duration) -> Result<T> {
    waited.map_err(|TimedOut| Error::timeout(timeout, crate::TimeoutStep::Waiting))
}

/// A wait of at most `timeout` from now.
pub(crate) fn until_after(timeout: Duration) -> Until {
    Until(deadline::after(timeout))
}

/// A lock kind's acquire, generic over how long it may wait: the one method a kind writes.
/// The trio (wait, wait at most, do not wait) are its provided methods.
pub(crate) trait Acquire: Sync {
    /// What a hold of this kind is held by.
    type Guard: Send;

    /// Contends until held (`Ok(Ok)`), `wait`'s deadline passes (`Ok(Err)`, nothing left
    /// behind), or an error. Cancel safe.
    fn acquire_until<W: Wait>(&self, wait: W) -> impl Future<Output = Result<Waited<Self::Guard, W>>> + Send;

    /// Waits as long as it takes — under a caller's scope, until its deadline (as
    /// [`acquire_within`](Self::acquire_within) the time left).
    fn acquire_forever(&self) -> impl Future<Output = Result<Self::Guard>> + Send {
        async {
            match deadline::scope_left() {
                Some(left) => self.acquire_within(left).await,
                None => self.acquire_until(Forever).await.map(never_timed_out),
            }
        }
    }

    /// Waits at most `timeout`: [`Error::Timeout`] past it.
    fn acquire_within(&self, timeout: Duration) -> impl Future<Output = Result<Self::Guard>> + Send {
        async move { timed(self.acquire_until(until_after(timeout)).await?, timeout) }
    }

    /// Holds only if that needs no waiting (`None`: it is held elsewhere).
    fn acquire_now(&self) -> impl Future<Output = Result<Option<Self::Guard>>> + Send {
        async { self.acquire_until(Until(Instant::now())).await.map(in_time) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assert_matches::assert_matches;

    #[test]
    fn forever_has_no_deadline_and_until_has_its_own() {
        assert!(Forever.deadline().is_none());
        let at = Instant::now();
        assert_eq!(Until(at).instant(), Some(at));
        assert_eq!(never_timed_out::<u8>(Ok(7)), 7);
        assert_eq!(in_time::<u8>(Err(TimedOut)), None);
        let timeout = Duration::from_millis(5);
        assert_matches!(timed::<u8>(Err(TimedOut), timeout), Err(Error::Timeout { timeout: t, step: crate::TimeoutStep::Waiting }) if t == timeout);
        assert_matches!(timed::<u8>(Ok(3), timeout), Ok(3));
    }
}
