//! The hand-off optimisation, all of it: which contender nodes of this framework have held as
//! the queue's head, and what a waiter concludes from that.
//!
//! A waiter watches its predecessor. When the predecessor is deleted, Curator's protocol lists
//! the queue again, because the predecessor may have been a waiter that gave up while nodes
//! before it still hold: with N waiters queued that is an N-long listing (and sort) per hand-off,
//! O(N²) to drain the queue. But if the predecessor ever held as the head, every node before it
//! was gone at that moment and every node created since sorts after us: its deletion alone
//! makes us the head. A remote holder cannot tell us that; a holder in this process can. So a
//! sole holder marks its node here while it holds ([`HandOff::mark_if_sole`]), a waiter
//! registers the node it watches ([`HandOff::follow`]), and when that node is deleted the
//! waiter asks whether it was marked ([`Mark::was_held`]) — no listing.
//!
//! Local contender nodes are also known while they contend ([`HandOff::contender`], by their
//! protection prefix, registered before the create is sent): a waiter behind a local node needs
//! no early listing (the "ahead" watch of the rules), since that node marks itself when it
//! holds ([`HandOff::is_local`]).
//!
//! Invariants:
//! * a node is marked only by its holder, only while it holds as the sole head (the rules'
//!   [`sole_holder`](super::rules::Rules::sole_holder)), and before it is deleted;
//! * a waiter follows a node only where the rules say its deletion after holding makes us the
//!   head ([`holds_after_holder`](super::rules::Rules::holds_after_holder): not behind a
//!   writer, which may downgrade and leave a read node in its place);
//! * the follower registers before its watch is set, so a mark made before the deletion it is
//!   woken by is seen; a mark missed (a watch kept from before) only costs a listing;
//! * entries live while a holder or a follower refers to them: a new node at the same path
//!   starts unmarked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::rules::Rules;
use crate::framework::ProtectedName;
use crate::sync::lock;

/// The marks of one framework.
#[derive(Debug, Default)]
pub(crate) struct HandOff {
    nodes: Mutex<HashMap<String, Arc<AtomicBool>>>,
    contenders: Mutex<std::collections::HashSet<String>>,
}

/// A local contender (its protection prefix), known as such while this lives.
#[derive(Debug)]
pub(crate) struct Contender {
    holds: Arc<HandOff>,
    prefix: String,
}

impl Drop for Contender {
    fn drop(&mut self) {
        lock(&self.holds.contenders).remove(&self.prefix);
    }
}

/// A registration of one node (by a holder or by a waiter); unregisters when dropped.
#[derive(Debug)]
pub(crate) struct Mark {
    holds: Arc<HandOff>,
    path: String,
    held: Arc<AtomicBool>,
}

impl HandOff {
    /// Marks `path`, which holds now, when the rules make it the queue's sole head: for as
    /// long as the hold keeps the mark.
    pub(crate) fn mark_if_sole(self: &Arc<Self>, rules: &dyn Rules, path: &str) -> Option<Arc<Mark>> {
        rules.sole_holder().then(|| Arc::new(self.mark_held(path)))
    }

    /// Follows the one node a waiter watches (`watched`, the path of `node`), where the rules
    /// say that its deletion after it held makes us the head: registered before the watch is
    /// set. Also says whether that node is a local contender (no early listing needed).
    pub(crate) fn follow(self: &Arc<Self>, rules: &dyn Rules, nodes: &[String], watched: &str) -> Followed {
        match nodes {
            [only] if rules.holds_after_holder(only) => {
                let mark = self.watch(watched);
                Followed { local: self.is_local(watched), mark: Some(mark) }
            }
            _ => Followed { mark: None, local: false },
        }
    }

    fn entry(self: &Arc<Self>, path: &str) -> Mark {
        let held = lock(&self.nodes).entry(path.to_string()).or_default().clone();
        Mark { holds: self.clone(), path: path.to_string(), held }
    }

    /// Marks `path` as held by us, the queue's sole head, for as long as the entry lives.
    pub(crate) fn mark_held(self: &Arc<Self>, path: &str) -> Mark {
        let entry = self.entry(path);
        entry.held.store(true, Ordering::SeqCst);
        entry
    }

    /// Registers our contender by its protection prefix (`_c_<uuid>-`) while it contends.
    pub(crate) fn contender(self: &Arc<Self>, prefix: &str) -> Contender {
        lock(&self.contenders).insert(prefix.to_string());
        Contender { holds: self.clone(), prefix: prefix.to_string() }
    }

    /// Whether the node at `path` is one of our contenders: still contending, or marked as
    /// holding.
    pub(crate) fn is_local(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        let contending = ProtectedName::prefix_of(name).is_some_and(|p| lock(&self.contenders).contains(p));
        contending || lock(&self.nodes).get(path).is_some_and(|h| h.load(Ordering::SeqCst))
    }

    /// Registers a waiter's interest in `path`: [`Mark::was_held`] then tells whether a
    /// local holder marked it at any time while the entry lived.
    pub(crate) fn watch(self: &Arc<Self>, path: &str) -> Mark {
        self.entry(path)
    }
}

/// A waiter's registration with the node it watches ([`HandOff::follow`]).
#[derive(Debug)]
pub(crate) struct Followed {
    /// The registration (`None`: the rules give no hand-off there).
    pub mark: Option<Mark>,
    /// The watched node is a local contender.
    pub local: bool,
}

impl Mark {
    /// Whether the node was marked as held (at any time since this entry was made, or before
    /// while another entry kept it).
    pub(crate) fn was_held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }
}

impl Drop for Mark {
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
        let holds = Arc::new(HandOff::default());
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

    #[test]
    fn contenders_are_local_while_they_wait_and_while_marked() {
        let holds = Arc::new(HandOff::default());
        let (prefix_a, prefix_b) =
            ("_c_11111111-1111-1111-1111-111111111111-", "_c_22222222-2222-2222-2222-222222222222-");
        let (a, b) = (format!("/l/{prefix_a}lock-0000000001"), format!("/l/{prefix_b}lock-0000000002"));
        let (a, b) = (a.as_str(), b.as_str());
        let waiting = holds.contender(prefix_a);
        assert!(holds.is_local(a) && !holds.is_local(b));
        let watcher = holds.watch(b);
        assert!(!holds.is_local(b), "a node we only watch is not ours");
        let held = holds.mark_held(a);
        drop(waiting);
        assert!(holds.is_local(a), "holding");
        drop((held, watcher));
        assert!(!holds.is_local(a), "released");
    }
}
