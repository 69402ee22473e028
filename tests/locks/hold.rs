//! A hold of any lock kind, for tests that run one scenario over every lock.

/// A hold of any lock kind: a guard of a mutex or read-write lock, or a semaphore lease.
pub enum Hold {
    Guard(zk_recipes::LockGuard),
    Lease(zk_recipes::Lease),
}

impl std::ops::Deref for Hold {
    type Target = zk_recipes::HeldNode;
    fn deref(&self) -> &zk_recipes::HeldNode {
        match self {
            Hold::Guard(g) => g,
            Hold::Lease(l) => l,
        }
    }
}

impl Hold {
    pub async fn release(self) -> zk_recipes::Result<()> {
        match self {
            Hold::Guard(g) => g.release().await,
            Hold::Lease(l) => l.release().await,
        }
    }
}
