//! Re-entrancy bookkeeping: who "the current owner" is (the tokio task, the async analogue
//! of Curator's thread) and the per-owner state of a re-entrant lock.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};

use crate::sync::lock;

/// The owner of a re-entrant hold: the current tokio task, or — outside a task (the body of
/// `block_on`, `#[tokio::test]`) — the current thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    Task(tokio::task::Id),
    Thread(std::thread::ThreadId),
}

impl Owner {
    pub fn current() -> Owner {
        match tokio::task::try_id() {
            Some(id) => Owner::Task(id),
            None => Owner::Thread(std::thread::current().id()),
        }
    }
}

/// Per-owner slots of a re-entrant lock: an async gate so that two acquires of one owner
/// never race (the second waits and then re-enters), and the entry that owner holds.
#[derive(Debug)]
pub(crate) struct Owners<E> {
    slots: Mutex<HashMap<Owner, Slot<E>>>,
}

#[derive(Debug)]
struct Slot<E> {
    gate: Arc<tokio::sync::Mutex<()>>,
    entry: Weak<E>,
}

impl<E> Default for Owners<E> {
    fn default() -> Self {
        Self { slots: Mutex::new(HashMap::new()) }
    }
}

impl<E> Owners<E> {
    /// The gate of `owner` (hold it across an acquisition).
    pub fn gate(&self, owner: Owner) -> Arc<tokio::sync::Mutex<()>> {
        let mut slots = lock(&self.slots);
        let slot = slots.entry(owner).or_insert_with(|| Slot { gate: Arc::default(), entry: Weak::new() });
        slot.gate.clone()
    }

    /// What `owner` holds now, if anything.
    pub fn held(&self, owner: Owner) -> Option<Arc<E>> {
        lock(&self.slots).get(&owner).and_then(|s| s.entry.upgrade())
    }

    /// Records what `owner` holds.
    pub fn set(&self, owner: Owner, entry: &Arc<E>) {
        if let Some(slot) = lock(&self.slots).get_mut(&owner) {
            slot.entry = Arc::downgrade(entry);
        }
    }

    /// Drops the slot of `owner` when nobody holds or waits through it any more.
    pub fn tidy(&self, owner: Owner) {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(&owner) {
            if slot.entry.strong_count() == 0 && Arc::strong_count(&slot.gate) == 1 {
                slots.remove(&owner);
            }
        }
    }
}
