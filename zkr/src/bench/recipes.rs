//! The benchmarked operations, one per recipe.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::zk::{Acls, Client, CreateMode, LockOptions, LockPrefix};
use zk_recipes::{
    DistributedAtomicLong, DistributedDoubleBarrier, Framework, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, SharedCount, VersionedValue,
};

use super::{progress, rss_mb, BenchArgs, Failure, Report, Shared, Window};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recipe {
    Mutex,
    RwLock,
    Semaphore,
    SemaphoreMutex,
    Counter,
    SharedCount,
    DoubleBarrier,
    Raw,
    RawSeq,
    Drain,
    WaitersMemory,
    CacheLoad,
    CacheDelay,
    ZkClientMutex,
}

impl Recipe {
    pub fn parse(recipe: &str, peer: &str) -> Result<Recipe, Failure> {
        let r = match (peer, recipe) {
            ("zookeeper-client", "mutex") => Recipe::ZkClientMutex,
            ("zookeeper-client", other) => {
                return Err((2, format!("peer zookeeper-client supports only the mutex recipe, not {other:?}")))
            }
            ("zk-recipes", "mutex") => Recipe::Mutex,
            ("zk-recipes", "rwlock") => Recipe::RwLock,
            ("zk-recipes", "semaphore") => Recipe::Semaphore,
            ("zk-recipes", "semaphore_mutex") => Recipe::SemaphoreMutex,
            ("zk-recipes", "counter") => Recipe::Counter,
            ("zk-recipes", "shared_count") => Recipe::SharedCount,
            ("zk-recipes", "double_barrier") => Recipe::DoubleBarrier,
            ("zk-recipes", "raw") => Recipe::Raw,
            ("zk-recipes", "raw_seq") => Recipe::RawSeq,
            ("zk-recipes", "drain") => Recipe::Drain,
            ("zk-recipes", "waiters_memory" | "waiters-memory") => Recipe::WaitersMemory,
            ("zk-recipes", "cache_load" | "cache-load") => Recipe::CacheLoad,
            ("zk-recipes", "cache_delay" | "cache-delay") => Recipe::CacheDelay,
            ("zk-recipes", other) => return Err((2, format!("unknown recipe {other:?}"))),
            (other, _) => return Err((2, format!("unknown peer {other:?} (zk-recipes or zookeeper-client)"))),
        };
        Ok(r)
    }
}

/// Violation bookkeeping shared by the clients of a run.
#[derive(Default)]
struct Inside {
    exclusive: AtomicUsize,
    readers: AtomicUsize,
    successes: AtomicI64,
    round_go: AtomicBool,
}

/// One client's state for the timed recipes.
enum Op {
    Mutex(InterProcessMutex),
    Read(InterProcessReadWriteLock, fastrand::Rng),
    Semaphore(InterProcessSemaphoreV2, usize),
    SemaphoreMutex(InterProcessSemaphoreMutex),
    Counter(DistributedAtomicLong),
    /// The count and the last value known (written or returned with a refusal).
    SharedCount(SharedCount, VersionedValue<i32>),
    Raw(Client, String),
    RawSeq(Client, String, String),
    ZkClient(Client, String),
}

fn fail<E: std::fmt::Display>(e: E) -> Failure {
    (1, e.to_string())
}

