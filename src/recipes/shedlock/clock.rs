//! The wall clock the scheduled-job lock reads, and the checks of its durations.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::instant::{self, END_OF_FORMAT_MS};
use crate::error::{Error, Result};

/// The wall clock a lock reads: the system's, or one given for tests.
#[derive(Clone, Default)]
pub(super) struct Clock(pub(super) Option<Arc<dyn Fn() -> SystemTime + Send + Sync>>);

impl Clock {
    /// Milliseconds since the epoch, now.
    pub(super) fn now_ms(&self) -> i64 {
        instant::millis(match &self.0 {
            Some(clock) => clock(),
            None => SystemTime::now(),
        })
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Clock(given)" } else { "Clock(system)" })
    }
}

/// Whole milliseconds of `d` (saturating).
pub(super) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// `0 < at_least_for <= at_most_for`-style checks shared by the lock and the scheduler.
pub(super) fn validate_durations(at_most_for: Duration, at_least_for: Duration) -> Result<()> {
    // the lock's instants are in milliseconds: less than one is a lock that has expired when taken
    if at_most_for < Duration::from_millis(1) {
        return Err(Error::invalid("at_most_for", format!("at_most_for must be at least 1 ms, not {at_most_for:?}")));
    }
    if at_least_for > at_most_for {
        return Err(Error::invalid(
            "at_least_for",
            format!("at_least_for ({at_least_for:?}) cannot be longer than at_most_for ({at_most_for:?})"),
        ));
    }
    if millis(at_most_for) >= END_OF_FORMAT_MS {
        return Err(Error::invalid("at_most_for", format!("at_most_for {at_most_for:?} reaches past the year 9999")));
    }
    Ok(())
}
