//! The kinds of [`Queue`](super::Queue): how an item is named when it is put, and the order
//! it is taken in.

use super::naming::Layout;

mod sealed {
    /// Only this crate's kinds.
    pub trait Sealed {
        fn layout() -> super::Layout;
    }
}

/// A kind of [`Queue`](super::Queue): [`Fifo`], [`ById`], [`ByPriority`] or [`Delayed`].
pub trait QueueKind: sealed::Sealed + Send + Sync + 'static {}

/// Curator's `DistributedQueue`: items `queue-<seq>`, first in, first out.
#[derive(Debug, Clone, Copy)]
pub struct Fifo;

/// Curator's `DistributedIdQueue`: items `queue-|<id>|<seq>`, first in, first out; removable
/// by id.
#[derive(Debug, Clone, Copy)]
pub struct ById;

/// Curator's `DistributedPriorityQueue`: items `queue-1<priority as 8 hex digits><seq>`,
/// lowest priority number first, then first in, first out.
#[derive(Debug, Clone, Copy)]
pub struct ByPriority;

/// Curator's `DistributedDelayQueue`: items `queue-|<epoch ms in hex>|<seq>`, taken from their
/// time on, earliest first.
#[derive(Debug, Clone, Copy)]
pub struct Delayed;

macro_rules! kind {
    ($kind:ty, $layout:expr) => {
        impl sealed::Sealed for $kind {
            fn layout() -> Layout {
                $layout
            }
        }
        impl QueueKind for $kind {}
    };
}

kind!(Fifo, Layout::Fifo);
kind!(ById, Layout::Id);
kind!(ByPriority, Layout::Priority);
kind!(Delayed, Layout::Delay);

/// The layout of kind `K`.
pub(crate) fn layout_of<K: QueueKind>() -> Layout {
    K::layout()
}
