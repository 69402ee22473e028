//! Queueing on contention: a turn on the value's own lock, `<path>/_lock_`.
//!
//! A turn is a mutex hold taken through the lock engine (the same nodes, order and watches as
//! [`InterProcessMutex`](crate::InterProcessMutex)), with two shortcuts that only a queue of
//! writers of one node can take:
//! * the value is read pipelined behind the listing that makes us the holder (no round trip
//!   between being handed the turn and knowing the value to write from);
//! * the turn is given back inside the write's own transaction (a `delete` of our lock node in
//!   the `multi`), so the next writer is woken by the commit of our write, not one round trip
//!   later.
//!
//! The queue is only a way to take turns: every write stays versioned, so writers that do not
//! queue (Curator, `queue_on_contention: false`) stay correct, and so does a write made after
//! our turn's node went with an expired session.

use crate::error::Result;
use crate::framework::{paths, Framework};
use crate::recipes::layout;
use crate::recipes::locks::driver::Exclusive;
use crate::recipes::locks::engine::{self, Prefetched, Request};
use crate::recipes::locks::HeldNode;

/// Our turn to write: a lock hold whose node is deleted when the turn is dropped, unless a
/// write gave it back.
pub(crate) struct Turn {
    held: HeldNode,
    given_back: bool,
    /// The value as read behind the listing that gave us the turn (`None`: not read).
    pub prefetched: Option<Prefetched>,
    /// Whether we had to wait for the turn (contention goes on).
    pub waited: bool,
}

impl Turn {
    /// Waits for our turn on the queue of the value at `value_path`.
    ///
    /// # Cancel safety
    /// Cancel safe: an abandoned turn leaves no node behind.
    pub(crate) async fn take(fw: &Framework, value_path: &str) -> Result<Turn> {
        let dir = paths::join(value_path, layout::ATOMIC_QUEUE);
        let request = Request {
            dir: &dir,
            name: layout::LOCK_NAME,
            data: &[],
            driver: &Exclusive::MUTEX,
            prefetch: Some(value_path),
            ttl: None,
        };
        let mut acquired = engine::acquire(fw, &request).await?;
        let (prefetched, waited) = (acquired.prefetched.take(), acquired.waited);
        Ok(Turn { held: HeldNode::new(fw, acquired, false), given_back: false, prefetched, waited })
    }

    /// Our lock node, while the turn still has one to give back.
    pub(crate) fn node(&self) -> Option<&str> {
        (!self.given_back).then(|| self.held.path())
    }

    /// The node is gone: deleted by our write's transaction, or with our session.
    pub(crate) fn node_gone(&mut self) {
        self.given_back = true;
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if !self.given_back {
            self.held.release_in_background();
        }
    }
}