impl Op {
    async fn new(recipe: Recipe, fw: &Framework, base: &str, idx: usize, args: &BenchArgs) -> Result<Op, Failure> {
        let bad = |e: zk_recipes::Error| (2, e.to_string());
        Ok(match recipe {
            Recipe::Mutex => Op::Mutex(InterProcessMutex::new(fw, base).map_err(bad)?),
            Recipe::RwLock => {
                Op::Read(InterProcessReadWriteLock::new(fw, base).map_err(bad)?, fastrand::Rng::with_seed(idx as u64))
            }
            Recipe::Semaphore => {
                Op::Semaphore(InterProcessSemaphoreV2::new(fw, base, args.leases).map_err(bad)?, args.leases)
            }
            Recipe::SemaphoreMutex => Op::SemaphoreMutex(InterProcessSemaphoreMutex::new(fw, base).map_err(bad)?),
            Recipe::Counter => Op::Counter(DistributedAtomicLong::new(fw, base).map_err(bad)?),
            Recipe::SharedCount => {
                let sc = SharedCount::new(fw, base, 0).map_err(bad)?;
                sc.start().await.map_err(fail)?;
                let known = sc.get().await.map_err(fail)?;
                Op::SharedCount(sc, known)
            }
            Recipe::Raw | Recipe::RawSeq | Recipe::ZkClientMutex => {
                let client = fw.client().map_err(fail)?;
                let dir = base.to_string();
                match fw.create(&dir, b"", CreateMode::Persistent).await {
                    Ok(_) | Err(zk_recipes::Error::ZooKeeper(zk_recipes::zk::Error::NodeExists)) => {}
                    Err(e) => return Err(fail(e)),
                }
                match recipe {
                    Recipe::Raw => Op::Raw(client, format!("{dir}/raw-{idx}")),
                    Recipe::RawSeq => Op::RawSeq(client, dir.clone(), format!("{dir}/n-")),
                    _ => Op::ZkClient(plain_client(fw.connect_string()).await?, dir),
                }
            }
            Recipe::DoubleBarrier | Recipe::Drain | Recipe::WaitersMemory | Recipe::CacheLoad | Recipe::CacheDelay => {
                unreachable!("not a timed loop")
            }
        })
    }

    /// One operation; returns when it started holding (for latency).
    async fn once(&mut self, inside: &Inside, shared: &Shared) -> zk_recipes::Result<Instant> {
        let exclusive = |max: usize| {
            if inside.exclusive.fetch_add(1, Ordering::SeqCst) >= max {
                shared.violations.fetch_add(1, Ordering::SeqCst);
            }
            inside.exclusive.fetch_sub(1, Ordering::SeqCst);
        };
        match self {
            // Guards are released by dropping them, the idiomatic way (as zookeeper-client's
            // lock): the delete is sent at once, ordered before our next request; its reply is
            // awaited in the background.
            Op::Mutex(m) => {
                let g = m.acquire().await?;
                let held = Instant::now();
                exclusive(1);
                drop(g);
                Ok(held)
            }
            Op::SemaphoreMutex(m) => {
                let g = m.acquire().await?;
                let held = Instant::now();
                exclusive(1);
                drop(g);
                Ok(held)
            }
            Op::Semaphore(s, max) => {
                let lease = s.acquire().await?;
                let held = Instant::now();
                exclusive(*max);
                drop(lease);
                Ok(held)
            }
            Op::Read(l, rng) => {
                if rng.u8(0..100) < 75 {
                    let g = l.read().await?;
                    let held = Instant::now();
                    inside.readers.fetch_add(1, Ordering::SeqCst);
                    if inside.exclusive.load(Ordering::SeqCst) > 0 {
                        shared.violations.fetch_add(1, Ordering::SeqCst);
                    }
                    inside.readers.fetch_sub(1, Ordering::SeqCst);
                    drop(g);
                    Ok(held)
                } else {
                    let g = l.write().await?;
                    let held = Instant::now();
                    if inside.exclusive.fetch_add(1, Ordering::SeqCst) > 0 || inside.readers.load(Ordering::SeqCst) > 0
                    {
                        shared.violations.fetch_add(1, Ordering::SeqCst);
                    }
                    inside.exclusive.fetch_sub(1, Ordering::SeqCst);
                    drop(g);
                    Ok(held)
                }
            }
            Op::Counter(c) => {
                let r = c.increment().await?;
                if !r.succeeded {
                    return Err(zk_recipes::Error::Timeout(Duration::ZERO));
                }
                inside.successes.fetch_add(1, Ordering::SeqCst);
                Ok(Instant::now())
            }
            // From the last value known, as Curator's driver with getVersionedValue and
            // trySetCount: one round trip per write, a refusal reads and returns the value
            // that won (as Curator's trySetValue reads before returning false).
            Op::SharedCount(sc, known) => {
                *known = loop {
                    match sc.compare_and_set(known, known.value.wrapping_add(1)).await? {
                        Ok(written) => break written,
                        Err(current) => *known = current,
                    }
                };
                inside.successes.fetch_add(1, Ordering::SeqCst);
                Ok(Instant::now())
            }
            Op::Raw(client, path) => {
                let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
                client.create(path, b"", &options).await?;
                client.delete(path, None).await?;
                Ok(Instant::now())
            }
            Op::RawSeq(client, dir, prefix) => {
                let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
                let create = client.create(prefix, b"", &options);
                let list = client.list_children(dir);
                let (created, listed) = tokio::join!(create, list);
                let (_, seq) = created?;
                listed?;
                client.delete(&format!("{prefix}{seq}"), None).await?;
                Ok(Instant::now())
            }
            Op::ZkClient(client, dir) => {
                let options = LockOptions::new(Acls::anyone_all())
                    .with_ancestor_options(CreateMode::Container.with_acls(Acls::anyone_all()))?;
                let lock = client.lock(LockPrefix::new_curator(dir, "lock-")?, b"", options).await?;
                let held = Instant::now();
                exclusive(1);
                drop(lock); // releases (its delete is ordered before our next request)
                Ok(held)
            }
        }
    }
}

