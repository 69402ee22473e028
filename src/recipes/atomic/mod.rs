//! Distributed atomic values and numbers.

mod number;
mod value;

pub use number::{AtomicNumber, DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicNumber};
pub(crate) use value::QUEUE_NODE;
pub use value::{AtomicOptions, AtomicStats, AtomicValue, DistributedAtomicValue, PromotedToLock};
