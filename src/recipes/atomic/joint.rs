//! Additions combined across sessions: the queue's turn holder writes the waiting additions
//! with its own.
//!
//! Within one session, concurrent additions to a counter already become one write (see
//! `combine.rs`). Across sessions they cannot meet in memory, but they meet in the value's
//! queue: an addition that queues names its delta in its queue node
//! (`_c_<uuid>-add<width>.<instance>.<n>.<delta>.lock-<seq>`), and the turn holder, an
//! addition itself, writes in its one `multi` its own delta and the deltas of the additions
//! queued behind it (as many as [`JOIN_MAX`]), and for each of them creates its exactly-once
//! marker `<path>/_txn_<instance>-<n>` holding the value before that addition, and deletes its
//! queue node.
//!
//! # Exactly once
//! An addition's marker name is fixed when it queues, and whoever applies the addition (the
//! addition's own session in its turn, or a turn holder that found it queued) creates that
//! marker in the same transaction. A marker can be created once, so an addition is applied at
//! most once, whatever listing a writer acted on (also a holder whose session expired, writing
//! from an old listing). Its queue node is deleted by the same transaction, so once the node is
//! gone the marker says for good whether the addition was applied: a waiter whose node
//! vanished reads its marker — the value before its addition, or nothing (its node went with
//! its session, or its caller gave up, and it queues again).
//!
//! Writers that do not join (Curator, older versions of this library, values that are not
//! numbers, updates that are not additions) queue with plain names and are never written by
//! another session.

use std::sync::Arc;

use crate::recipes::layout;
use crate::recipes::locks::Listing;

/// The most queued additions a turn holder writes with its own (each adds two operations to
/// the transaction: creating its marker, deleting its queue node).
pub(crate) const JOIN_MAX: usize = 64;

/// An addition to a number of `width` bytes (4 or 8, big-endian, as Curator stores them):
/// `delta`, sign-extended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Addition {
    pub delta: i64,
    pub width: usize,
}

impl Addition {
    /// The addition of `delta`, given as a number's big-endian bytes; `None` for a width that
    /// is not a number's.
    pub(crate) fn from_bytes(delta: &[u8]) -> Option<Self> {
        let width = delta.len();
        number(delta, width).filter(|_| width == 4 || width == 8).map(|delta| Self { delta, width })
    }

    /// `bytes` (a number of our width; empty reads as zero) plus our delta; `None` when
    /// `bytes` is not such a number.
    pub(crate) fn applied_to(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        number(bytes, self.width).map(|n| encode(plus(n, self.delta, self.width), self.width))
    }

    /// The queue node name (after the protection prefix) of this addition, to be applied with
    /// the marker `<instance>-<n>`.
    pub(crate) fn queue_name(&self, instance: &str, n: u64) -> String {
        format!("add{}.{instance}.{n}.{}.{}", self.width, self.delta, layout::LOCK_NAME)
    }
}

/// What identifies the queue node of [`Addition::queue_name`] `queue_name` among the
/// queue's children: its instance and marker number (`.<instance>.<n>.`).
pub(crate) fn node_key(queue_name: &str) -> String {
    let mut parts = queue_name.split('.').skip(1);
    let (instance, n) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    format!(".{instance}.{n}.")
}

/// An addition queued behind the turn holder, as its queue node names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Joiner {
    /// Its queue node's name.
    pub node: String,
    /// Its marker's name (a child of the value's node).
    pub marker: String,
    pub addition: Addition,
}

impl Joiner {
    /// The addition a queue node's name carries, if it carries one.
    pub(crate) fn parse(node: &str) -> Option<Joiner> {
        let mut parts = node.split('.');
        let width = match parts.next()?.rsplit_once('-')?.1 {
            "add4" => 4,
            "add8" => 8,
            _ => return None,
        };
        let (instance, n, delta, tail) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let valid_instance = !instance.is_empty() && instance.bytes().all(|b| b.is_ascii_alphanumeric());
        if !valid_instance
            || n.parse::<u64>().is_err()
            || !tail.starts_with(layout::LOCK_NAME)
            || parts.next().is_some()
        {
            return None;
        }
        let delta: i64 = delta.parse().ok()?;
        if width == 4 && i32::try_from(delta).is_err() {
            return None;
        }
        let addition = Addition { delta, width };
        Some(Joiner { node: node.to_string(), marker: marker_name(instance, n), addition })
    }
}

/// The name of the marker `<instance>-<n>`.
pub(crate) fn marker_name(instance: &str, n: impl std::fmt::Display) -> String {
    format!("{}{instance}-{n}", layout::ATOMIC_TXN_MARKER)
}

