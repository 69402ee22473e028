//! The benchmarked operations, one per recipe.

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::counter::VersionedValue;
use zk_recipes::zk::Client;
use zk_recipes::{
    DistributedAtomicLong, Framework, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, SharedCount,
};

use super::entity::{Entities, EntityTask};
use super::floor::{self, zk_client_lock, Raw};
use super::{fail, progress, window, BenchArgs, Failure, Report, Shared};

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
    RawSet,
    RawSeq,
    RawEntity,
    Drain,
    WaitersMemory,
    CacheLoad,
    CacheDelay,
    ShedLock,
    ZkClientMutex,
    Entity,
    ZkClientEntity,
    Holders,
}

impl Recipe {
    pub fn parse(recipe: &str, peer: &str) -> Result<Recipe, Failure> {
        let r = match (peer, recipe) {
            ("zookeeper-client", "mutex") => Recipe::ZkClientMutex,
            ("zookeeper-client", "entity") => Recipe::ZkClientEntity,
            ("zookeeper-client", "raw") => Recipe::Raw,
            ("zookeeper-client", "raw_set") => Recipe::RawSet,
            ("zookeeper-client", other) => {
                return Err((
                    2,
                    format!(
                        "peer zookeeper-client supports only the mutex, entity, raw and raw_set recipes, not {other:?}"
                    ),
                ))
            }
            ("zk-recipes", "mutex") => Recipe::Mutex,
            ("zk-recipes", "rwlock") => Recipe::RwLock,
            ("zk-recipes", "semaphore") => Recipe::Semaphore,
            ("zk-recipes", "semaphore_mutex") => Recipe::SemaphoreMutex,
            ("zk-recipes", "counter") => Recipe::Counter,
            ("zk-recipes", "shared_count") => Recipe::SharedCount,
            ("zk-recipes", "double_barrier") => Recipe::DoubleBarrier,
            ("zk-recipes", "raw") => Recipe::Raw,
            ("zk-recipes", "raw_set") => Recipe::RawSet,
            ("zk-recipes", "raw_seq") => Recipe::RawSeq,
            ("zk-recipes", "raw_entity") => Recipe::RawEntity,
            ("zk-recipes", "drain") => Recipe::Drain,
            ("zk-recipes", "waiters_memory" | "waiters-memory") => Recipe::WaitersMemory,
            ("zk-recipes", "cache_load" | "cache-load") => Recipe::CacheLoad,
            ("zk-recipes", "cache_delay" | "cache-delay") => Recipe::CacheDelay,
            ("zk-recipes", "shedlock") => Recipe::ShedLock,
            ("zk-recipes", "entity") => Recipe::Entity,
            ("zk-recipes", "holders") => Recipe::Holders,
            ("zk-recipes", other) => return Err((2, format!("unknown recipe {other:?}"))),
            (other, _) => return Err((2, format!("unknown peer {other:?} (zk-recipes or zookeeper-client)"))),
        };
        Ok(r)
    }

    /// The recipes that run the timed loop (and so take `--tasks`).
    pub fn timed(self) -> bool {
        !matches!(
            self,
            Recipe::DoubleBarrier
                | Recipe::Drain
                | Recipe::WaitersMemory
                | Recipe::CacheLoad
                | Recipe::CacheDelay
                | Recipe::ShedLock
                | Recipe::Holders
        )
    }
}

/// Violation bookkeeping shared by the clients of a run.
#[derive(Default)]
struct Inside {
    exclusive: AtomicUsize,
    readers: AtomicUsize,
    successes: AtomicI64,
}

/// One client's state for the timed recipes.
enum Op {
    Mutex(InterProcessMutex),
    Read(InterProcessReadWriteLock, fastrand::Rng),
    Semaphore(InterProcessSemaphoreV2, usize),
    SemaphoreMutex(InterProcessSemaphoreMutex),
    /// The counter (shared by the tasks of one client) and the values this task's increments
    /// returned as their `post_value`, for the exactly-once check.
    Counter(Arc<DistributedAtomicLong>, Vec<i64>),
    /// The count and the last value known (written or returned with a refusal).
    SharedCount(SharedCount, VersionedValue<i32>),
    Raw(Raw),
    ZkClient(Client, String),
    Entity(EntityTask),
}

