//! Foreign children of a contender queue: nodes that no compliant client can have created.
//!
//! Every contender's node (ours, Curator's) is created sequential, so its name ends with the
//! recipe's name and the sequence ZooKeeper appends: the parent's child version as
//! `%010d` of a signed 32-bit number (ten digits, or after the counter wrapped, `-` and nine
//! digits). A child without that ending (`lock-`, `_c_x-lock-`, `lock-abc`, `foo`,
//! `lock-99999999999`) was put there by hand or by some other program: it holds nothing. The
//! lock engine leaves such children out before it sorts (see `order::contenders`), so that
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
    fn sequences_are_exactly_what_format_makes() {
        let reference = |key: &str| key.len() >= 10 && key.parse::<i32>().is_ok_and(|n| format!("{n:010}") == key);
        let mut keys: Vec<String> = Vec::new();
        let mut rng = fastrand::Rng::with_seed(7);
        for n in [0, 1, 9, 10, 999_999_999, 1_000_000_000, i32::MAX, -1, -9, -999_999_999, -1_000_000_000, i32::MIN]
            .into_iter()
            .chain((0..2_000).map(|_| rng.i32(..)))
        {
            keys.extend([
                format!("{n:010}"),
                format!("{n}"),
                format!("{n:011}"),
                format!("{n:09}"),
                format!("+{n:010}"),
            ]);
            keys.extend([format!("{n:010}x"), format!("x{n:010}"), format!("{n:010}").replace('-', "")]);
        }
        for len in 0..13 {
            for _ in 0..500 {
                keys.push((0..len).map(|_| rng.choice(['0', '1', '9', '-', '+', 'a', ' ']).unwrap()).collect());
            }
        }
        keys.extend(["2147483648", "-2147483649", "-0000000000", "-000000000", "0000000000"].map(String::from));
        for key in &keys {
            assert_eq!(is_sequence(key), reference(key), "{key:?}");
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
