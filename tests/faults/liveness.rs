//! Liveness: after a fault, every contender still alive completes operations again, within a
//! bound the scenario states; the holder a scenario targets observes its loss; a new holder
//! comes within a bound. Each figure measured goes into the scenario's report.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zk_recipes::ConnectionState;
use zk_recipes_testing::fixtures;

use super::workload::{Workload, SESSION_TIMEOUT};

/// What one client achieved: its grants (acquisitions, increments, leaderships) with their
/// times, and the holds it saw lost.
#[derive(Debug, Default)]
pub struct Progress {
    grants: Mutex<Vec<Instant>>,
    losses: AtomicU64,
}

impl Progress {
    /// Records a grant now.
    pub fn granted(&self) {
        let mut grants = self.grants.lock().unwrap();
        grants.push(Instant::now());
    }

    /// Records a hold seen lost.
    pub fn lost(&self) {
        self.losses.fetch_add(1, Ordering::SeqCst);
    }

    /// The holds seen lost so far.
    pub fn losses(&self) -> u64 {
        self.losses.load(Ordering::SeqCst)
    }

    /// The first grant at or after `since` (grants are recorded in time order).
    pub fn first_since(&self, since: Instant) -> Option<Instant> {
        let grants = self.grants.lock().unwrap();
        grants.get(grants.partition_point(|t| *t < since)).copied()
    }

    /// The latest grant.
    pub fn last(&self) -> Option<Instant> {
        self.grants.lock().unwrap().last().copied()
    }

    /// How many grants at or after `since`.
    pub fn count_since(&self, since: Instant) -> usize {
        let grants = self.grants.lock().unwrap();
        grants.len() - grants.partition_point(|t| *t < since)
    }
}

/// The bound within which every contender alive completes an operation after a fault ended:
/// a session timeout (a session the fault left behind expires), plus a long hold (3 s) in the
/// mutex queue and an acquire timeout (2 s) of the contenders that waited behind it, plus
/// slack for a busy 2-core machine.
pub const PROGRESS_BOUND: Duration = Duration::from_secs(4 + 3 + 2 + 5);

/// The bound within which another contender holds the mutex after a holder's server died, its
/// link was cut off or its session expired: the session timeout + 2 s.
pub const NEW_HOLDER_BOUND: Duration = Duration::from_secs(SESSION_TIMEOUT.as_secs() + 2);

/// The bound within which another contender holds the mutex after the ensemble's leader died:
/// [`NEW_HOLDER_BOUND`] plus an election (every client's server stops serving until a new
/// leader is synced; 1–3 s measured on a busy 2-core machine).
pub const NEW_HOLDER_AFTER_ELECTION_BOUND: Duration = Duration::from_secs(NEW_HOLDER_BOUND.as_secs() + 4);

impl Workload {
    /// Waits (the workload running) until every contender has been granted something at or
    /// after `since` and one leader latch leads; records the time that took as the scenario's
    /// liveness figure.
    ///
    /// # Panics
    /// If that does not happen within `bound`.
    pub async fn expect_progress(&self, since: Instant, bound: Duration, after: &str) {
        let latch_led = std::cell::Cell::new(None);
        let waiting = |w: &Workload| -> Vec<usize> {
            (0..w.clients.len())
                .filter(|i| !w.roles["latch"].contains(i) && w.clients[*i].progress.first_since(since).is_none())
                .collect()
        };
        let what = format!("every contender to complete an operation after {after} (bound {bound:?})");
        fixtures::eventually(bound.saturating_sub(since.elapsed()), &what, || async {
            if latch_led.get().is_none() && self.latches.iter().any(|l| l.has_leadership()) {
                latch_led.set(Some(since.elapsed()));
            }
            latch_led.get().is_some() && waiting(self).is_empty()
        })
        .await;
        let slowest = (0..self.clients.len())
            .filter_map(|i| self.clients[i].progress.first_since(since))
            .map(|t| t - since)
            .chain(latch_led.get())
            .max()
            .unwrap_or_default();
        let ops: Vec<String> = self
            .roles
            .iter()
            .filter(|(role, _)| **role != "latch")
            .map(|(role, idx)| {
                let counts: Vec<String> =
                    idx.iter().map(|i| self.clients[*i].progress.count_since(since).to_string()).collect();
                format!("{role} {}", counts.join("/"))
            })
            .collect();
        self.note(format!(
            "Liveness after {after}: every contender completed operations again, the slowest {:.1} s after (bound {:.0} s); a latch led {:.1} s after. Operations per contender since: {}.",
            slowest.as_secs_f64(),
            bound.as_secs_f64(),
            latch_led.get().unwrap_or_default().as_secs_f64(),
            sorted(ops).join(", ")
        ));
    }

