//! Locks: one engine, a driver per lock kind, guards.

pub(crate) mod deadline;
pub(crate) mod driver;
pub(crate) mod engine;
mod guarded;
mod handle;
mod held;
mod holds;
mod lease;
mod leased;
pub(crate) mod listings;
mod lock;
mod multilock;
mod mutex;
mod owner;
mod permit;
mod permit_name;
mod reentrant;
mod rwlock;
mod semaphore;

pub use held::HeldNode;
pub use lease::Lease;
pub use leased::LeasedHold;
pub use lock::{HeldLock, InterProcessLock};
pub use multilock::{InterProcessMultiLock, MultiLockGuard};
pub use mutex::InterProcessMutex;
pub use permit::ExpiringLease;
pub use reentrant::LockGuard;
pub use rwlock::{InterProcessReadWriteLock, ReadLock, WriteLock};
pub use semaphore::{return_all, InterProcessSemaphoreMutex, InterProcessSemaphoreV2};
