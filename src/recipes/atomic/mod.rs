//! Distributed atomic values and numbers.

mod arith;
mod combine;
mod gate;
mod joint;
mod number;
mod queue;
mod txn;
mod value;

pub use arith::AtomicNumber;
pub use number::{DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicNumber};
pub use value::{AtomicOptions, AtomicStats, AtomicValue, DistributedAtomicValue, PromotedToLock};
