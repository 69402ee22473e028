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
            deadline: None,
            prefetch: Some(value_path),
        };
        let mut acquired =
            engine::acquire(fw, &request).await?.ok_or(crate::Error::Timeout(std::time::Duration::MAX))?;
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

#[cfg(all(test, feature = "testing"))]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Turns exclude each other, and the value a turn comes with shows every earlier turn's
    /// write: 8 sessions add 1 each turn with UNversioned writes (only the queue keeps them
    /// apart), so a stale value (say, one read with an earlier listing) loses increments.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn turns_exclude_and_the_prefetched_value_is_current() {
        const SESSIONS: usize = 8;
        const TURNS: usize = 25;
        let cs = crate::testing::shared_server().await.unwrap();
        let path = format!("/atomic-queue-test-{}", std::process::id());
        let setup = Framework::connect(&cs).await.unwrap();
        setup.create(&path, b"0", zookeeper_client::CreateMode::Persistent).await.unwrap();
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let prefetched = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..SESSIONS {
            let (cs, path, inside, prefetched) = (cs.clone(), path.clone(), inside.clone(), prefetched.clone());
            tasks.push(tokio::spawn(async move {
                let fw = Framework::connect(&cs).await.unwrap();
                for _ in 0..TURNS {
                    let mut turn = Turn::take(&fw, &path).await.unwrap();
                    assert_eq!(inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0, "two turns at once");
                    let value = match turn.prefetched.take() {
                        Some(read) => {
                            prefetched.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            read.expect("the value node exists").0
                        }
                        None => fw.get_data(&path).await.unwrap().0,
                    };
                    let n: u64 = String::from_utf8(value).unwrap().parse().unwrap();
                    fw.set_data(&path, (n + 1).to_string().as_bytes(), None).await.unwrap();
                    inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    assert!(turn.node().is_some());
                    drop(turn); // gives the turn back: its delete is sent at once
                }
                fw.close();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let (data, _) = setup.get_data(&path).await.unwrap();
        assert_eq!(String::from_utf8(data).unwrap(), (SESSIONS * TURNS).to_string(), "lost increments");
        let queue = paths::join(&path, layout::ATOMIC_QUEUE);
        assert!(setup.children(&queue).await.unwrap().is_empty(), "a turn's node was left behind");
        assert!(prefetched.load(std::sync::atomic::Ordering::SeqCst) > 0, "no turn came with its value");
        setup.close();
    }
}
