//! The soak's streams: lock cycles, elections, cache events, expiries and cuts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zk_recipes::ZooKeeperError;

use futures_util::StreamExt;
use tokio::task::JoinHandle;
use zk_recipes::CreateMode;
use zk_recipes::{Cache, Error, Framework, InterProcessMutex, LeaderLatch};
use zk_recipes_testing::TcpProxy;

use crate::Soak;

/// How long one acquire or one election may take before it counts as an error.
const STEP: Duration = Duration::from_secs(20);
/// The cache writer's nodes.
const CACHE_NODES: usize = 20;
/// The elections run on this many paths at once.
const ELECTION_PATHS: usize = 4;

/// Starts every stream; each ends when the soak is over or its target is reached.
pub fn start(soak: &Arc<Soak>, proxy: Arc<TcpProxy>) -> Vec<JoinHandle<()>> {
    let mut streams = Vec::new();
    for w in 0..soak.plan.lock_workers {
        streams.push(tokio::spawn(locks(soak.clone(), w)));
    }
    for e in 0..ELECTION_PATHS {
        streams.push(tokio::spawn(elections(soak.clone(), e)));
    }
    streams.push(tokio::spawn(cache(soak.clone())));
    streams.push(tokio::spawn(expiries(soak.clone())));
    streams.push(tokio::spawn(cuts(soak.clone(), proxy)));
    streams
}

fn below(counter: &AtomicU64, target: u64) -> bool {
    counter.load(Ordering::Relaxed) < target
}

/// The share of the time bound over which the streams spread their targets.
const SPREAD: f64 = 0.9;

/// Waits until the next of `target` steps is due, the steps spread evenly over [`SPREAD`] of
/// the time bound (so that the mix stays a mix for the whole run); at once when behind.
async fn pace(soak: &Soak, counter: &AtomicU64, target: u64) {
    let done = counter.load(Ordering::Relaxed) as f64;
    let start = soak.deadline - Duration::from_secs(soak.plan.secs);
    let due = start + Duration::from_secs_f64(soak.plan.secs as f64 * SPREAD * done / target.max(1) as f64);
    if due > Instant::now() && !soak.over() {
        tokio::time::sleep_until(due.min(soak.deadline).into()).await;
    }
}

