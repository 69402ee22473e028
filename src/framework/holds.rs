//! Local hand-off knowledge: which contender nodes of this framework have held as the queue's
//! head.
//!
//! A waiter watches its predecessor. When the predecessor is deleted, Curator's protocol lists
//! the queue again, because the predecessor may have been a waiter that gave up while nodes
//! before it still hold: with N waiters queued that is an N-long listing (and sort) per hand-off,
//! O(N²) to drain the queue. But if the predecessor ever held as the head, every node before it
//! was gone at that moment and every node created since sorts after us: its deletion alone
//! makes us the head. A remote holder cannot tell us that; a holder in this process can. So a
//! sole holder marks its node here while it holds, a waiter registers the node it watches, and
//! when that node is deleted the waiter asks whether it was marked — no listing. Entries live
//! while a holder or a waiter refers to them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::session::lock;

/// The marks of one framework.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    nodes: Mutex<HashMap<String, Arc<AtomicBool>>>,
}

/// A registration of one node (by a holder or by a waiter); unregisters when dropped.
#[derive(Debug)]
pub(crate) struct HoldEntry {
    holds: Arc<Holds>,
    path: String,
    held: Arc<AtomicBool>,
}

impl Holds {
    fn entry(self: &Arc<Self>, path: &str) -> HoldEntry {
        let held = lock(&self.nodes).entry(path.to_string()).or_default().clone();
        HoldEntry { holds: self.clone(), path: path.to_string(), held }
    }

    /// Marks `path` as held by us, the queue's sole head, for as long as the entry lives.
    pub(crate) fn mark_held(self: &Arc<Self>, path: &str) -> HoldEntry {
        let entry = self.entry(path);
        entry.held.store(true, Ordering::SeqCst);
        entry
    }

    /// Registers a waiter's interest in `path`: [`HoldEntry::was_held`] then tells whether a
    /// local holder marked it at any time while the entry lived.
    pub(crate) fn watch(self: &Arc<Self>, path: &str) -> HoldEntry {
        self.entry(path)
    }
}

impl HoldEntry {
    /// Whether the node was marked as held (at any time since this entry was made, or before
    /// while another entry kept it).
    pub(crate) fn was_held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }
}

impl Drop for HoldEntry {
    fn drop(&mut self) {
        let mut nodes = lock(&self.holds.nodes);
        // the map's reference and ours: nobody else refers to the node any more
        if Arc::strong_count(&self.held) <= 2 {
            nodes.remove(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_seen_by_waiters_registered_before_and_after_and_then_forgotten() {
        let holds = Arc::new(Holds::default());
        let early = holds.watch("/l/a");
        assert!(!early.was_held());
        let held = holds.mark_held("/l/a");
        let late = holds.watch("/l/a");
        assert!(early.was_held() && late.was_held());
        drop(held);
        assert!(early.was_held(), "released after holding: still known to its waiters");
        drop((early, late));
        assert!(lock(&holds.nodes).is_empty(), "no entry outlives its users");
        assert!(!holds.watch("/l/a").was_held(), "a new node at the same path starts unmarked");
        assert!(!holds.watch("/l/b").was_held());
    }
}
