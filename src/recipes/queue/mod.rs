//! Queues: Curator's `SimpleDistributedQueue`, `DistributedQueue`, `DistributedIdQueue`,
//! `DistributedPriorityQueue` and `DistributedDelayQueue`, byte-compatible with Curator 5.x,
//! over one engine ([`engine`]) that lists, takes and waits for every kind; the kinds differ
//! in naming and order ([`naming`]) and framing ([`framing`]).

mod delivery;
mod engine;
mod framing;
mod kinds;
mod naming;
#[allow(clippy::module_inception)]
mod queue;
mod simple;

pub use delivery::Delivery;
pub use framing::{BytesSerializer, QueueSerializer, MAX_ITEM_BYTES};
pub use kinds::{ById, ByPriority, Delayed, Fifo, QueueKind};
pub use queue::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue, Queue, QueueBuilder,
};
pub use simple::SimpleDistributedQueue;