    /// Waits until a mutex contender other than `except` is granted the mutex at or after
    /// `since` (the fault); records how long that took.
    ///
    /// # Panics
    /// If that does not happen within `bound` of `since`.
    pub async fn expect_new_holder(&self, since: Instant, except: Option<usize>, bound: Duration, fault: &str) {
        let others: Vec<usize> = self.roles["mutex"].iter().copied().filter(|i| Some(*i) != except).collect();
        let first = || others.iter().filter_map(|i| self.clients[*i].progress.first_since(since)).min();
        let what = format!("a new mutex holder after {fault} (bound {bound:?})");
        fixtures::eventually(bound.saturating_sub(since.elapsed()), &what, || async { first().is_some() }).await;
        let took = first().map(|t| t - since).unwrap_or_default();
        assert!(took <= bound, "a new mutex holder {took:?} after {fault}, bound {bound:?}");
        self.note(format!(
            "New mutex holder after {fault}: {:.2} s (bound {:.0} s).",
            took.as_secs_f64(),
            bound.as_secs_f64()
        ));
    }

    /// Asserts that the targeted holder `client` saw its hold lost (eventually, within the
    /// session timeout of `since`) and that its framework observed the fault (`detect`).
    ///
    /// # Panics
    /// If either did not happen.
    pub async fn expect_holder_loss(
        &self,
        client: usize,
        losses_before: u64,
        detect: tokio::task::JoinHandle<Option<Duration>>,
        fault: &str,
    ) {
        let seen = detect.await.unwrap();
        assert!(seen.is_some(), "the targeted holder's framework never observed {fault}");
        let progress = &self.clients[client].progress;
        fixtures::eventually(
            SESSION_TIMEOUT,
            format!("the targeted holder to see its hold lost after {fault}"),
            || async { progress.losses() > losses_before },
        )
        .await;
    }

    /// Waits for a mutex holder accepted by `accept` whose hold began less than 300 ms ago (so
    /// that a fault hits it while it holds); returns its client index.
    pub async fn fresh_mutex_holder(&self, accept: impl Fn(usize) -> bool) -> usize {
        let holder = std::cell::Cell::new(None);
        fixtures::eventually(Duration::from_secs(30), "a fresh mutex holder to target", || async {
            let now = *self.mutex_holder.lock().unwrap();
            holder.set(now.filter(|&i| {
                accept(i) && self.clients[i].progress.last().is_some_and(|t| t.elapsed() < Duration::from_millis(300))
            }));
            holder.get().is_some()
        })
        .await;
        holder.get().expect("a holder")
    }

    /// Starts timing how long `client`'s framework takes to see a state that invalidates holds
    /// (SUSPENDED or LOST); the task's output is that time, `None` if not seen within 30 s.
    pub fn time_loss_detection(&self, client: usize) -> tokio::task::JoinHandle<Option<Duration>> {
        let fw = self.clients[client].fw.clone();
        let latencies = self.loss_latencies.clone();
        let started = Instant::now();
        let before = fw.status();
        tokio::spawn(async move {
            let mut rx = fw.status_watch();
            let seen = rx.wait_for(|s| {
                s.losses > before.losses || s.suspensions > before.suspensions || s.state == ConnectionState::Suspended
            });
            tokio::time::timeout(Duration::from_secs(30), seen).await.ok()?.ok()?;
            let took = started.elapsed();
            latencies.lock().unwrap().push(took);
            Some(took)
        })
    }

    /// Adds a line to the scenario's report.
    pub fn note(&self, line: String) {
        eprintln!("{line}");
        self.notes.lock().unwrap().push(line);
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}
