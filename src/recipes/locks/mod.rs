//! Locks: one engine, a driver per lock kind, guards.

pub(crate) mod deadline;
pub(crate) mod driver;
pub(crate) mod engine;
mod expiring_permit;
pub(crate) mod foreign;
mod gate;
mod guarded;
mod handle;
mod held;
mod holds;
mod lease;
mod lease_rank;
pub(crate) mod listings;
mod lock;
mod multilock;
mod mutex;
mod permit_name;
mod reentrant;
mod rw_sides;
mod rwlock;
mod semaphore;
mod timed_hold;
mod write_guard;

pub use expiring_permit::ExpiringPermit;
pub use held::HeldNode;
pub use lease::Lease;
pub use lock::{HeldLock, InterProcessLock};
pub use multilock::{InterProcessMultiLock, MultiLockGuard};
pub use mutex::InterProcessMutex;
pub use reentrant::LockGuard;
pub use rw_sides::{ReadLock, WriteLock};
pub use rwlock::InterProcessReadWriteLock;
pub use semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};
pub use timed_hold::TimedHold;
pub use write_guard::WriteGuard;
