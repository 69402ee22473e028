//! Distributed atomic values and numbers.

mod arith;
mod combine;
mod gate;
mod number;
mod queue;
mod value;

pub use arith::AtomicNumber;
pub use number::{DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicNumber};
pub use value::{AtomicOptions, AtomicStats, AtomicValue, DistributedAtomicValue, PromotedToLock};
