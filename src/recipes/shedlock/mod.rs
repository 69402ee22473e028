//! Scheduled jobs at most once across the fleet: a lock compatible with ShedLock's ZooKeeper
//! provider, and a scheduler over it.

mod clock;
mod guard;
mod instant;
mod lock;
mod scheduled;
mod tick;
mod write;

pub use guard::ScheduledLockGuard;
pub use lock::{ShedLock, SHEDLOCK_DEFAULT_ROOT};
pub use scheduled::{Scheduled, ScheduledJob, SCHEDULED_EVENT_CAPACITY};
pub use tick::{JobContext, TickOutcome};