impl Op {
    /// Task `idx`'s state (`idx` = client × tasks + task) on its client's framework.
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
            Recipe::Counter => Op::Counter(Arc::new(DistributedAtomicLong::new(fw, base).map_err(bad)?), Vec::new()),
            Recipe::SharedCount => {
                let sc = SharedCount::new(fw, base, 0).map_err(bad)?;
                sc.start().await.map_err(fail)?;
                let known = sc.get().await.map_err(fail)?;
                Op::SharedCount(sc, known)
            }
            Recipe::Raw | Recipe::RawSet | Recipe::RawSeq | Recipe::RawEntity => {
                let kind = match recipe {
                    Recipe::Raw => floor::Kind::CreateDelete,
                    Recipe::RawSet => floor::Kind::Set,
                    Recipe::RawEntity => floor::Kind::Entity,
                    _ => floor::Kind::Seq,
                };
                let client = match args.peer.as_str() {
                    "zookeeper-client" => plain_client(fw.connect_string()).await?,
                    _ => fw.client().map_err(fail)?,
                };
                Op::Raw(Raw::new(kind, client, fw, base, idx).await?)
            }
            Recipe::ZkClientMutex => {
                floor::ensure_dir(fw, base).await?;
                Op::ZkClient(plain_client(fw.connect_string()).await?, base.to_string())
            }
            Recipe::Entity | Recipe::ZkClientEntity => {
                let entities = Entities::prepare(fw, base, args.paths, &args.skew).await?;
                let plain = match recipe {
                    Recipe::ZkClientEntity => Some(plain_client(fw.connect_string()).await?),
                    _ => None,
                };
                Op::Entity(entities.task(fw, plain, idx))
            }
            Recipe::DoubleBarrier
            | Recipe::Drain
            | Recipe::WaitersMemory
            | Recipe::CacheLoad
            | Recipe::CacheDelay
            | Recipe::ShedLock
            | Recipe::Holders => {
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
            Op::Counter(c, posts) => {
                let r = c.increment().await?;
                inside.successes.fetch_add(1, Ordering::SeqCst);
                posts.push(r.post_value);
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
            Op::Raw(raw) => {
                raw.once().await?;
                Ok(Instant::now())
            }
            Op::Entity(task) => task.once(shared).await,
            Op::ZkClient(client, dir) => {
                let lock = zk_client_lock(client, dir).await?;
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

pub(crate) async fn timed(
    recipe: Recipe,
    clients: &[Framework],
    base: &str,
    args: &BenchArgs,
) -> Result<Report, Failure> {
    let per = args.tasks;
    let mut ops = Vec::with_capacity(clients.len().saturating_mul(per).min(1 << 16));
    for (idx, fw) in clients.iter().enumerate() {
        let first = Op::new(recipe, fw, base, idx * per, args).await?;
        for task in 1..per {
            ops.push(match &first {
                // the tasks of one client share one counter handle (one framework, one path)
                Op::Counter(c, _) => Op::Counter(c.clone(), Vec::new()),
                // ... and the entities (with their session, for zookeeper-client's)
                Op::Entity(t) => Op::Entity(t.fork(idx * per + task)),
                _ => Op::new(recipe, fw, base, idx * per + task, args).await?,
            });
        }
        ops.push(first);
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
            (latencies, op)
        }));
    }
    let mut report = Report::default();
    let mut posts = Vec::new();
    let mut entities = None;
    let mut per_worker = Vec::with_capacity(tasks.len());
    for t in tasks {
        let (latencies, op) = t.await.map_err(fail)?;
        per_worker.push(latencies.len());
        report.latencies_ms.extend(latencies);
        match op {
            Op::Counter(_, p) => posts.extend(p),
            Op::Raw(raw) => raw.finish().await,
            Op::Entity(task) => entities = Some(task.entities().clone()),
            _ => {}
        }
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
        let successes = inside.successes.load(Ordering::SeqCst);
        let bad = exactly_once(value, successes, posts, recipe == Recipe::Counter);
        shared.violations.fetch_add(bad, Ordering::SeqCst);
    }
    if let Some(entities) = entities {
        let bad = entities.verify_and_clean(&clients[0]).await?;
        shared.violations.fetch_add(bad, Ordering::SeqCst);
        report.extra.push(("paths", args.paths as f64));
    }
    report.violations = shared.violations.load(Ordering::SeqCst);
    report.errors = shared.errors.load(Ordering::SeqCst);
    if per > 1 {
        report.extra.push(("tasks", per as f64));
    }
    report.add_worker_spread(&per_worker);
    Ok(report)
}

/// The exactly-once check of a counter that started at 0: its final `value` equals the
/// `successes` (no increment lost, none counted twice), and (with `posts`, the `post_value`
/// every successful increment returned) no two increments were handed the same value. Prints
/// what it finds on stderr; returns the violations.
fn exactly_once(value: i64, successes: i64, mut posts: Vec<i64>, check_posts: bool) -> u64 {
    let mut bad = 0;
    if value != successes {
        eprintln!("counter {value} != {successes} successful increments");
        bad += 1;
    }
    if check_posts {
        posts.sort_unstable();
        let doubles = posts.windows(2).filter(|w| w[0] == w[1]).count();
        if doubles > 0 {
            eprintln!("{doubles} increment(s) returned a post_value another increment returned too");
            bad += 1;
        }
        if posts.first().is_some_and(|&p| p < 1) || posts.last().is_some_and(|&p| p > value) {
            eprintln!("post_values outside 1..={value}: {:?}..{:?}", posts.first(), posts.last());
            bad += 1;
        }
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::exactly_once;

    #[test]
    fn a_lost_or_doubled_increment_is_a_violation() {
        assert_eq!(exactly_once(3, 3, vec![2, 1, 3], true), 0);
        assert_eq!(exactly_once(3, 3, vec![], false), 0);
        // lost: the counter moved less than the successes
        assert_eq!(exactly_once(2, 3, vec![1, 2, 2], true), 2);
        // two callers handed the same value, though the total adds up
        assert_eq!(exactly_once(3, 3, vec![1, 3, 3], true), 1);
        // a value the counter never reached
        assert_eq!(exactly_once(3, 3, vec![1, 2, 4], true), 1);
        assert_eq!(exactly_once(4, 3, vec![], false), 1);
    }
}
