//! How contender nodes sort (Curator's `standardFixForSorting` and sorter), which children of
//! a queue's directory are contenders at all, and a listing of them: pure, the same as
//! Curator's, so that a Curator process and ours see the same queue in the same children
//! (unit-tested without a server in `driver_tests.rs`).

use std::sync::{Arc, Mutex};

use crate::sync::lock;

/// The text a child sorts by: what follows the LAST occurrence of `name`, or the whole name
/// when it does not contain it (Curator's `standardFixForSorting`).
pub(crate) fn sort_key<'a>(child: &'a str, name: &str) -> &'a str {
    match rfind(child, name) {
        Some(i) => &child[i + name.len()..],
        None => child,
    }
}

/// `haystack.rfind(needle)`, by comparing bytes from the end: the names are a few bytes and
/// the children short, where `str::rfind` spends more setting up its two-way searcher than
/// searching (every child of every listing is searched several times). A match of a valid
/// UTF-8 needle in UTF-8 text starts and ends on character boundaries.
pub(crate) fn rfind(haystack: &str, needle: &str) -> Option<usize> {
    let (haystack, needle) = (haystack.as_bytes(), needle.as_bytes());
    let Some(&first) = needle.first() else { return Some(haystack.len()) };
    // the first byte before the whole window: most positions fail on it, without a memcmp call
    haystack.windows(needle.len()).rposition(|window| window[0] == first && window == needle)
}

/// Applies [`sort_key`] for each name in turn (the read-write lock strips `__READ__` then
/// `__WRIT__`, as Curator's sorter does).
pub(crate) fn sort_key_multi<'a>(child: &'a str, names: &[&str]) -> &'a str {
    names.iter().fold(child, |key, name| sort_key(key, name))
}

/// Sorts children by their sort key; stable, so equal keys keep the server's order.
pub(crate) fn sort_children(children: &mut [String], names: &[&str]) {
    // each key is found once, not once per comparison (a queue of thousands is sorted often),
    // and borrowed, not copied: a key is a suffix of its child, kept as its offset
    let offsets: Vec<usize> = children.iter().map(|c| c.len() - sort_key_multi(c, names).len()).collect();
    let key = |i: usize| &children[i][offsets[i]..];
    let mut order: Vec<usize> = (0..children.len()).collect();
    // (stable, like `sort_by_cached_key`)
    order.sort_by(|&a, &b| key(a).cmp(key(b)));
    if order.iter().enumerate().all(|(at, &i)| at == i) {
        return;
    }
    let sorted: Vec<String> = order.iter().map(|&i| std::mem::take(&mut children[i])).collect();
    for (slot, child) in children.iter_mut().zip(sorted) {
        *slot = child;
    }
}

/// Whether `key` is a sequence that ZooKeeper appends to a sequential node's name: exactly
/// `format!("{:010}", n)` of a 32-bit signed `n` (ZooKeeper's `%010d` of the parent's child
/// version, which wraps to negative after 2³¹ creations).
pub(crate) fn is_sequence(key: &str) -> bool {
    // every child of every listing is judged: without formatting (the reference, `format!`,
    // is the test's). `{:010}` of a non-negative `i32` is ten digits; of a negative one `-`
    // and nine digits, zero-padded, or `-` and ten without a leading zero (below -999999999).
    let (negative, digits) = match key.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, key),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    match key.parse::<i32>() {
        Ok(_) if !negative => digits.len() == 10,
        Ok(n) if n < 0 => digits.len() == 9 || (digits.len() == 10 && !digits.starts_with('0')),
        _ => false,
    }
}

/// Whether `child` can be a compliant contender's node for `names`: it contains one of the
/// names and its sort key is a ZooKeeper sequence ([`is_sequence`]). Every contender's node
/// (ours, Curator's) is created sequential with one of these names last, so any other child is
/// foreign: put there by hand or by another program, it holds nothing.
pub(crate) fn is_contender(child: &str, names: &[&str]) -> bool {
    names.iter().any(|name| rfind(child, name).is_some()) && is_sequence(sort_key_multi(child, names))
}

/// A queue's children split: its contenders in queue order (Curator's: the order among
/// contenders is unchanged), and the foreign children ([`is_contender`] says no), which every
/// decision leaves out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Queue {
    /// The contenders, in queue order.
    pub sorted: Vec<String>,
    /// The foreign children, in the server's order.
    pub foreign: Vec<String>,
}

impl std::ops::Deref for Queue {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.sorted
    }
}

/// Splits `children` into the [`Queue`] for `names`.
pub(crate) fn queue(children: Vec<String>, names: &[&str]) -> Queue {
    let (mut sorted, foreign): (Vec<String>, Vec<String>) = children.into_iter().partition(|c| is_contender(c, names));
    sort_children(&mut sorted, names);
    Queue { sorted, foreign }
}

/// Where our node `ours` is in the queue.
pub(crate) fn position(queue: &[String], ours: &str) -> Option<usize> {
    queue.iter().position(|c| c == ours)
}

/// The children of a directory, as one listing returned them.
#[derive(Debug)]
pub(crate) struct Listing {
    children: Vec<String>,
    sorted: Mutex<Vec<SortedBy>>,
}

/// The children split into contenders and foreign children for one set of names.
type SortedBy = (Vec<&'static str>, Arc<Queue>);

impl Listing {
    pub(crate) fn new(children: Vec<String>) -> Self {
        Self { children, sorted: Mutex::default() }
    }

    /// The [`Queue`] for `names`: the contenders in queue order and the foreign children,
    /// computed once per `names` and shared.
    pub(crate) fn queue(&self, names: &[&'static str]) -> Arc<Queue> {
        let mut cache = lock(&self.sorted);
        if let Some((_, sorted)) = cache.iter().find(|(n, _)| n.as_slice() == names) {
            return sorted.clone();
        }
        let sorted = Arc::new(queue(self.children.clone(), names));
        cache.push((names.to_vec(), sorted.clone()));
        sorted
    }
}

/// A node read behind a listing: its data and version, or `None` when it does not exist.
pub(crate) type Read = Option<(Vec<u8>, i32)>;

/// A listing, and the read behind it when the driver reads one (see `driver::Reading`).
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub listing: Arc<Listing>,
    pub read: Option<Read>,
}

impl Listed {
    /// A listing with no read behind it.
    pub(crate) fn plain(listing: Arc<Listing>) -> Self {
        Listed { listing, read: None }
    }
}
