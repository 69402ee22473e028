//! How each queue kind names its item nodes and orders them (Curator 5.x's layouts; see
//! `recipes/layout.rs`). Pure functions, tested without a server.

use crate::error::{Error, Result};
use crate::recipes::layout::{QUEUE_ITEM_NAME, SIMPLE_QUEUE_ITEM_NAME};

/// Separates an id (id queue) or an epoch (delay queue) in an item's name.
const SEPARATOR: char = '|';

/// The kinds of queue: their names and their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `SimpleDistributedQueue`: `qn-<seq>`, by name.
    Simple,
    /// `DistributedQueue`: `queue-<seq>`, by name.
    Fifo,
    /// `DistributedIdQueue`: `queue-|<id>|<seq>`, by name without the id.
    Id,
    /// `DistributedPriorityQueue`: `queue-<1|0><priority as 8 hex digits><seq>`, by name.
    Priority,
    /// `DistributedDelayQueue`: `queue-|<epoch ms in hex>|<seq>`, by epoch; visible from then.
    Delay,
}

impl Layout {
    /// The `kind` label of the queue metrics.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Layout::Simple => "simple",
            Layout::Fifo => "fifo",
            Layout::Id => "id",
            Layout::Priority => "priority",
            Layout::Delay => "delay",
        }
    }

    /// The name every item node starts with.
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Layout::Simple => SIMPLE_QUEUE_ITEM_NAME,
            _ => QUEUE_ITEM_NAME,
        }
    }

    /// Whether `name` is an item node of this queue (others are skipped).
    pub(crate) fn is_item(self, name: &str) -> bool {
        name.starts_with(self.prefix())
    }

    /// Whether the head may change under a consumer (a new item can sort before the ones
    /// already listed), so that a consumer lists again whenever the children changed.
    pub(crate) fn refresh_on_change(self) -> bool {
        matches!(self, Layout::Priority | Layout::Delay)
    }

    /// Sorts item names into the order they are taken in.
    pub(crate) fn sort(self, names: &mut [String]) {
        match self {
            Layout::Simple | Layout::Fifo | Layout::Priority => names.sort_unstable(),
            Layout::Id => names.sort_by_cached_key(|n| without_id(n)),
            Layout::Delay => names.sort_by_cached_key(|n| (epoch_of(n), sequence_of(n).to_string())),
        }
    }

    /// When the item becomes visible (ms since the epoch): delay queues only.
    pub(crate) fn visible_at(self, name: &str) -> Option<u64> {
        match self {
            Layout::Delay => Some(epoch_of(name)),
            _ => None,
        }
    }
}

/// The name prefix of an id queue item: `queue-|<id>|`, `/` and `|` in the id replaced by `_`
/// as Curator does.
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty id, or one with a character no node name may hold
/// (NUL, other control characters).
pub(crate) fn id_prefix(id: &str) -> Result<String> {
    if id.is_empty() {
        return Err(Error::invalid("id", "an empty queue item id"));
    }
    let prefix = format!("{QUEUE_ITEM_NAME}{SEPARATOR}{}{SEPARATOR}", fix_id(id));
    if crate::framework::paths::validate_path(&format!("/{prefix}")).is_err() {
        return Err(Error::invalid("id", format!("queue item id {id:?}: not in a node name (control characters)")));
    }
    Ok(prefix)
}

/// An id as it appears in node names.
pub(crate) fn fix_id(id: &str) -> String {
    id.replace(['/', SEPARATOR], "_")
}

/// The id in an id queue item's name.
pub(crate) fn id_of(name: &str) -> Option<&str> {
    let (_, rest) = name.split_once(SEPARATOR)?;
    let (id, _) = rest.split_once(SEPARATOR)?;
    Some(id)
}

/// The name without its `|<id>|` part (the id queue's sort key).
fn without_id(name: &str) -> String {
    match name.split_once(SEPARATOR).and_then(|(head, rest)| Some((head, rest.split_once(SEPARATOR)?.1))) {
        Some((head, tail)) => format!("{head}{tail}"),
        None => name.to_string(),
    }
}

