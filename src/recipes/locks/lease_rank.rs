//! The semaphore's fast path: who holds among lease nodes taken without the internal lock.

use std::time::SystemTime;

use super::order::position;
use super::permit_name::permit_deadline;
use super::rules::{earliest_deadline, others, Decision, Rules};

/// Semaphore leases taken without the semaphore's internal lock (its fast path, see
/// `InterProcessSemaphoreV2`): a lease holds when fewer than `max_leases` leases come before
/// it — every expirable permit, wherever its sequence sorts (a permit replaces a holding lease
/// with a later sequence), then the plain leases that sort before it. That count only falls
/// once we hold (later nodes sort after us; a permit only replaces a lease that counted
/// already), so with Curator's rule ([`LeaseCount`](super::rules::LeaseCount), under the lock) beside it no more than
/// `max_leases` hold: the last holder in this order counts every other holder before it.
///
/// A waiter reclaims the expired permits before it, or watches the `max_leases` leases right
/// before it (at most [`NEAREST_WATCHES`] of them; more leases than that wait on the
/// children): only the deletion of one of those can make it a holder, in whatever order the
/// holders let go.
#[derive(Debug, Clone)]
pub(crate) struct LeaseRank {
    pub max_leases: usize,
    /// The wall clock that permits' deadlines are compared with (`SystemTime::now`).
    pub now: fn() -> SystemTime,
}

/// The most leases a [`LeaseRank`] waiter watches one by one; a semaphore with more leases
/// watches its children (a change of any lease wakes every such waiter).
pub(crate) const NEAREST_WATCHES: usize = 4;

impl LeaseRank {
    pub(crate) fn new(max_leases: usize) -> Self {
        Self { max_leases, now: SystemTime::now }
    }
}

impl Rules for LeaseRank {
    fn lock_names(&self) -> &[&'static str] {
        &[crate::recipes::layout::LEASE_NAME]
    }

    fn decide(&self, sorted: &[String], ours: &str) -> Decision {
        let Some(index) = position(sorted, ours) else { return Decision::Missing };
        let is_permit = |c: &&String| permit_deadline(c).is_some();
        let permits = others(sorted, ours).filter(is_permit);
        let before: Vec<&String> = permits.chain(sorted[..index].iter().filter(|c| !is_permit(c))).collect();
        if before.len() < self.max_leases {
            return Decision::Acquired;
        }
        let now = (self.now)();
        let expired: Vec<String> =
            before.iter().filter(|c| permit_deadline(c).is_some_and(|at| at <= now)).map(|c| (*c).clone()).collect();
        if !expired.is_empty() {
            Decision::Reclaim(expired)
        } else if self.max_leases > NEAREST_WATCHES {
            Decision::WatchChildren
        } else {
            let nearest = before[before.len() - self.max_leases..].iter().map(|c| (*c).clone()).collect();
            Decision::Watch { nodes: nearest, then_acquired: false, ahead: None }
        }
    }

    fn wake_at(&self, sorted: &[String], ours: &str) -> Option<SystemTime> {
        earliest_deadline(sorted, ours)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::rules::LeaseCount;
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

    fn watch(nodes: &[&String]) -> Decision {
        Decision::Watch { nodes: nodes.iter().map(|n| n.to_string()).collect(), then_acquired: false, ahead: None }
    }

    #[test]
    fn the_first_max_leases_hold_and_a_waiter_watches_the_leases_right_before_it() {
        let d = LeaseRank::new(2);
        let v = [lease(1), lease(2), lease(3), lease(4)];
        assert_eq!(d.decide(&v, &v[0]), Decision::Acquired);
        assert_eq!(d.decide(&v, &v[1]), Decision::Acquired);
        assert_eq!(d.decide(&v, &v[2]), watch(&[&v[0], &v[1]]));
        assert_eq!(d.decide(&v, &v[3]), watch(&[&v[1], &v[2]]));
        // ranking, not counting: the first two hold however many wait behind them (Curator's
        // count makes even the first wait)
        assert_eq!(LeaseCount::new(2).decide(&v, &v[0]), Decision::WatchChildren);
        // a holder that lets go out of order wakes the waiter that watches it
        let after = [lease(1), lease(3), lease(4)];
        assert_eq!(d.decide(&after, &after[1]), Decision::Acquired);
        assert_eq!(d.decide(&after, &after[2]), watch(&[&after[0], &after[1]]));
        assert_eq!(d.decide(&v, &lease(9)), Decision::Missing);
    }

    #[test]
    fn a_permit_counts_before_every_lease_wherever_it_sorts() {
        let d = LeaseRank { max_leases: 2, now: || at(5_000) };
        // lease 1 became permit 5 (it holds); leases 2 and 3 were behind it
        let v = [lease(2), lease(3), permit(5, 9_000)];
        assert_eq!(d.decide(&v, &v[0]), Decision::Acquired);
        // two before lease 3 in the order that counts: the permit, then lease 2
        assert_eq!(d.decide(&v, &v[1]), watch(&[&v[2], &v[0]]));
        assert_eq!(d.wake_at(&v, &v[1]), Some(at(9_000)));
        // an expired permit before us is reclaimed
        let v = [lease(2), lease(3), permit(5, 4_000)];
        assert_eq!(d.decide(&v, &v[1]), Decision::Reclaim(vec![v[2].clone()]));
        // not while we hold without its place
        assert_eq!(d.decide(&v, &v[0]), Decision::Acquired);
    }

    #[test]
    fn many_leases_wait_on_the_children() {
        let d = LeaseRank::new(NEAREST_WATCHES + 1);
        let v: Vec<String> = (1..=NEAREST_WATCHES as u32 + 2).map(lease).collect();
        assert_eq!(d.decide(&v, &v[NEAREST_WATCHES]), Decision::Acquired);
        assert_eq!(d.decide(&v, &v[NEAREST_WATCHES + 1]), Decision::WatchChildren);
        let d = LeaseRank::new(NEAREST_WATCHES);
        assert_eq!(d.decide(&v, &v[NEAREST_WATCHES]), watch(&v[..NEAREST_WATCHES].iter().collect::<Vec<_>>()));
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::super::order::sort_children;
    use super::super::rules::LeaseCount;
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
            LeaseCount::new(max).decide(&names, &nodes[k].name)
        } else {
            LeaseRank::new(max).decide(&names, &nodes[k].name)
        };
        if decision == Decision::Acquired {
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