/// A session of zookeeper-client as its users get it (`Client::connector()`): Nagle's
/// algorithm stays on, where our framework turns it off. Opened after every framework of the
/// run has connected, so no framework's connection handling touches its socket.
async fn plain_client(connect: &str) -> Result<Client, Failure> {
    Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(connect)
        .await
        .map_err(|e| (69, format!("cannot reach ZooKeeper at {connect}: {e}")))
}

pub(crate) async fn run(
    recipe: Recipe,
    clients: &[Framework],
    base: &str,
    args: &BenchArgs,
) -> Result<Report, Failure> {
    match recipe {
        Recipe::Drain => drain(clients, base, args.waiters).await,
        Recipe::WaitersMemory => waiters_memory(&clients[0], base, args.waiters).await,
        Recipe::CacheLoad => super::cache::load(&clients[0], args).await,
        Recipe::CacheDelay => super::cache::delay(&clients[0], base, args).await,
        Recipe::DoubleBarrier => double_barrier(clients, base, args).await,
        _ => timed(recipe, clients, base, args).await,
    }
}

fn window(args: &BenchArgs) -> Window {
    let start = Instant::now() + Duration::from_secs_f64(args.warmup_seconds);
    Window { start, end: start + Duration::from_secs_f64(args.seconds) }
}

async fn timed(recipe: Recipe, clients: &[Framework], base: &str, args: &BenchArgs) -> Result<Report, Failure> {
    let mut ops = Vec::with_capacity(clients.len());
    for (idx, fw) in clients.iter().enumerate() {
        ops.push(Op::new(recipe, fw, base, idx, args).await?);
    }
    let inside = Arc::new(Inside::default());
    let shared = Arc::new(Shared::default());
    let counted = Arc::new(AtomicU64::new(0));
    let w = window(args);
    let bar = progress(w.end - Instant::now(), counted.clone(), shared.clone());
    let mut tasks = Vec::new();
    for mut op in ops {
        let (inside, shared, counted) = (inside.clone(), shared.clone(), counted.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let asked = Instant::now();
                if asked >= w.end {
                    break;
                }
                match op.once(&inside, &shared).await {
                    Ok(held) => {
                        if w.counts(asked, Instant::now()) {
                            latencies.push((held - asked).as_secs_f64() * 1000.0);
                            counted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "operation failed");
                        shared.errors.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            latencies
        }));
    }
    let mut report = Report::default();
    for t in tasks {
        report.latencies_ms.extend(t.await.map_err(fail)?);
    }
    shared.stop.store(true, Ordering::SeqCst);
    if let Some(bar) = bar {
        let _ = bar.await;
    }
    if matches!(recipe, Recipe::Counter | Recipe::SharedCount) {
        let fw = &clients[0];
        let value = match recipe {
            Recipe::Counter => DistributedAtomicLong::new(fw, base).map_err(fail)?.get().await.map_err(fail)?,
            _ => i64::from(SharedCount::new(fw, base, 0).map_err(fail)?.get().await.map_err(fail)?.value),
        };
        if value != inside.successes.load(Ordering::SeqCst) {
            eprintln!("counter {value} != {} successful increments", inside.successes.load(Ordering::SeqCst));
            shared.violations.fetch_add(1, Ordering::SeqCst);
        }
    }
    report.violations = shared.violations.load(Ordering::SeqCst);
    report.errors = shared.errors.load(Ordering::SeqCst);
    Ok(report)
}

