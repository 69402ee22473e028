//! How long an acquire may wait, in its type: waiting [`Forever`] cannot time out.
//!
//! Every acquire path is generic over [`Wait`] and ends in a [`Waited`]: the held value, or
//! the wait's [`Wait::TimedOut`]. For [`Forever`] that is uninhabited ([`Infallible`]), so
//! the forever path gets its guard with no "timed out" branch to handle (see [`held`]); for
//! [`Until`] it is [`TimedOut`], turned into the public [`Error::Timeout`] by [`timed`] (or
//! into `None` by [`in_time`] for the `try_` forms, which do not wait).

use std::convert::Infallible;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};

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
pub(crate) fn held<T>(waited: Waited<T, Forever>) -> T {
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
    Until(Instant::now() + timeout)
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
        assert_eq!(held::<u8>(Ok(7)), 7);
        assert_eq!(in_time::<u8>(Err(TimedOut)), None);
        let timeout = Duration::from_millis(5);
        assert_matches!(timed::<u8>(Err(TimedOut), timeout), Err(Error::Timeout { timeout: t, step: crate::TimeoutStep::Waiting }) if t == timeout);
        assert_matches!(timed::<u8>(Ok(3), timeout), Ok(3));
    }
}
