//! The `shedlock` workload: N replicas decide scheduled ticks of one job, ShedLock's way.
//!
//! Every client is a replica (its own session) running the same job. For each tick, all
//! replicas call [`ShedLock::try_lock`] on the job's one name at once; exactly one takes it
//! (the node exists after the first tick, so each tick is taken by a versioned `setData` of
//! the instant the previous tick's winner wrote when it unlocked: the steady state of a real
//! deployment). A tick is **decided** when every replica has answered it; then the winner
//! unlocks (`at_least_for` 0: it writes "now", so the next tick may be taken at once) and the
//! next tick starts when all are back. One operation = one tick decided; its latency runs
//! from the tick's start to its last answer. The replicas keep in step in process (a
//! barrier), as a schedule would keep them in step by the clock; the winner unlocks only after
//! everyone answered, because with `at_least_for` 0 a replica that asked later than the
//! unlock would rightly take the tick again.
//!
//! Violations: a tick that two replicas won (safety), or that none won while no operation of
//! the run had failed (liveness: the lock was free, someone must take it).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::{Framework, ShedLock};

use super::{fail, window, BenchArgs, Failure, Report, Shared};

/// The job's name (the node `<run path>/job`).
const JOB: &str = "job";
/// The tick's `at_most_for`: far longer than a tick may take (a winner that fails to unlock
/// holds the name that long).
const AT_MOST: Duration = Duration::from_secs(60);

/// What the replicas share about the tick in progress.
struct Tick {
    /// Decided by the first replica through the start barrier: whether the tick runs.
    go: AtomicBool,
    /// When it started (set with `go`).
    started: Mutex<Instant>,
    /// Replicas that took the lock in this tick.
    winners: AtomicUsize,
    /// Failed operations of the whole run, when this tick was checked.
    failed: AtomicU64,
}

/// Runs the ticks on the connected clients (one replica each) for the warm-up and the window.
pub(crate) async fn ticks(clients: &[Framework], base: &str, args: &BenchArgs) -> Result<Report, Failure> {
    let n = clients.len();
    let mut locks = Vec::with_capacity(n);
    for fw in clients {
        locks.push(ShedLock::new(fw).root(base).map_err(|e| (2, e.to_string()))?);
    }
    let sync = Arc::new(tokio::sync::Barrier::new(n));
    let tick = Arc::new(Tick {
        go: AtomicBool::new(false),
        started: Mutex::new(Instant::now()),
        winners: AtomicUsize::new(0),
        failed: AtomicU64::new(0),
    });
    let shared = Arc::new(Shared::default());
    let w = window(args);
    let mut tasks = Vec::with_capacity(n);
    for lock in locks {
        let (sync, tick, shared) = (sync.clone(), tick.clone(), shared.clone());
        tasks.push(tokio::spawn(async move {
            let mut decided = Vec::new();
            loop {
                // every replica agrees whether this tick runs (and when it started)
                if sync.wait().await.is_leader() {
                    let now = Instant::now();
                    tick.go.store(now < w.end, Ordering::SeqCst);
                    *tick.started.lock().unwrap_or_else(|p| p.into_inner()) = now;
                }
                sync.wait().await;
                if !tick.go.load(Ordering::SeqCst) {
                    break;
                }
                let held = match lock.try_lock(JOB, AT_MOST, Duration::ZERO).await {
                    Ok(Some(guard)) => {
                        tick.winners.fetch_add(1, Ordering::SeqCst);
                        Some(guard)
                    }
                    Ok(None) => None,
                    Err(e) => {
                        tracing::debug!(error = %e, "try_lock failed");
                        shared.errors.fetch_add(1, Ordering::SeqCst);
                        None
                    }
                };
                // all answered: the tick is decided; one replica checks and counts it
                if sync.wait().await.is_leader() {
                    let now = Instant::now();
                    let started = *tick.started.lock().unwrap_or_else(|p| p.into_inner());
                    let winners = tick.winners.swap(0, Ordering::SeqCst);
                    let errors = shared.errors.load(Ordering::SeqCst);
                    let failed_before = tick.failed.swap(errors, Ordering::SeqCst);
                    if winners > 1 || (winners == 0 && errors == 0) {
                        eprintln!("a tick had {winners} winners");
                        shared.violations.fetch_add(1, Ordering::SeqCst);
                    } else if winners == 0 && errors == failed_before {
                        // nobody won though nothing failed in this tick: an earlier failure
                        // (a winner that could not unlock) left the name held
                        shared.errors.fetch_add(1, Ordering::SeqCst);
                    }
                    if winners == 1 && w.counts(started, now) {
                        decided.push((now - started).as_secs_f64() * 1000.0);
                    }
                }
                if let Some(guard) = held {
                    if let Err(e) = guard.unlock().await {
                        tracing::debug!(error = %e, "unlock failed");
                        shared.errors.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            decided
        }));
    }
    let mut report = Report::default();
    for t in tasks {
        report.latencies_ms.extend(t.await.map_err(fail)?);
    }
    // untimed: the job's node (persistent, as ShedLock leaves it) and the run's directory
    let _ = clients[0].delete(&format!("{base}/{JOB}")).await;
    let _ = clients[0].delete(base).await;
    report.violations = shared.violations.load(Ordering::SeqCst);
    report.errors = shared.errors.load(Ordering::SeqCst);
    report.extra.push(("replicas", n as f64));
    Ok(report)
}
