//! How contender nodes sort (Curator's `standardFixForSorting` and sorter), and which
//! children are contenders at all. Pure functions; the rules (`rules.rs`) decide on the sorted
//! list.

use super::foreign::is_sequence;

/// The text a child sorts by: what follows the LAST occurrence of `lock_name`, or the whole
/// name when it does not contain it (Curator's `standardFixForSorting`).
pub(crate) fn sort_key<'a>(child: &'a str, lock_name: &str) -> &'a str {
    match rfind(child, lock_name) {
        Some(i) => &child[i + lock_name.len()..],
        None => child,
    }
}

/// `haystack.rfind(needle)`, by comparing bytes from the end: the lock names are a few bytes
/// and the children short, where `str::rfind` spends more setting up its two-way searcher
/// than searching (every child of every listing is searched several times). A match of a
/// valid UTF-8 needle in UTF-8 text starts and ends on character boundaries.
pub(super) fn rfind(haystack: &str, needle: &str) -> Option<usize> {
    let (haystack, needle) = (haystack.as_bytes(), needle.as_bytes());
    let Some(&first) = needle.first() else { return Some(haystack.len()) };
    // the first byte before the whole window: most positions fail on it, without a memcmp call
    haystack.windows(needle.len()).rposition(|window| window[0] == first && window == needle)
}

/// Applies [`sort_key`] for each name in turn (the read-write lock strips `__READ__` then
/// `__WRIT__`, as Curator's sorter does).
pub(crate) fn sort_key_multi<'a>(child: &'a str, lock_names: &[&str]) -> &'a str {
    lock_names.iter().fold(child, |key, name| sort_key(key, name))
}

/// Sorts children by their sort key; stable, so equal keys keep the server's order.
pub(crate) fn sort_children(children: &mut [String], lock_names: &[&str]) {
    // each key is found once, not once per comparison (a queue of thousands is sorted often),
    // and borrowed, not copied: a key is a suffix of its child, kept as its offset
    let offsets: Vec<usize> = children.iter().map(|c| c.len() - sort_key_multi(c, lock_names).len()).collect();
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

/// Whether `child` can be a compliant contender's node for `lock_names`: it contains one of
/// the names and its sort key is a ZooKeeper sequence ([`is_sequence`]). Every contender's node
/// (ours, Curator's) is created sequential with one of these names last, so any other child is
/// foreign: put there by hand or by another program, it holds nothing.
pub(crate) fn is_contender(child: &str, lock_names: &[&str]) -> bool {
    lock_names.iter().any(|name| rfind(child, name).is_some()) && is_sequence(sort_key_multi(child, lock_names))
}

/// The children of a contender queue split into the contenders, sorted as
/// [`sort_children`] sorts them (Curator's order: the order among contenders is unchanged), and
/// the foreign children ([`is_contender`] says no), which every decision leaves out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Contenders {
    /// The contenders, in queue order.
    pub sorted: Vec<String>,
    /// The foreign children, in the server's order.
    pub foreign: Vec<String>,
}

impl std::ops::Deref for Contenders {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.sorted
    }
}

/// Splits `children` into [`Contenders`] for `lock_names`.
pub(crate) fn contenders(children: Vec<String>, lock_names: &[&str]) -> Contenders {
    let (mut sorted, foreign): (Vec<String>, Vec<String>) =
        children.into_iter().partition(|c| is_contender(c, lock_names));
    sort_children(&mut sorted, lock_names);
    Contenders { sorted, foreign }
}

/// Where our node `ours` is among the sorted contenders.
pub(crate) fn position(sorted: &[String], ours: &str) -> Option<usize> {
    sorted.iter().position(|c| c == ours)
}
