//! The leases' rules: unit tests (no server) and the model of ranks beside counts.

use std::time::{Duration, SystemTime};

use super::*;

fn lease(seq: u32) -> String {
    format!("_c_{seq:08x}-0000-0000-0000-000000000000-lease-{seq:010}")
}

fn permit(seq: u32, deadline_ms: u64) -> String {
    format!("_c_{seq:08x}-0000-0000-0000-000000000000-expires-{deadline_ms}-lease-{seq:010}")
}

fn at(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

fn watch(nodes: &[&String]) -> Rule {
    Rule::Watch(nodes.iter().map(|n| n.to_string()).collect())
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The fast path's rule at a fixed clock.
struct Rank {
    max: usize,
    now: SystemTime,
}

/// Curator's rule at a fixed clock.
struct Count {
    max: usize,
    now: SystemTime,
}

impl Rank {
    fn new(max: usize) -> Self {
        Rank { max, now: SystemTime::now() }
    }

    fn decide(&self, queue: &[String], ours: &str) -> Rule {
        rank(self.max, self.now, queue, ours)
    }

    fn wake_at(&self, queue: &[String], ours: &str) -> Option<SystemTime> {
        earliest_deadline(queue, ours)
    }
}

impl Count {
    fn new(max: usize) -> Self {
        Count { max, now: SystemTime::now() }
    }

    fn decide(&self, queue: &[String], ours: &str) -> Rule {
        count(self.max, self.now, queue, ours)
    }

    fn wake_at(&self, queue: &[String], ours: &str) -> Option<SystemTime> {
        earliest_deadline(queue, ours)
    }
}
#[test]
fn the_first_max_leases_hold_and_a_waiter_watches_the_leases_right_before_it() {
    let d = Rank::new(2);
    let v = [lease(1), lease(2), lease(3), lease(4)];
    assert_eq!(d.decide(&v, &v[0]), Rule::Holds);
    assert_eq!(d.decide(&v, &v[1]), Rule::Holds);
    assert_eq!(d.decide(&v, &v[2]), watch(&[&v[0], &v[1]]));
    assert_eq!(d.decide(&v, &v[3]), watch(&[&v[1], &v[2]]));
    // ranking, not counting: the first two hold however many wait behind them (Curator's
    // count makes even the first wait)
    assert_eq!(Count::new(2).decide(&v, &v[0]), Rule::WatchChildren);
    // a holder that lets go out of order wakes the waiter that watches it
    let after = [lease(1), lease(3), lease(4)];
    assert_eq!(d.decide(&after, &after[1]), Rule::Holds);
    assert_eq!(d.decide(&after, &after[2]), watch(&[&after[0], &after[1]]));
    assert_eq!(d.decide(&v, &lease(9)), Rule::Missing);
}

#[test]
fn a_permit_counts_before_every_lease_wherever_it_sorts() {
    let d = Rank { max: 2, now: at(5_000) };
    // lease 1 became permit 5 (it holds); leases 2 and 3 were behind it
    let v = [lease(2), lease(3), permit(5, 9_000)];
    assert_eq!(d.decide(&v, &v[0]), Rule::Holds);
    // two before lease 3 in the order that counts: the permit, then lease 2
    assert_eq!(d.decide(&v, &v[1]), watch(&[&v[2], &v[0]]));
    assert_eq!(d.wake_at(&v, &v[1]), Some(at(9_000)));
    // an expired permit before us is reclaimed
    let v = [lease(2), lease(3), permit(5, 4_000)];
    assert_eq!(d.decide(&v, &v[1]), Rule::Reclaim(vec![v[2].clone()]));
    // not while we hold without its place
    assert_eq!(d.decide(&v, &v[0]), Rule::Holds);
}

#[test]
fn many_leases_wait_on_the_children() {
    let d = Rank::new(NEAREST_WATCHES + 1);
    let v: Vec<String> = (1..=NEAREST_WATCHES as u32 + 2).map(lease).collect();
    assert_eq!(d.decide(&v, &v[NEAREST_WATCHES]), Rule::Holds);
    assert_eq!(d.decide(&v, &v[NEAREST_WATCHES + 1]), Rule::WatchChildren);
    let d = Rank::new(NEAREST_WATCHES);
    assert_eq!(d.decide(&v, &v[NEAREST_WATCHES]), watch(&v[..NEAREST_WATCHES].iter().collect::<Vec<_>>()));
}

#[test]
fn lease_count() {
    let d = Count::new(2);
    let two = names(&["_c_a-lease-0000000001", "_c_b-lease-0000000002"]);
    assert_eq!(d.decide(&two, "_c_b-lease-0000000002"), Rule::Holds);
    let three = names(&["_c_a-lease-0000000001", "_c_b-lease-0000000002", "_c_c-lease-0000000003"]);
    assert_eq!(d.decide(&three, "_c_c-lease-0000000003"), Rule::WatchChildren);
    // counting, not ranking: even the first lease waits while there are too many
    assert_eq!(d.decide(&three, "_c_a-lease-0000000001"), Rule::WatchChildren);
    assert_eq!(d.decide(&two, "_c_z-lease-0000000009"), Rule::Missing);
}

#[test]
fn lease_count_reclaims_expired_permits_only_when_over_the_maximum() {
    let at = |ms: u64| SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    let d = Count { max: 2, now: at(5_000) };
    let expired = "_c_a-expires-4000-lease-0000000001".to_string();
    let later = "_c_b-expires-9000-lease-0000000002".to_string();
    let plain = "_c_c-lease-0000000003".to_string();
    let ours = "_c_d-lease-0000000004".to_string();
    // within the maximum: nothing to reclaim, expired or not
    assert_eq!(d.decide(&[expired.clone(), ours.clone()], &ours), Rule::Holds);
    // over it: the expired permit goes, the others stay
    let all = [expired.clone(), later.clone(), plain.clone(), ours.clone()];
    assert_eq!(d.decide(&all, &ours), Rule::Reclaim(vec![expired.clone()]));
    assert_eq!(d.wake_at(&all, &ours), Some(at(4_000)));
    // nothing expired yet: wait for a change, or the earliest deadline
    let waiting = [later.clone(), plain.clone(), ours.clone()];
    assert_eq!(d.decide(&waiting, &ours), Rule::WatchChildren);
    assert_eq!(d.wake_at(&waiting, &ours), Some(at(9_000)));
    assert_eq!(d.wake_at(&[plain.clone(), ours.clone()], &ours), None);
}

mod properties {
    use proptest::prelude::*;

    use super::super::super::order::sort_children;
    use super::*;

    /// A lease node of the model.
    #[derive(Debug, Clone)]
    struct Node {
        name: String,
        /// Curator's acquirer, deciding by the count while it holds the internal lock (else a
        /// fast-path acquirer, deciding by the rank).
        counts: bool,
        holds: bool,
        permit: bool,
        /// A fast-path acquirer looked at the internal lock's queue (at its first wait).
        checked: bool,
    }

    #[derive(Debug, Clone)]
    enum Step {
        /// A new fast-path lease node.
        Rank,
        /// The internal lock taken, then a lease node created under it (at most one such
        /// acquirer waits at a time: it holds the lock until it holds a lease).
        Count,
        /// The waiter at this index (modulo) decides from the current children.
        Decide(usize),
        /// The holder at this index lets go.
        Release(usize),
        /// The lease holder at this index becomes a permit (one transaction: delete, create).
        Swap(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => Just(Step::Rank),
            1 => Just(Step::Count),
            6 => any::<usize>().prop_map(Step::Decide),
            3 => any::<usize>().prop_map(Step::Release),
            1 => any::<usize>().prop_map(Step::Swap),
        ]
    }

    fn name(seq: u32, permit: bool) -> String {
        let kind = if permit { "expires-99999999999999-" } else { "" };
        format!("_c_{seq:08x}-0000-0000-0000-000000000000-{kind}lease-{seq:010}")
    }

    #[derive(Debug, PartialEq)]
    enum Outcome {
        Holds,
        Waits,
        /// Deleted its node: someone queued for the internal lock at its first wait.
        Yields,
    }

    /// Waiter `k` decides from the current children, as the engine does: by its rule, and a
    /// fast-path waiter's first wait looks at the internal lock first.
    fn decide(nodes: &mut [Node], k: usize, max: usize) -> Outcome {
        let mut names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        sort_children(&mut names, &["lease-"]);
        let decision = if nodes[k].counts {
            Count::new(max).decide(&names, &nodes[k].name)
        } else {
            Rank::new(max).decide(&names, &nodes[k].name)
        };
        if decision == Rule::Holds {
            nodes[k].holds = true;
            return Outcome::Holds;
        }
        let lock_queued = nodes.iter().any(|n| n.counts && !n.holds);
        if !nodes[k].counts && !std::mem::replace(&mut nodes[k].checked, true) && lock_queued {
            return Outcome::Yields;
        }
        Outcome::Waits
    }

    proptest! {
        /// Fast-path leases (the rank) beside Curator's (the count, one acquirer at a time under
        /// the internal lock), with releases in any order and holders turned into permits:
        /// never more than `max` hold; and once the holders let go, the waiters all come to
        /// hold in turn (none waits for a waiter that waits for it).
        #[test]
        fn ranks_beside_counts_never_exceed_the_maximum_nor_deadlock(
            max in 1usize..4,
            steps in proptest::collection::vec(step(), 1..120),
        ) {
            let mut nodes: Vec<Node> = Vec::new();
            let mut seq = 0u32;
            for step in steps {
                match step {
                    Step::Rank | Step::Count => {
                        let counts = matches!(step, Step::Count);
                        if counts && nodes.iter().any(|n| n.counts && !n.holds) {
                            continue; // the internal lock is taken
                        }
                        seq += 1;
                        nodes.push(Node { name: name(seq, false), counts, holds: false, permit: false, checked: false });
                    }
                    Step::Decide(i) => {
                        let waiting: Vec<usize> = (0..nodes.len()).filter(|&k| !nodes[k].holds).collect();
                        if !waiting.is_empty() {
                            let k = waiting[i % waiting.len()];
                            if decide(&mut nodes, k, max) == Outcome::Yields {
                                nodes.remove(k);
                            }
                        }
                    }
                    Step::Release(i) => {
                        let holding: Vec<usize> = (0..nodes.len()).filter(|&k| nodes[k].holds).collect();
                        if !holding.is_empty() {
                            nodes.remove(holding[i % holding.len()]);
                        }
                    }
                    Step::Swap(i) => {
                        let leases: Vec<usize> = (0..nodes.len()).filter(|&k| nodes[k].holds && !nodes[k].permit).collect();
                        if !leases.is_empty() {
                            let k = leases[i % leases.len()];
                            seq += 1;
                            nodes[k] = Node { name: name(seq, true), counts: false, holds: true, permit: true, checked: true };
                        }
                    }
                }
                let holders = nodes.iter().filter(|n| n.holds).count();
                prop_assert!(holders <= max, "{holders} hold of {max}: {nodes:?}");
            }
            // liveness: the holders let go; then each waiter, deciding again, holds (and lets
            // go) or yields, until none is left
            nodes.retain(|n| !n.holds);
            while !nodes.is_empty() {
                let before = nodes.len();
                let mut k = 0;
                while k < nodes.len() {
                    match decide(&mut nodes, k, max) {
                        Outcome::Holds | Outcome::Yields => { nodes.remove(k); }
                        Outcome::Waits => k += 1,
                    }
                }
                prop_assert!(nodes.len() < before, "every waiter waits for another: {nodes:?}");
            }
        }
    }
}