/// Acquire and release a mutex on one of the paths, at random (seeded), as fast as it goes.
async fn locks(soak: Arc<Soak>, worker: usize) {
    let mut rng = fastrand::Rng::with_seed(soak.plan.seed.wrapping_mul(1_000_003) ^ worker as u64);
    let fw = &soak.fws[worker % soak.fws.len()];
    let c = &soak.counts;
    while !soak.over() && below(&c.locks, soak.plan.lock_cycles) {
        pace(&soak, &c.locks, soak.plan.lock_cycles).await;
        let path = format!("{}/locks/p{}", soak.root, rng.usize(..soak.plan.paths));
        let mutex = InterProcessMutex::new(fw, &path).expect("a valid path");
        match mutex.acquire_timeout(STEP).await {
            Ok(guard) => {
                // a release that finds the hold lost (an expiry) still leaves nothing behind
                let _ = guard.release().await;
                c.locks.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                c.lock_errors.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Two latches (frameworks 0 and 1) on one path: one leads, closes, the other takes over —
/// two elections — and closes; again.
async fn elections(soak: Arc<Soak>, e: usize) {
    let path = format!("{}/leader/e{e}", soak.root);
    let c = &soak.counts;
    let mut round = 0u64;
    while !soak.over() && below(&c.elections, soak.plan.elections) {
        pace(&soak, &c.elections, soak.plan.elections).await;
        round += 1;
        let (a_fw, b_fw) =
            if round.is_multiple_of(2) { (&soak.fws[0], &soak.fws[1]) } else { (&soak.fws[1], &soak.fws[0]) };
        let a = LeaderLatch::new(a_fw, &path, &format!("a{e}-{round}")).expect("latch");
        let b = LeaderLatch::new(b_fw, &path, &format!("b{e}-{round}")).expect("latch");
        if election_round(&a, &b, c).await.is_err() {
            c.election_errors.fetch_add(1, Ordering::Relaxed);
        }
        let _ = a.close().await;
        let _ = b.close().await;
    }
}

async fn election_round(a: &LeaderLatch, b: &LeaderLatch, c: &crate::Counts) -> Result<(), Error> {
    a.start().await?;
    b.start().await?;
    // the first to lead; both waits end with `Timeout` after STEP
    let first = tokio::select! {
        r = a.await_leadership_timeout(STEP) => r.map(|_| 0),
        r = b.await_leadership_timeout(STEP) => r.map(|_| 1),
    }?;
    c.elections.fetch_add(1, Ordering::Relaxed);
    let (leader, other) = if first == 0 { (a, b) } else { (b, a) };
    leader.close().await?;
    other.await_leadership_timeout(STEP).await?;
    c.elections.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// A tree cache on framework 2 hears a writer on framework 3 create, change and delete
/// [`CACHE_NODES`] nodes, paced to the target.
async fn cache(soak: Arc<Soak>) {
    let dir = format!("{}/cache/tree", soak.root);
    let writer = &soak.fws[3];
    let _ = writer.create(&dir, b"", CreateMode::Persistent).await;
    let cache = Cache::tree(&soak.fws[2], &dir).build().expect("cache");
    cache.start().await.expect("the cache starts");
    let counter = soak.clone();
    let mut events = Box::pin(cache.events());
    let consumer = tokio::spawn(async move {
        while !counter.over() {
            if let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(500), events.next()).await {
                counter.counts.cache_events.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let mut rng = fastrand::Rng::with_seed(soak.plan.seed ^ 0xCAC4E);
    let c = &soak.counts;
    while !soak.over() && below(&c.cache_events, soak.plan.cache_events) {
        pace(&soak, &c.cache_writes, soak.plan.cache_events).await;
        let node = format!("{dir}/n{}", rng.usize(..CACHE_NODES));
        let _ = match writer.exists(&node).await {
            Ok(None) => writer.create(&node, b"0", CreateMode::Persistent).await.map(drop),
            Ok(Some(_)) if rng.bool() => writer.set_data(&node, &rng.u64(..).to_le_bytes(), None).await.map(drop),
            Ok(Some(_)) => writer.delete(&node).await,
            Err(e) => Err(e),
        };
        c.cache_writes.fetch_add(1, Ordering::Relaxed);
    }
    let _ = consumer.await;
    for n in 0..CACHE_NODES {
        let _ = delete_if_there(writer, &format!("{dir}/n{n}")).await;
    }
    let _ = cache.close().await;
}

async fn delete_if_there(fw: &Framework, path: &str) -> Result<(), Error> {
    match fw.delete(path).await {
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(()),
        other => other,
    }
}

/// Waits for the `i`-th slot of `count` spread evenly over the soak's time bound (offset by
/// `phase` of a slot); false when the soak is over first.
async fn slot(soak: &Soak, i: u64, count: u64, phase: f64) -> bool {
    let span = soak.plan.secs as f64 * 0.95 / count.max(1) as f64;
    let at = soak.deadline - Duration::from_secs(soak.plan.secs) + Duration::from_secs_f64(span * (i as f64 + phase));
    while Instant::now() < at {
        if soak.over() {
            return false;
        }
        tokio::time::sleep((at - Instant::now()).min(Duration::from_millis(500))).await;
    }
    !soak.over()
}

/// Session expiries, paced evenly, each on one of the frameworks (seeded).
async fn expiries(soak: Arc<Soak>) {
    let mut rng = fastrand::Rng::with_seed(soak.plan.seed ^ 0xE4F1);
    let c = &soak.counts;
    let mut i = 0;
    while below(&c.expiries, soak.plan.expiries) && slot(&soak, i, soak.plan.expiries, 0.5).await {
        i += 1;
        let fw = &soak.fws[rng.usize(..soak.fws.len())];
        match zk_recipes_testing::expire_session(fw).await {
            Ok(()) => c.expiries.fetch_add(1, Ordering::Relaxed),
            Err(_) => c.expiry_errors.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// Connection cuts (every connection through the proxy closes), paced evenly.
async fn cuts(soak: Arc<Soak>, proxy: Arc<TcpProxy>) {
    let c = &soak.counts;
    let mut i = 0;
    while below(&c.cuts, soak.plan.cuts) && slot(&soak, i, soak.plan.cuts, 0.0).await {
        i += 1;
        proxy.cut();
        c.cuts.fetch_add(1, Ordering::Relaxed);
    }
}

/// What is left under `root` that no recipe should leave: any ephemeral node, and any node
/// below the recipes' parents (`root/<kind>/<name>/<node>`).
pub async fn left_under(fw: &Framework, root: &str) -> Vec<String> {
    let mut left = Vec::new();
    let mut stack = vec![(root.to_string(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let children = match fw.children(&dir).await {
            Ok(c) => c,
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => continue,
            Err(e) => {
                left.push(format!("{dir}: {e}"));
                continue;
            }
        };
        for child in children {
            let path = format!("{dir}/{child}");
            let ephemeral = matches!(fw.exists(&path).await, Ok(Some(s)) if s.ephemeral_owner != 0);
            if depth + 1 >= 3 || ephemeral {
                left.push(path.clone());
            }
            stack.push((path, depth + 1));
        }
    }
    left
}
