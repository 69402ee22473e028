//! The drivers' decisions and the queue's order: unit tests (no server) and properties.

use std::time::SystemTime;

use super::super::leases::{count, Rule};
use super::super::order::*;
use super::*;

const MUTEX: Exclusive = Exclusive::lock(Kind::Mutex);
const WRITER: Exclusive = Exclusive::writer();
const READER: Reader = Reader { ttl: None };
const ALONE: Decision = Decision::Hold(Holding::Alone);
const SHARED: Decision = Decision::Hold(Holding::Shared);

/// A watch of `nodes`: all of them before ours (`then`), and the node ahead.
fn watch(nodes: &[&str], then: Option<Holding>, ahead: Option<&str>, after_holder: bool) -> Decision {
    Decision::Watch(Watch { nodes: names(nodes), then, ahead: ahead.map(str::to_string), after_holder, wake_at: None })
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const A: &str = "_c_aaaaaaaa-0000-0000-0000-000000000000-lock-0000000003";
const B: &str = "_c_bbbbbbbb-0000-0000-0000-000000000000-lock-0000000001";
const C: &str = "_c_cccccccc-0000-0000-0000-000000000000-lock-0000000002";

#[test]
fn sort_key_is_text_after_last_lock_name() {
    assert_eq!(sort_key(A, "lock-"), "0000000003");
    assert_eq!(sort_key("_c_x-lock-lock-0000000007", "lock-"), "0000000007");
    assert_eq!(sort_key("foreign", "lock-"), "foreign");
    assert_eq!(sort_key_multi("_c_x-__READ__0000000004", RW_NAMES), "0000000004");
    assert_eq!(sort_key_multi("_c_x-__WRIT__0000000005", RW_NAMES), "0000000005");
}

#[test]
fn sorts_by_sequence_not_uuid() {
    let mut v = names(&[A, B, C]);
    sort_children(&mut v, &["lock-"]);
    assert_eq!(v, names(&[B, C, A]));
}

#[test]
fn foreign_children_sort_by_whole_name_like_curator() {
    // digits sort before letters: a foreign "zzz" sorts last, a foreign "000" first
    let mut v = names(&["zzz", A, "000", B]);
    sort_children(&mut v, &["lock-"]);
    assert_eq!(v, names(&["000", B, A, "zzz"]));
    // a foreign child at the head blocks the mutex, exactly as it blocks Curator
    assert_eq!(MUTEX.decide(&v, B), watch(&["000"], Some(Holding::Alone), None, true));
    // a foreign child at the tail does not matter
    let tail = names(&[B, "zzz"]);
    assert_eq!(MUTEX.decide(&tail, B), ALONE);
}

/// Names no compliant client creates: no sequence after the name (they sort first), a
/// sequence of the wrong width or out of ZooKeeper's range, no lock name at all.
const JUNK: &[&str] = &[
    "lock-",
    "_c_x-lock-",
    "lock-abc",
    "foo",
    "0000000001",
    "lock-00000000001",
    "lock-2147483648",
    "lock-9999999999",
    "lock--0000000001",
    "lock-000000001",
    "lock-0000000001x",
    "lock-\u{1F512}",
];

#[test]
fn foreign_children_hold_nothing() {
    let mut all = names(JUNK);
    all.extend(names(&[A, B, C]));
    let split = queue(all, &["lock-"]);
    assert_eq!(split.sorted, names(&[B, C, A]));
    assert_eq!(split.foreign, names(JUNK));
    assert_eq!(MUTEX.decide(&split, B), ALONE);
    // a wrapped (negative) sequence is ZooKeeper's own: a contender, sorted as Curator does
    let wrapped = "_c_w-lock--000000001".to_string();
    let split = queue(vec![A.into(), wrapped.clone()], &["lock-"]);
    assert_eq!(split.sorted, vec![wrapped, A.to_string()]);
    // two junk leases take no lease
    let leases = vec!["lease-".to_string(), "junk".into(), "_c_a-lease-0000000007".into()];
    let split = queue(leases, &[LEASE_NAME_FOR_TESTS]);
    let ours = "_c_a-lease-0000000007";
    assert_eq!(count(1, SystemTime::now(), &split, ours), Rule::Holds);
    // the read-write lock: a writer name without a sequence blocks no reader
    let rw_all = names(&["__WRIT__", "_c_w-__WRIT__", "_c_r-__READ__0000000003"]);
    let split = queue(rw_all, RW_NAMES);
    assert_eq!(split.foreign.len(), 2);
    assert_eq!(READER.decide(&split, "_c_r-__READ__0000000003"), SHARED);
}

const LEASE_NAME_FOR_TESTS: &str = crate::recipes::layout::LEASE_NAME;

#[test]
fn mutex_holder_and_waiters() {
    let v = names(&[B, C, A]);
    assert_eq!(MUTEX.decide(&v, B), ALONE);
    assert_eq!(MUTEX.decide(&v, C), watch(&[B], Some(Holding::Alone), None, true));
    // the third, close to the head, waits for both before it, and then holds
    assert_eq!(MUTEX.decide(&v, A), watch(&[B, C], Some(Holding::Alone), None, false));
    assert_eq!(MUTEX.decide(&v, "_c_gone-lock-0000000009"), Decision::Missing);
    assert_eq!(MUTEX.decide(&[], B), Decision::Missing);
}

#[test]
fn waiters_further_back_watch_their_predecessor_and_a_node_ahead() {
    let v = names(&["lock-1", "lock-2", "lock-3", "lock-4", "lock-5", "lock-6"]);
    assert_eq!((HAND_OFF_DEPTH, AHEAD), (3, 2));
    let want = watch(&["lock-5"], None, Some("lock-4"), true);
    assert_eq!(MUTEX.decide(&v, "lock-6"), want);
    let want = watch(&["lock-3"], None, Some("lock-2"), true);
    assert_eq!(MUTEX.decide(&v, "lock-4"), want);
    let want = watch(&["lock-1", "lock-2"], Some(Holding::Alone), None, false);
    assert_eq!(MUTEX.decide(&v, "lock-3"), want);
    // a writer close to the head may downgrade: back to the predecessor alone
    let v = rw(&["_c_1-__WRIT__0000000001", "_c_2-__READ__0000000002", "_c_3-__WRIT__0000000003"]);
    let want = watch(&["_c_2-__READ__0000000002"], None, None, true);
    assert_eq!(WRITER.decide(&v, "_c_3-__WRIT__0000000003"), want);
    // and no early listing behind a writer
    let v = rw(&[
        "_c_1-__READ__0000000001",
        "_c_2-__READ__0000000002",
        "_c_3-__WRIT__0000000003",
        "_c_4-__WRIT__0000000004",
    ]);
    let want = watch(&["_c_3-__WRIT__0000000003"], None, None, false);
    assert_eq!(WRITER.decide(&v, "_c_4-__WRIT__0000000004"), want);
}

fn rw(v: &[&str]) -> Vec<String> {
    let mut v = names(v);
    sort_children(&mut v, RW_NAMES);
    v
}

#[test]
fn readers_share_until_a_writer() {
    let v = rw(&[
        "_c_1-__READ__0000000001",
        "_c_2-__READ__0000000002",
        "_c_3-__WRIT__0000000003",
        "_c_4-__READ__0000000004",
    ]);
    assert_eq!(READER.decide(&v, "_c_1-__READ__0000000001"), SHARED);
    assert_eq!(READER.decide(&v, "_c_2-__READ__0000000002"), SHARED);
    assert_eq!(READER.decide(&v, "_c_4-__READ__0000000004"), watch(&["_c_3-__WRIT__0000000003"], None, None, true));
    // the writer, close to the head behind readers only, waits for both readers
    assert_eq!(
        WRITER.decide(&v, "_c_3-__WRIT__0000000003"),
        watch(&["_c_1-__READ__0000000001", "_c_2-__READ__0000000002"], Some(Holding::Alone), None, false)
    );
}

#[test]
fn readers_wait_for_the_nearest_preceding_writer() {
    let v = rw(&[
        "_c_1-__WRIT__0000000001",
        "_c_2-__WRIT__0000000002",
        "_c_3-__READ__0000000003",
        "_c_4-__READ__0000000004",
    ]);
    let want = watch(&["_c_2-__WRIT__0000000002"], None, None, true);
    assert_eq!(READER.decide(&v, "_c_3-__READ__0000000003"), want);
    assert_eq!(READER.decide(&v, "_c_4-__READ__0000000004"), want);
    // a writer at the head with only readers behind it hands over directly
    let v = rw(&["_c_1-__WRIT__0000000001", "_c_3-__READ__0000000003", "_c_4-__READ__0000000004"]);
    let want = watch(&["_c_1-__WRIT__0000000001"], Some(Holding::Shared), None, true);
    assert_eq!(READER.decide(&v, "_c_4-__READ__0000000004"), want);
    assert_eq!(WRITER.decide(&v, "_c_1-__WRIT__0000000001"), ALONE);
    assert_eq!(READER.decide(&v, "_c_9-__READ__0000000009"), Decision::Missing);
}

#[test]
fn downgraded_read_node_shares_the_writers_place() {
    // write node 5 held; the same owner's read node is EPHEMERAL "..__READ__0000000005"
    let v = rw(&["_c_9-__READ__0000000006", "_c_1-__WRIT__0000000005", "_c_1-__READ__0000000005"]);
    assert_eq!(sort_key_multi(&v[2], RW_NAMES), "0000000006");
    // after the writer releases, the downgraded reader holds; the later reader too
    let after = rw(&["_c_9-__READ__0000000006", "_c_1-__READ__0000000005"]);
    assert_eq!(READER.decide(&after, "_c_1-__READ__0000000005"), SHARED);
    assert_eq!(READER.decide(&after, "_c_9-__READ__0000000006"), SHARED);
}

#[test]
fn a_writer_behind_a_head_writer_lists_again_because_it_may_downgrade() {
    // our writer is right behind the holding writer: its deletion alone proves nothing...
    let v = rw(&["_c_1-__WRIT__0000000005", "_c_2-__WRIT__0000000006"]);
    let want = watch(&["_c_1-__WRIT__0000000005"], None, None, false);
    assert_eq!(WRITER.decide(&v, "_c_2-__WRIT__0000000006"), want);
    // ...because the holder may have downgraded meanwhile: its read node keeps its place
    let after = rw(&["_c_2-__WRIT__0000000006", "_c_1-__READ__0000000005"]);
    let want = watch(&["_c_1-__READ__0000000005"], Some(Holding::Alone), None, true);
    assert_eq!(WRITER.decide(&after, "_c_2-__WRIT__0000000006"), want);
    // a reader at the head cannot downgrade: direct hand-over stays
    let v = rw(&["_c_1-__READ__0000000005", "_c_2-__WRIT__0000000006"]);
    let want = watch(&["_c_1-__READ__0000000005"], Some(Holding::Alone), None, true);
    assert_eq!(WRITER.decide(&v, "_c_2-__WRIT__0000000006"), want);
    // readers behind a head writer still take over directly (a downgrade node is a reader)
    let v = rw(&["_c_1-__WRIT__0000000005", "_c_3-__READ__0000000007"]);
    let want = watch(&["_c_1-__WRIT__0000000005"], Some(Holding::Shared), None, true);
    assert_eq!(READER.decide(&v, "_c_3-__READ__0000000007"), want);
}

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
        keys.extend([format!("{n:010}"), format!("{n}"), format!("{n:011}"), format!("{n:09}"), format!("+{n:010}")]);
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

mod properties {
    use proptest::prelude::*;

    use super::super::super::order::*;
    use super::*;

    fn node(uuid: u32, name: &str, seq: u32) -> String {
        format!("_c_{uuid:08x}-0000-0000-0000-000000000000-{name}{seq:010}")
    }

    proptest! {
        /// The byte-wise `rfind` finds what `str::rfind` finds, in any text (non-ASCII too).
        #[test]
        fn rfind_is_strs(haystack in "[a-c_ü-]{0,24}", needle in prop::sample::select(vec!["", "a", "ab", "-", "ü", "lock-", "_c_", "üa", "__READ__", "c-ü"])) {
            prop_assert_eq!(rfind(&haystack, needle), haystack.rfind(needle));
            prop_assert_eq!(rfind(&format!("{haystack}{needle}{haystack}"), needle), format!("{haystack}{needle}{haystack}").rfind(needle));
        }

        /// Sorting on borrowed keys orders exactly as sorting on copied keys did (stable:
        /// equal keys keep their order), for one or two lock names and foreign names.
        #[test]
        fn sorted_as_by_cached_key(
            children in proptest::collection::vec("(_c_[0-9a-f]{2}-)?(lock-|__READ__|__WRIT__|x)?(lock-)?[0-9]{0,3}", 0..30),
            two in any::<bool>(),
        ) {
            let names: &[&str] = if two { &["__READ__", "__WRIT__"] } else { &["lock-"] };
            let mut expected = children.clone();
            expected.sort_by_cached_key(|child| sort_key_multi(child, names).to_owned());
            let mut sorted = children;
            sort_children(&mut sorted, names);
            prop_assert_eq!(sorted, expected);
        }

        /// Sorting orders contenders by sequence, whatever their UUIDs and input order.
        #[test]
        fn sorted_by_sequence(mut entries in proptest::collection::vec((any::<u32>(), 0u32..2_000_000_000), 0..40)) {
            entries.sort_by_key(|e| e.1);
            entries.dedup_by_key(|e| e.1);
            let mut names: Vec<String> = entries.iter().map(|(u, s)| node(*u, "lock-", *s)).collect();
            let expected = names.clone();
            names.reverse();
            sort_children(&mut names, &["lock-"]);
            prop_assert_eq!(names, expected);
        }

        /// Exactly one contender of a mutex holds, the first; each other watches its
        /// predecessor.
        #[test]
        fn one_holder_each_waiter_watches_its_predecessor(n in 1usize..30, shuffle in any::<u64>()) {
            let mut names: Vec<String> = (0..n).map(|i| node(i as u32, "lock-", i as u32 * 3)).collect();
            let mut rng = fastrand::Rng::with_seed(shuffle);
            rng.shuffle(&mut names);
            sort_children(&mut names, &["lock-"]);
            let holders = names.iter().filter(|c| MUTEX.decide(&names, c) == ALONE).count();
            prop_assert_eq!(holders, 1);
            for i in 1..names.len() {
                match MUTEX.decide(&names, &names[i]) {
                    // close to the head: every node before it, then it holds
                    Decision::Watch(Watch { nodes, then: Some(Holding::Alone), ahead: None, .. }) if i < HAND_OFF_DEPTH => {
                        prop_assert_eq!(&nodes[..], &names[..i]);
                    },
                    // further back: its predecessor, and the node AHEAD places ahead
                    Decision::Watch(Watch { nodes, then: None, ahead: Some(ahead), after_holder: true, .. }) if i >= HAND_OFF_DEPTH => {
                        prop_assert_eq!(&nodes[..], &names[i - 1..i]);
                        prop_assert_eq!(&ahead, &names[i - AHEAD]);
                    },
                    other => prop_assert!(false, "{:?}", other),
                }
            }
        }

        /// Foreign children change no contender's decision: the decisions among contenders
        /// with junk beside them are the decisions without it.
        #[test]
        fn foreign_children_change_no_decision(
            n in 1usize..12,
            junk in proptest::collection::vec("(_c_[a-z0-9]{1,4}-)?(lock-)?[-0-9a-z\u{80}-\u{10FFFF}]{0,12}", 0..8),
            seed in any::<u64>(),
        ) {
            let real: Vec<String> = (0..n).map(|i| node(i as u32, "lock-", i as u32 * 7)).collect();
            let junk: Vec<String> = junk.into_iter().filter(|j| !is_contender(j, &["lock-"])).collect();
            let mut all: Vec<String> = real.iter().cloned().chain(junk.iter().cloned()).collect();
            fastrand::Rng::with_seed(seed).shuffle(&mut all);
            let split = queue(all, &["lock-"]);
            prop_assert_eq!(&split.sorted, &real);
            prop_assert_eq!(split.foreign.len(), junk.len());
            for c in &real {
                prop_assert_eq!(MUTEX.decide(&split, c), MUTEX.decide(&real, c));
                let now = SystemTime::now();
                prop_assert_eq!(count(2, now, &split, c), count(2, now, &real, c));
            }
        }

        /// Read-write lock: never a writer together with anyone else; readers before the
        /// first writer all hold.
        #[test]
        fn rw_holders_are_compatible(kinds in proptest::collection::vec(any::<bool>(), 1..30)) {
            let names: Vec<String> = kinds
                .iter()
                .enumerate()
                .map(|(i, w)| node(i as u32, if *w { WRITE_NAME } else { READ_NAME }, i as u32))
                .collect();
            let holds = |c: &String| {
                let d = if c.contains(WRITE_NAME) { WRITER.decide(&names, c) } else { READER.decide(&names, c) };
                matches!(d, Decision::Hold(_))
            };
            let holders: Vec<&String> = names.iter().filter(|c| holds(c)).collect();
            let writers = holders.iter().filter(|c| c.contains(WRITE_NAME)).count();
            prop_assert!(writers == 0 || holders.len() == 1);
            let first_writer = names.iter().position(|c| c.contains(WRITE_NAME)).unwrap_or(names.len());
            prop_assert_eq!(holders.len(), if first_writer == 0 { 1 } else { first_writer });
        }
    }
}
