//! Foreign children of a contender queue: nodes that no compliant client can have created.
//!
//! Every contender's node (ours, Curator's) is created sequential, so its name ends with the
//! recipe's name and the sequence ZooKeeper appends: the parent's child version as
//! `%010d` of a signed 32-bit number (ten digits, or after the counter wrapped, `-` and nine
//! digits). A child without that ending (`lock-`, `_c_x-lock-`, `lock-abc`, `foo`,
//! `lock-99999999999`) was put there by hand or by some other program: it holds nothing. The
//! lock engine leaves such children out before it sorts (see `driver::contenders`), so that
//! they can neither stop every contender (a name without a sequence sorts first) nor take a
//! semaphore's leases, and warns once per node. The double barrier keeps the same register
//! for its foreign children (names that are not UUIDs).

use std::collections::HashSet;
use std::sync::Mutex;

use crate::framework::paths;
use crate::sync::lock;

/// Whether `key` is a sequence that ZooKeeper appends to a sequential node's name: exactly
/// `format!("{:010}", n)` of a 32-bit signed `n` (ZooKeeper's `%010d` of the parent's child
/// version, which wraps to negative after 2³¹ creations).
pub(crate) fn is_sequence(key: &str) -> bool {
    key.len() >= 10 && key.parse::<i32>().is_ok_and(|n| format!("{n:010}") == key)
}

/// How many foreign nodes a framework remembers having warned about; past that it forgets
/// them all (and may warn again), so that a tree that keeps making junk costs bounded memory.
const REMEMBERED: usize = 10_000;

/// The foreign nodes a framework has warned about (a framework extension), so that each is
/// logged once, not at every listing.
#[derive(Default)]
pub(crate) struct ForeignNodes {
    warned: Mutex<HashSet<String>>,
}

impl ForeignNodes {
    /// Warns about each of `foreign` (children of `dir`) not warned about before.
    pub(crate) fn warn(&self, dir: &str, foreign: &[String]) {
        if foreign.is_empty() {
            return;
        }
        let mut warned = lock(&self.warned);
        for name in foreign {
            let path = paths::join(dir, name);
            if warned.contains(&path) {
                continue;
            }
            if warned.len() >= REMEMBERED {
                warned.clear();
            }
            tracing::warn!(
                %path,
                "ignoring a foreign node: no compliant client names a node so there (a contender's name \
                 ends with the recipe's name and a ZooKeeper sequence), so it holds nothing"
            );
            warned.insert(path);
        }
    }

    /// How many foreign nodes were warned about (and are remembered).
    #[cfg(test)]
    pub(crate) fn warned(&self) -> usize {
        lock(&self.warned).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_are_zookeepers_ten_characters() {
        for ok in ["0000000000", "0000000001", "2147483647", "-000000001", "-2147483648", "0123456789"] {
            assert!(is_sequence(ok), "{ok}");
        }
        for bad in [
            "",
            "1",
            "000000001",
            "00000000001",
            "2147483648",
            "9999999999",
            "-0000000001",
            "-00000001",
            "+000000001",
            "000000000a",
            "abc",
            " 000000001",
            "0000000001 ",
            "٠٠٠٠٠٠٠٠٠١",
            "-0000000000",
        ] {
            assert!(!is_sequence(bad), "{bad:?}");
        }
    }

    #[test]
    fn each_foreign_node_is_remembered_once() {
        let f = ForeignNodes::default();
        f.warn("/a", &["lock-".into(), "x".into()]);
        f.warn("/a", &["lock-".into()]);
        f.warn("/b", &["lock-".into()]);
        assert_eq!(f.warned(), 3);
    }
}
