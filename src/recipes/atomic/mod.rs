//! Distributed atomic values and numbers.

mod number;
mod value;

pub use number::{AtomicNumber, DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicNumber};
pub use value::{AtomicOptions, AtomicStats, AtomicValue, DistributedAtomicValue, PromotedToLock};
pub(crate) use value::QUEUE_NODE;
