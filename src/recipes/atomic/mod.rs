//! Distributed atomic values and numbers.

mod number;
mod queue;
mod value;

pub use number::{AtomicNumber, DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicNumber};
pub use value::{AtomicOptions, AtomicStats, AtomicValue, DistributedAtomicValue, PromotedToLock};
