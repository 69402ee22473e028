//! Recipes built on the framework.

pub(crate) mod locks;

pub use locks::{
    return_all, HeldNode, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, LockGuard, Lockable, LossReason, MultiLockGuard,
};
