//! Queues: Curator's `SimpleDistributedQueue`, `DistributedQueue`, `DistributedIdQueue`,
//! `DistributedPriorityQueue` and `DistributedDelayQueue`, byte-compatible with Curator 5.x,
//! over one engine (`engine`, its state in `state`, item locks in `locking`) that lists, takes
//! and waits for every kind; the kinds differ in naming and order (`naming`), puts (`puts`)
//! and framing (`framing`).

mod builder;
mod delivery;
mod engine;
mod framing;
mod kinds;
mod locking;
mod naming;
mod puts;
#[allow(clippy::module_inception)]
mod queue;
mod simple;
mod state;
mod taken;

pub use builder::QueueBuilder;
pub use delivery::Delivery;
pub use framing::{BytesSerializer, QueueSerializer, MAX_ITEM_BYTES};
pub use kinds::{ById, ByPriority, Delayed, Fifo, QueueKind};
pub use queue::{DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue, Queue};
pub use simple::SimpleDistributedQueue;
