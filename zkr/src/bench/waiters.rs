//! The queue workloads: `drain` (W waiters queued on one lock, timed until each held it once)
//! and `waiters_memory` (the resident memory of W waiters on one lock over one session).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::{Framework, InterProcessMutex};

use super::{fail, rss_mb, Failure, Report};

/// W waiters queue on one lock held by client 0; then the time until all have held and
/// released it once.
pub(crate) async fn drain(clients: &[Framework], base: &str, waiters: usize) -> Result<Report, Failure> {
    if waiters == 0 {
        return Err((2, "--waiters must be >= 1".into()));
    }
    let holder = InterProcessMutex::new(&clients[0], base).map_err(|e| (2, e.to_string()))?;
    let guard = holder.acquire().await.map_err(fail)?;
    let inside = Arc::new(AtomicUsize::new(0));
    let violations = Arc::new(AtomicU64::new(0));
    let polled = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::with_capacity(waiters);
    for i in 0..waiters {
        let fw = clients[i % clients.len()].clone();
        let (base, inside, violations) = (base.to_string(), inside.clone(), violations.clone());
        let polled = polled.clone();
        tasks.push(tokio::spawn(async move {
            polled.fetch_add(1, Ordering::SeqCst);
            let m = InterProcessMutex::new(&fw, &base)?;
            let g = m.acquire().await?;
            let held_at = Instant::now();
            if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                violations.fetch_add(1, Ordering::SeqCst);
            }
            inside.fetch_sub(1, Ordering::SeqCst);
            g.release().await.map(|()| held_at)
        }));
    }
    until_queued(&clients[0], base, &polled, waiters, Duration::from_secs(120)).await?;
    let started = Instant::now();
    guard.release().await.map_err(fail)?;
    let mut errors = 0;
    // each waiter's wait: from the holder's release until it held
    let mut waits_ms = Vec::with_capacity(waiters);
    for t in tasks {
        match t.await {
            Ok(Ok(held_at)) => waits_ms.push(held_at.saturating_duration_since(started).as_secs_f64() * 1000.0),
            _ => errors += 1,
        }
    }
    let total_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(Report {
        latencies_ms: waits_ms,
        violations: violations.load(Ordering::SeqCst),
        errors,
        extra: vec![("waiters", waiters as f64), ("total_ms", total_ms), ("per_handoff_ms", total_ms / waiters as f64)],
        ops_override: Some(waiters as u64),
        ..Default::default()
    })
}

/// One process, one session, W waiters on one lock: the resident memory.
pub(crate) async fn waiters_memory(fw: &Framework, base: &str, waiters: usize) -> Result<Report, Failure> {
    let holder = InterProcessMutex::new(fw, base).map_err(|e| (2, e.to_string()))?;
    let guard = holder.acquire().await.map_err(fail)?;
    let before = rss_mb();
    let polled = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::with_capacity(waiters);
    for _ in 0..waiters {
        let (m, polled) = (holder.clone(), polled.clone());
        tasks.push(tokio::spawn(async move {
            polled.fetch_add(1, Ordering::SeqCst);
            m.acquire().await.map(drop)
        }));
    }
    until_queued(fw, base, &polled, waiters, Duration::from_secs(300)).await?;
    let rss = rss_mb();
    for t in &tasks {
        t.abort();
    }
    drop(guard);
    Ok(Report {
        extra: vec![("waiters", waiters as f64), ("rss_mb", rss), ("rss_mb_before", before)],
        ops_override: Some(waiters as u64),
        ..Default::default()
    })
}

/// Returns once all `waiters` tasks wait: each has started its acquire (`polled`: counted as
/// it starts, in the poll that sends its first request or joins its session's local queue),
/// and the lock's queue in ZooKeeper has settled (the same contenders on two listings 100 ms
/// apart). Beyond the first few, a session's waiters on one lock wait in its local queue, not
/// as nodes, so the number of children alone cannot tell.
async fn until_queued(
    fw: &Framework,
    base: &str,
    polled: &AtomicUsize,
    waiters: usize,
    limit: Duration,
) -> Result<(), Failure> {
    let deadline = Instant::now() + limit;
    let mut last = None;
    loop {
        let children = fw.children(base).await.map_err(fail)?;
        let all_polled = polled.load(Ordering::SeqCst) == waiters;
        // (the holder and at least one waiter, or every waiter when they are few)
        if all_polled && children.len() >= 2 && last.as_ref() == Some(&children) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err((1, "the waiters never queued".into()));
        }
        last = Some(children);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
