//! The local queue of a mutex (its [`Driver`](super::driver::Driver) queues locally): a process's acquires of one lock path go into ZooKeeper's queue
//! at most [`DEPTH`] at a time (per framework); the others wait here, in arrival order.
//!
//! Why: every contender in ZooKeeper's queue costs a node, a create, a watch, an entry in every
//! other contender's listing, and on our side a full acquire (its request slots, watch channels
//! and names: about 4 KB). A contender waiting here costs its task and a place in a fair
//! semaphore (well under 1 KB), and nothing on the server. 10,000 tasks queued on one lock
//! path hold [`DEPTH`] nodes, not 10,000.
//!
//! Order: within a process, acquires hold in the order they arrived. A waiter takes the queue's
//! create order (a fair lock) before its place, and gives it up only once its create has
//! answered that its node exists: so the sequence numbers come back in arrival order, however
//! late the runtime gets to a waiter it woke (without the create order, the next place's owner could
//! send its create first and hold first), and when the connection drops under a create (the
//! create is retried, and looks for the node it may have made first, with the create order still
//! held: the next waiter's create, pipelined right after the reconnect, would sort first).
//! Against
//! other processes, a process is in ZooKeeper's queue with at most [`DEPTH`] contenders: one
//! arriving later elsewhere may hold before this process's waiters beyond the first
//! [`DEPTH`]. Curator's contenders (a thread each) see fewer nodes and behave as before.
//!
//! A place is left when the acquire ends: held, timed out, failed or dropped. The hand-off from
//! a local holder stays listing-free (`handoff.rs`): the contenders in ZooKeeper's queue
//! are [`DEPTH`] deep, so the next one is queued, and watching, before the holder lets go.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};

use crate::sync::lock;

/// At most this many acquires of one framework contend for one lock path in ZooKeeper's
/// queue at a time. Deep enough that draining a local queue never waits for a create: each
/// hand-off takes one notification, the entrant behind it a create and a listing, in flight
/// meanwhile.
pub(crate) const DEPTH: usize = 8;

/// The local queues of one framework, by lock path; a path's queue exists while an acquire
/// of it is in flight.
#[derive(Debug, Default)]
pub(crate) struct LocalQueues {
    paths: Mutex<HashMap<String, PathQueue>>,
}

/// One path's queue.
#[derive(Debug)]
struct PathQueue {
    places: Arc<Semaphore>,
    /// Held from before a place is taken until that place's node is created.
    order: Arc<AsyncMutex<()>>,
    /// Acquires in flight: waiting here or in ZooKeeper's queue.
    users: usize,
}

/// An acquire's registration with its path's queue: a place in ZooKeeper's queue once
/// [`LocalQueues::enter`] returns it; left when dropped.
#[derive(Debug)]
pub(crate) struct Place {
    queues: Arc<LocalQueues>,
    path: String,
    permit: Option<OwnedSemaphorePermit>,
    order: Option<CreateOrder>,
}

/// The right to create next, held by the acquire that takes the next place until its node is created
/// (see [`Place::take_create_order`]).
pub(crate) type CreateOrder = OwnedMutexGuard<()>;

impl LocalQueues {
    /// Waits for a place in ZooKeeper's queue of the lock at `path`, behind every local
    /// acquire that asked before.
    ///
    /// Cancel safe: dropped while it waits, it gives up its create order and takes no place.
    pub(crate) async fn enter(self: &Arc<Self>, path: &str) -> Place {
        let (places, order) = {
            let mut gates = lock(&self.paths);
            let gate = gates.entry(path.to_string()).or_insert_with(|| PathQueue {
                places: Arc::new(Semaphore::new(DEPTH)),
                order: Arc::default(),
                users: 0,
            });
            gate.users += 1;
            (gate.places.clone(), gate.order.clone())
        };
        // registered: from here on a drop of ours unregisters
        let mut place = Place { queues: self.clone(), path: path.to_string(), permit: None, order: None };
        // the create order first, then the place: the next one waits for our create, not just our place
        place.order = Some(order.lock_owned().await);
        // (the semaphore is never closed; if it were, the acquire would go on without a place)
        place.permit = places.acquire_owned().await.ok();
        place
    }

    /// The paths with a queue now (acquires in flight), for tests.
    #[cfg(test)]
    pub(crate) fn paths(&self) -> usize {
        lock(&self.paths).len()
    }
}

impl Place {
    /// The create order, for the acquire to give up once its node is created (the next local acquire
    /// takes the next place then); `None` once taken.
    pub(crate) fn take_create_order(&mut self) -> Option<CreateOrder> {
        self.order.take()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        // the place first: the next local acquire may enter at once
        drop(self.permit.take());
        let mut gates = lock(&self.queues.paths);
        if let Some(gate) = gates.get_mut(&self.path) {
            gate.users -= 1;
            if gate.users == 0 {
                gates.remove(&self.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn places_are_fifo_and_bounded_and_queues_go_with_their_last_acquire() {
        let gates = Arc::new(LocalQueues::default());
        let mut inside = Vec::new();
        for _ in 0..DEPTH {
            let mut place = gates.enter("/a").await;
            // its create sent
            drop(place.take_create_order());
            inside.push(place);
        }
        // DEPTH places taken: the next two wait, in order
        let (g1, g2) = (gates.clone(), gates.clone());
        let first = tokio::spawn(async move { g1.enter("/a").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let second = tokio::spawn(async move { g2.enter("/a").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!first.is_finished() && !second.is_finished(), "more than DEPTH places");
        // another path is not held up
        let other = tokio::time::timeout(Duration::from_secs(1), gates.enter("/b")).await.expect("/b waited for /a");
        drop(inside.pop());
        let mut first =
            tokio::time::timeout(Duration::from_secs(1), first).await.expect("the first never entered").unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!second.is_finished(), "the second entered before a place was free");
        // a place free, but the first has not sent its create yet: the second waits for that
        drop(inside.pop());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!second.is_finished(), "the second entered before the first had sent its create");
        drop(first.take_create_order());
        let mut second =
            tokio::time::timeout(Duration::from_secs(1), second).await.expect("the second never entered").unwrap();
        drop(second.take_create_order());
        // a waiter dropped while it waits gives up its create order and takes nothing
        let g3 = gates.clone();
        let dropped = tokio::spawn(async move { g3.enter("/a").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        dropped.abort();
        assert!(dropped.await.unwrap_err().is_cancelled());
        drop(first);
        drop((second, other));
        assert_eq!(gates.paths(), 1, "/b's queue outlived its last acquire");
        drop(inside);
        assert_eq!(gates.paths(), 0, "a queue outlived its acquires");
    }
}