/// The additions of `width` queued behind `ours` in `listing` (a listing of the queue), in
/// queue order, at most [`JOIN_MAX`].
pub(crate) fn joiners(listing: &Arc<Listing>, ours: &str, width: usize) -> Vec<Joiner> {
    let sorted = listing.queue(&[layout::LOCK_NAME]);
    let Some(at) = sorted.iter().position(|c| c == ours) else { return Vec::new() };
    sorted[at + 1..]
        .iter()
        .filter_map(|c| Joiner::parse(c))
        .filter(|j| j.addition.width == width)
        .take(JOIN_MAX)
        .collect()
}

/// Whether `listing` (of the queue) holds our node `ours`.
pub(crate) fn listed(listing: &Listing, ours: &str) -> bool {
    listing.queue(&[layout::LOCK_NAME]).iter().any(|c| c == ours)
}

/// The number in `bytes` of `width` (empty is zero).
pub(crate) fn number(bytes: &[u8], width: usize) -> Option<i64> {
    match (bytes.len(), width) {
        (0, _) => Some(0),
        (8, 8) => Some(i64::from_be_bytes(bytes.try_into().ok()?)),
        (4, 4) => Some(i64::from(i32::from_be_bytes(bytes.try_into().ok()?))),
        _ => None,
    }
}

/// `n` as big-endian bytes of `width` (4: its low 32 bits).
pub(crate) fn encode(n: i64, width: usize) -> Vec<u8> {
    match width {
        4 => (n as i32).to_be_bytes().to_vec(),
        _ => n.to_be_bytes().to_vec(),
    }
}

/// `a + b`, wrapping at `width` as Java's arithmetic does.
pub(crate) fn plus(a: i64, b: i64, width: usize) -> i64 {
    match width {
        4 => i64::from((a as i32).wrapping_add(b as i32)),
        _ => a.wrapping_add(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_name_carries_its_addition_and_marker() {
        let add = Addition { delta: -7, width: 8 };
        let node = format!("_c_0f1e2d3c-aaaa-bbbb-cccc-000000000000-{}0000000042", add.queue_name("abc123", 9));
        let joiner = Joiner::parse(&node).expect("parsed");
        assert_eq!(joiner.addition, add);
        assert_eq!(joiner.marker, "_txn_abc123-9");
        assert_eq!(joiner.node, node);
        assert_eq!(node_key(&add.queue_name("abc123", 9)), ".abc123.9.");
        assert!(node.contains(&node_key(&add.queue_name("abc123", 9))));
    }

    #[test]
    fn names_that_carry_no_addition_are_not_joiners() {
        for name in [
            "_c_0f1e2d3c-aaaa-bbbb-cccc-000000000000-lock-0000000001",
            "_c_x-add8.abc.1.5.lock-0000000001.extra",
            "_c_x-add2.abc.1.5.lock-0000000001",
            "_c_x-add8.a/c.1.5.lock-0000000001",
            "_c_x-add8.abc.one.5.lock-0000000001",
            "_c_x-add8.abc.1.five.lock-0000000001",
            "_c_x-add4.abc.1.5000000000.lock-0000000001",
            "_c_x-add8.abc.1.5.latch-0000000001",
        ] {
            assert_eq!(Joiner::parse(name), None, "{name}");
        }
    }

    #[test]
    fn arithmetic_wraps_at_the_numbers_width() {
        assert_eq!(plus(i64::from(i32::MAX), 1, 4), i64::from(i32::MIN));
        assert_eq!(plus(i64::MAX, 1, 8), i64::MIN);
        assert_eq!(number(&encode(-3, 4), 4), Some(-3));
        assert_eq!(number(&[], 8), Some(0));
        assert_eq!(number(&[1, 2, 3], 8), None);
        let add = Addition::from_bytes(&5i32.to_be_bytes()).unwrap();
        assert_eq!(add, Addition { delta: 5, width: 4 });
        assert_eq!(add.applied_to(&i32::MAX.to_be_bytes()), Some(i32::MIN.wrapping_add(4).to_be_bytes().to_vec()));
        assert_eq!(add.applied_to(&[0; 8]), None, "a long where an int is expected");
        assert_eq!(Addition::from_bytes(&[1, 2]), None);
    }

    #[test]
    fn joiners_are_the_additions_behind_ours_in_queue_order() {
        let add = |d: i64, w: usize, seq: u32| {
            format!("_c_u{seq}-{}{seq:010}", Addition { delta: d, width: w }.queue_name("i", seq.into()))
        };
        let ours = add(1, 8, 2);
        let children =
            vec![add(4, 8, 5), format!("_c_u4-lock-{:010}", 4), add(3, 4, 3), ours.clone(), add(9, 8, 1), add(2, 8, 6)];
        let listing = Arc::new(Listing::new(children));
        let found: Vec<i64> = joiners(&listing, &ours, 8).into_iter().map(|j| j.addition.delta).collect();
        assert_eq!(found, vec![4, 2], "behind ours, of our width, in sequence order");
        assert!(listed(&listing, &ours));
        assert!(joiners(&listing, "gone", 8).is_empty());
    }
}
