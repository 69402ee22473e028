//! Liveness: after a fault, every contender still alive completes operations again, within a
//! bound the scenario states; the holder a scenario targets observes its loss; a new holder
//! comes within a bound. Each figure measured goes into the scenario's report.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zk_recipes::ConnectionState;
use zk_recipes_testing::fixtures;

use super::workload::{Workload, SESSION_TIMEOUT};

/// What one client achieved: its grants (acquisitions, increments, leaderships) with their
/// times, the holds it saw lost, and a trace of its latest events (grants, losses, timeouts,
/// errors, connection states) that a failed liveness check prints.
#[derive(Debug, Default)]
pub struct Progress {
    grants: Mutex<Vec<Instant>>,
    losses: AtomicU64,
    trace: Mutex<VecDeque<(Instant, String)>>,
}

/// How many of a client's latest events its trace keeps.
const TRACE_LEN: usize = 16;

impl Progress {
    /// Records a grant now.
    pub fn granted(&self) {
        let mut grants = self.grants.lock().unwrap();
        grants.push(Instant::now());
        drop(grants);
        self.record("granted");
    }

    /// Records a hold seen lost.
    pub fn lost(&self) {
        self.losses.fetch_add(1, Ordering::SeqCst);
        self.record("lost its hold");
    }

    /// Adds `event` to the trace (the oldest event goes when it is full).
    pub fn record(&self, event: impl Into<String>) {
        let mut trace = self.trace.lock().unwrap();
        if trace.len() == TRACE_LEN {
            trace.pop_front();
        }
        trace.push_back((Instant::now(), event.into()));
    }

    /// The trace, each event with its time in seconds relative to `origin` (negative before it).
    pub fn trace_from(&self, origin: Instant) -> String {
        let trace = self.trace.lock().unwrap();
        let at = |t: Instant| match t.checked_duration_since(origin) {
            Some(after) => format!("+{:.2}", after.as_secs_f64()),
            None => format!("-{:.2}", (origin - t).as_secs_f64()),
        };
        trace.iter().map(|(t, e)| format!("{} {e}", at(*t))).collect::<Vec<_>>().join("; ")
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
/// a session timeout (a session the fault left behind expires), plus a turn of the mutex queue
/// (the long hold of 3 s and three short ones), plus slack for a busy 2-core machine.
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
        // polled without a deadline of its own: the timeout below reports who is stuck, and why
        let progressed = fixtures::eventually(Duration::from_secs(3600), &what, || async {
            if latch_led.get().is_none() && self.latches.iter().any(|l| l.has_leadership()) {
                latch_led.set(Some(since.elapsed()));
            }
            latch_led.get().is_some() && waiting(self).is_empty()
        });
        if tokio::time::timeout(bound.saturating_sub(since.elapsed()), progressed).await.is_err() {
            let mut stuck = waiting(self);
            if latch_led.get().is_none() {
                stuck.extend(&self.roles["latch"]);
            }
            panic!(
                "timed out waiting for {what}; a latch led: {}; no progress from (or, latches, no lead by) {stuck:?}.\n{}",
                latch_led.get().is_some(),
                self.stall_report(since, &stuck).await
            );
        }
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

    /// What a failed liveness check prints: each stuck client's role, session status and latest
    /// events, and the nodes of every lock path (with their owners' session ids), times in
    /// seconds from `since`.
    async fn stall_report(&self, since: Instant, stuck: &[usize]) -> String {
        let role_of = |i: usize| self.roles.iter().find(|(_, idx)| idx.contains(&i)).map_or("?", |(r, _)| *r);
        let mut lines = Vec::new();
        for &i in stuck {
            let c = &self.clients[i];
            let s = c.fw.status();
            lines.push(format!(
                "client {i} ({}): {:?}, session 0x{:x}, {} suspensions, {} losses; events: {}",
                role_of(i),
                s.state,
                s.session_id,
                s.suspensions,
                s.losses,
                c.progress.trace_from(since)
            ));
        }
        let sessions: Vec<String> =
            self.clients.iter().enumerate().map(|(i, c)| format!("{i}=0x{:x}", c.fw.status().session_id)).collect();
        lines.push(format!("sessions: {}", sessions.join(" ")));
        let reader = &self.clients[self.roles["counter"][0]].fw;
        let leading: Vec<bool> = self.latches.iter().map(|l| l.has_leadership()).collect();
        lines.push(format!("latches leading now: {leading:?}"));
        for role in ["mutex", "rwlock", "semaphore", "latch"] {
            let path = format!("{}/{role}", self.base);
            let listed = tokio::time::timeout(Duration::from_secs(3), fixtures::ephemerals(reader, &path)).await;
            let nodes = match listed {
                Ok(Ok(mut nodes)) => {
                    // in queue order: by the sequence number that ends each name
                    nodes.sort_by_key(|n| {
                        n.rsplit(|c: char| !c.is_ascii_digit()).next().unwrap_or_default().to_string()
                    });
                    let mut owned = Vec::new();
                    for n in nodes {
                        let owner = match reader.exists(&n).await {
                            Ok(Some(stat)) => format!("0x{:x}", stat.ephemeral_owner),
                            other => format!("{other:?}"),
                        };
                        owned.push(format!("{} by {owner}", n.trim_start_matches(&path)));
                    }
                    owned.join(", ")
                }
                Ok(Err(e)) => format!("not listed: {e}"),
                Err(_) => "not listed within 3 s".to_string(),
            };
            lines.push(format!("{path}: {nodes}"));
        }
        lines.join("\n")
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