/// All clients enter and leave a fresh double barrier per round; a round counts when it
/// starts and ends inside the window (client 0's view; every member completes it).
async fn double_barrier(clients: &[Framework], base: &str, args: &BenchArgs) -> Result<Report, Failure> {
    let n = clients.len();
    let sync = Arc::new(tokio::sync::Barrier::new(n));
    let go = Arc::new(Inside::default());
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
                    go.round_go.store(Instant::now() < w.end, Ordering::SeqCst);
                }
                sync.wait().await;
                if !go.round_go.load(Ordering::SeqCst) {
                    break;
                }
                let asked = Instant::now();
                let barrier = match DistributedDoubleBarrier::new(&fw, &format!("{base}/round-{round}"), n) {
                    Ok(b) => b,
                    Err(_) => break,
                };
                let entered = barrier.enter_timeout(Duration::from_secs(30)).await;
                let left = barrier.leave_timeout(Duration::from_secs(30)).await;
                if !matches!((entered, left), (Ok(true), Ok(true))) {
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

/// W waiters queue on one lock held by client 0; then the time until all have held and
/// released it once.
async fn drain(clients: &[Framework], base: &str, waiters: usize) -> Result<Report, Failure> {
    if waiters == 0 {
        return Err((2, "--waiters must be >= 1".into()));
    }
    let holder = InterProcessMutex::new(&clients[0], base).map_err(|e| (2, e.to_string()))?;
    let guard = holder.acquire().await.map_err(fail)?;
    let inside = Arc::new(AtomicUsize::new(0));
    let violations = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(waiters);
    for i in 0..waiters {
        let fw = clients[i % clients.len()].clone();
        let (base, inside, violations) = (base.to_string(), inside.clone(), violations.clone());
        tasks.push(tokio::spawn(async move {
            let m = InterProcessMutex::new(&fw, &base)?;
            let g = m.acquire().await?;
            if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                violations.fetch_add(1, Ordering::SeqCst);
            }
            inside.fetch_sub(1, Ordering::SeqCst);
            g.release().await
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while clients[0].children(base).await.map_err(fail)?.len() < waiters + 1 {
        if Instant::now() > deadline {
            return Err((1, "the waiters never queued".into()));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    guard.release().await.map_err(fail)?;
    let mut errors = 0;
    for t in tasks {
        if !matches!(t.await, Ok(Ok(()))) {
            errors += 1;
        }
    }
    let total_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(Report {
        latencies_ms: Vec::new(),
        violations: violations.load(Ordering::SeqCst),
        errors,
        extra: vec![("waiters", waiters as f64), ("total_ms", total_ms), ("per_handoff_ms", total_ms / waiters as f64)],
        ops_override: Some(waiters as u64),
    })
}

/// One process, one session, W waiters on one lock: the resident memory.
async fn waiters_memory(fw: &Framework, base: &str, waiters: usize) -> Result<Report, Failure> {
    let holder = InterProcessMutex::new(fw, base).map_err(|e| (2, e.to_string()))?;
    let guard = holder.acquire().await.map_err(fail)?;
    let before = rss_mb();
    let mut tasks = Vec::with_capacity(waiters);
    for _ in 0..waiters {
        let m = holder.clone();
        tasks.push(tokio::spawn(async move { m.acquire().await.map(drop) }));
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    while fw.children(base).await.map_err(fail)?.len() < waiters + 1 {
        if Instant::now() > deadline {
            return Err((1, "the waiters never queued".into()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