/// The name prefix of a priority queue item: `queue-` then `1` for a priority >= 0 (`0` for a
/// negative one, as Curator writes them), then the priority's 32 bits as 8 upper-case hex
/// digits, so that names sort by priority, lowest first.
///
/// # Errors
/// [`Error::InvalidArgument`] for a negative priority: our producers take priorities from 0
/// (lowest first); a consumer still orders the negative priorities of Curator producers first.
pub(crate) fn priority_prefix(priority: i32) -> Result<String> {
    if priority < 0 {
        return Err(Error::invalid("priority", format!("negative queue priority {priority}")));
    }
    Ok(format!("{QUEUE_ITEM_NAME}{}{:08X}", if priority >= 0 { '1' } else { '0' }, priority as u32))
}

/// The name prefix of a delay queue item visible from `epoch_ms`: `queue-|<hex>|`.
///
/// # Errors
/// [`Error::InvalidArgument`] for the epoch 0 (Curator refuses it too).
pub(crate) fn delay_prefix(epoch_ms: u64) -> Result<String> {
    if epoch_ms == 0 {
        return Err(Error::invalid("time", "a delay queue item needs a time after the epoch"));
    }
    Ok(format!("{QUEUE_ITEM_NAME}{SEPARATOR}{epoch_ms:08X}{SEPARATOR}"))
}

/// The epoch of a delay queue item (0, visible at once, when the name has none).
fn epoch_of(name: &str) -> u64 {
    let Some((head, _)) = name.rsplit_once(SEPARATOR) else { return 0 };
    let Some((_, hex)) = head.rsplit_once(SEPARATOR) else { return 0 };
    u64::from_str_radix(hex, 16).unwrap_or(0)
}

/// The sequence suffix of a delay queue item (after its last separator).
fn sequence_of(name: &str) -> &str {
    name.rsplit_once(SEPARATOR).map_or(name, |(_, seq)| seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(layout: Layout, names: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        layout.sort(&mut names);
        names
    }

    #[test]
    fn priority_names_match_curator_and_sort_lowest_first() {
        assert_eq!(priority_prefix(0).unwrap(), "queue-100000000");
        assert_eq!(priority_prefix(10).unwrap(), "queue-10000000A");
        assert!(matches!(priority_prefix(-1), Err(Error::InvalidArgument { .. })));
        // what Curator writes for -1 and -5 sorts before every non-negative priority
        let names = ["queue-10000000A0000000001", "queue-0FFFFFFFF0000000002", "queue-0FFFFFFFB0000000003"];
        assert_eq!(
            sorted(Layout::Priority, &names),
            ["queue-0FFFFFFFB0000000003", "queue-0FFFFFFFF0000000002", "queue-10000000A0000000001"]
        );
    }

    #[test]
    fn id_names_match_curator_and_sort_by_sequence() {
        assert_eq!(id_prefix("a/b|c").unwrap(), "queue-|a_b_c|");
        assert!(matches!(id_prefix(""), Err(Error::InvalidArgument { .. })));
        assert_eq!(id_of("queue-|job-7|0000000003"), Some("job-7"));
        assert_eq!(id_of("queue-0000000003"), None);
        let names = ["queue-|zz|0000000002", "queue-|aa|0000000003", "queue-0000000001"];
        assert_eq!(sorted(Layout::Id, &names), ["queue-0000000001", "queue-|zz|0000000002", "queue-|aa|0000000003"]);
    }

    #[test]
    fn delay_names_match_curator_and_sort_by_time() {
        assert_eq!(delay_prefix(0x19A_0000_0000).unwrap(), "queue-|19A00000000|");
        assert_eq!(delay_prefix(5).unwrap(), "queue-|00000005|");
        assert!(delay_prefix(0).is_err());
        let names = ["queue-|00000009|0000000001", "queue-|00000003|0000000002", "queue-|00000003|0000000000"];
        assert_eq!(
            sorted(Layout::Delay, &names),
            ["queue-|00000003|0000000000", "queue-|00000003|0000000002", "queue-|00000009|0000000001"]
        );
        assert_eq!(Layout::Delay.visible_at("queue-|0000000A|0000000001"), Some(10));
        assert_eq!(Layout::Delay.visible_at("queue-0000000001"), Some(0));
        assert_eq!(Layout::Fifo.visible_at("queue-|0000000A|0000000001"), None);
    }

    #[test]
    fn items_are_told_from_foreign_nodes() {
        assert!(Layout::Simple.is_item("qn-0000000001"));
        assert!(!Layout::Simple.is_item("queue-0000000001"));
        assert!(Layout::Fifo.is_item("queue-0000000001"));
        assert!(!Layout::Fifo.is_item("lock"));
    }
}
