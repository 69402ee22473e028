//! `holders`: N distinct locks held at once by one process over one session (a lock per
//! entity, every entity locked): the resident memory per held lock, the time to acquire them
//! all and the time to release them all.
//!
//! Lock paths `<dir>/g-<k / 1000>/h-<k>` (no parent with more than 1,000 children); `--tasks`
//! acquires (then releases) are in flight at once, each task taking the next lock number.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::{Framework, InterProcessMutex, LockGuard};

use super::{fail, rss_mb, BenchArgs, Failure, Report};

/// Gives up a run that has not acquired (or released) everything in this long.
const LIMIT: Duration = Duration::from_secs(300);

/// The `holders` run.
pub(crate) async fn holders(fw: &Framework, dir: &str, args: &BenchArgs) -> Result<Report, Failure> {
    let n = args.holders;
    if n == 0 {
        return Err((2, "--holders must be >= 1".into()));
    }
    let before = rss_mb();
    let next = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(args.tasks);
    for _ in 0..args.tasks.min(n) {
        let (fw, dir, next, errors) = (fw.clone(), dir.to_string(), next.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut held: Vec<LockGuard> = Vec::new();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= n {
                    return Ok::<_, zk_recipes::Error>(held);
                }
                let path = format!("{dir}/g-{}/h-{k}", k / 1000);
                match InterProcessMutex::new(&fw, &path)?.acquire().await {
                    Ok(guard) => held.push(guard),
                    Err(e) => {
                        tracing::debug!(error = %e, "acquire failed");
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    let joined = tokio::time::timeout(LIMIT, futures_util::future::join_all(tasks))
        .await
        .map_err(|_| (1, format!("{n} locks not acquired in {LIMIT:?}")))?;
    let acquired = started.elapsed();
    let mut guards: Vec<Vec<LockGuard>> = Vec::with_capacity(joined.len());
    for task in joined {
        guards.push(task.map_err(fail)?.map_err(|e| (2, e.to_string()))?);
    }
    let held: usize = guards.iter().map(Vec::len).sum();
    let rss = rss_mb();
    let mut violations = 0;
    if held + errors.load(Ordering::Relaxed) as usize != n {
        eprintln!("{held} locks held and {} failed, of {n}", errors.load(Ordering::Relaxed));
        violations += 1;
    }
    let released = Instant::now();
    let releases = guards.into_iter().map(|mine| {
        let errors = errors.clone();
        tokio::spawn(async move {
            for guard in mine {
                if guard.release().await.is_err() {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    });
    tokio::time::timeout(LIMIT, futures_util::future::join_all(releases))
        .await
        .map_err(|_| (1, format!("{held} locks not released in {LIMIT:?}")))?;
    let release_ms = released.elapsed().as_secs_f64() * 1000.0;
    let acquire_ms = acquired.as_secs_f64() * 1000.0;
    Ok(Report {
        violations,
        errors: errors.load(Ordering::Relaxed),
        extra: vec![
            ("holders", n as f64),
            ("tasks", args.tasks as f64),
            ("acquire_ms", acquire_ms),
            ("release_ms", release_ms),
            ("rss_mb", rss),
            ("rss_mb_before", before),
            ("rss_kb_per_lock", (rss - before) * 1024.0 / n as f64),
        ],
        ops_override: Some(held as u64),
        seconds_override: Some(acquired.as_secs_f64()),
        ..Default::default()
    })
}
