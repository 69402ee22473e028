//! The `double_barrier` workload: all clients enter and leave a fresh barrier per round.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::{DistributedDoubleBarrier, Framework};

use super::{fail, window, BenchArgs, Failure, Report, Shared};

/// All clients enter and leave a fresh double barrier per round; a round counts when it
/// starts and ends inside the window (client 0's view; every member completes it).
pub(crate) async fn double_barrier(clients: &[Framework], base: &str, args: &BenchArgs) -> Result<Report, Failure> {
    let n = clients.len();
    let sync = Arc::new(tokio::sync::Barrier::new(n));
    let go = Arc::new(AtomicBool::new(false));
    let shared = Arc::new(Shared::default());
    let w = window(args);
    let mut tasks = Vec::new();
    for (idx, fw) in clients.iter().enumerate() {
        let (fw, base, sync, go, shared) = (fw.clone(), base.to_string(), sync.clone(), go.clone(), shared.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            for round in 0u64.. {
                // every member agrees whether this round runs
                if sync.wait().await.is_leader() {
                    go.store(Instant::now() < w.end, Ordering::SeqCst);
                }
                sync.wait().await;
                if !go.load(Ordering::SeqCst) {
                    break;
                }
                let asked = Instant::now();
                let barrier = match DistributedDoubleBarrier::new(&fw, &format!("{base}/round-{round}"), n) {
                    Ok(b) => b,
                    Err(_) => break,
                };
                let entered = barrier.enter_timeout(Duration::from_secs(30)).await;
                let left = barrier.leave_timeout(Duration::from_secs(30)).await;
                if !matches!((entered, left), (Ok(()), Ok(()))) {
                    shared.errors.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                if idx == 0 && w.counts(asked, Instant::now()) {
                    latencies.push(asked.elapsed().as_secs_f64() * 1000.0);
                }
            }
            latencies
        }));
    }
    let mut report = Report::default();
    for t in tasks {
        report.latencies_ms.extend(t.await.map_err(fail)?);
    }
    report.errors = shared.errors.load(Ordering::SeqCst);
    Ok(report)
}
