//! Barriers: a gate that holds waiters until removed, and a double barrier that lets a group
//! enter and leave together.

mod barrier;
mod double_barrier;

pub use barrier::DistributedBarrier;
pub use double_barrier::DistributedDoubleBarrier;
