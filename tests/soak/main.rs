//! The soak: a week of uptime in a few minutes (CI) or an hour (`scripts/soak.sh`), in one
//! process against a server of its own, looking for leaks.
//!
//! A seeded mix runs on four frameworks connected through a [`TcpProxy`]: lock
//! acquire/release cycles over 1,000 paths, leader elections (two latches on each of four
//! paths, the leader closes, the other takes over), a tree cache that hears a writer's creates,
//! changes and deletes, and, paced evenly over the run, session expiries (the kit's
//! `expire_session`) and connection cuts (the proxy closes every connection). Every few seconds
//! it samples the process's RSS, open file descriptors and live tokio tasks (the library's
//! runtime only: the server's and the proxy's tasks run on a runtime of their own) and the
//! server's watch, node and ephemeral counts (`mntr`; the server is the soak's own).
//!
//! It passes when each sampled quantity is flat after the warm-up (see [`sample::flatness`]:
//! RSS: the second half's peak at most the first half's + 5 % + 2 MiB; the counts: the second
//! half's median at most the first half's + 10 % + 2), and, once the load
//! stopped and the recipes closed, the tasks, file descriptors and server watches are back to
//! their baseline (taken with the frameworks connected, before any recipe), no ephemeral node
//! is left on the server and no node below the recipes' parents is left under the test root.
//!
//! Knobs (environment): `SOAK_SECS` (the time bound of the load, default 240),
//! `SOAK_LOCK_CYCLES`, `SOAK_ELECTIONS`, `SOAK_CACHE_EVENTS`, `SOAK_EXPIRIES`, `SOAK_CUTS`
//! (targets: a stream stops at its target, the load at the last target or the time bound;
//! default: the full soak's counts scaled to `SOAK_SECS`), `SOAK_SEED`, `SOAK_CSV` (where the
//! samples go, default `soak.csv` in the target directory's `tmp/`). The figures are printed (`--nocapture`).

mod mix;
mod sample;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sample::Sample;
use zk_recipes::CreateMode;
use zk_recipes::Framework;
use zk_recipes_testing::{fixtures, TcpProxy, TestingServer};

/// The full soak's counts, per hour.
const HOUR_LOCK_CYCLES: u64 = 1_000_000;
const HOUR_ELECTIONS: u64 = 10_000;
const HOUR_CACHE_EVENTS: u64 = 100_000;
const HOUR_EXPIRIES: u64 = 1_000;
const HOUR_CUTS: u64 = 1_000;

/// What one run does.
#[derive(Debug, Clone)]
pub struct Plan {
    pub secs: u64,
    pub lock_cycles: u64,
    pub elections: u64,
    pub cache_events: u64,
    pub expiries: u64,
    pub cuts: u64,
    pub seed: u64,
    pub paths: usize,
    pub lock_workers: usize,
    pub csv: String,
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

impl Plan {
    fn from_env() -> Plan {
        let secs = env_u64("SOAK_SECS").unwrap_or(240);
        let scaled = |hour: u64| (hour * secs).div_ceil(3600).max(1);
        Plan {
            secs,
            lock_cycles: env_u64("SOAK_LOCK_CYCLES").unwrap_or(scaled(HOUR_LOCK_CYCLES)),
            elections: env_u64("SOAK_ELECTIONS").unwrap_or(scaled(HOUR_ELECTIONS)),
            cache_events: env_u64("SOAK_CACHE_EVENTS").unwrap_or(scaled(HOUR_CACHE_EVENTS)),
            expiries: env_u64("SOAK_EXPIRIES").unwrap_or(scaled(HOUR_EXPIRIES)),
            cuts: env_u64("SOAK_CUTS").unwrap_or(scaled(HOUR_CUTS)),
            seed: env_u64("SOAK_SEED").unwrap_or(35),
            paths: env_u64("SOAK_PATHS").unwrap_or(1000) as usize,
            lock_workers: env_u64("SOAK_LOCK_WORKERS").unwrap_or(16) as usize,
            csv: std::env::var("SOAK_CSV").unwrap_or_else(|_| {
                // the build's own scratch directory, wherever the target directory is
                format!("{}/soak.csv", env!("CARGO_TARGET_TMPDIR"))
            }),
        }
    }
}

/// What the streams have done so far.
#[derive(Debug, Default)]
pub struct Counts {
    pub locks: AtomicU64,
    pub lock_errors: AtomicU64,
    pub elections: AtomicU64,
    pub election_errors: AtomicU64,
    pub cache_events: AtomicU64,
    pub cache_writes: AtomicU64,
    pub expiries: AtomicU64,
    pub expiry_errors: AtomicU64,
    pub cuts: AtomicU64,
}

/// Everything the streams share.
pub struct Soak {
    pub plan: Plan,
    pub fws: Vec<Framework>,
    pub root: String,
    pub counts: Counts,
    pub stop: AtomicBool,
    pub deadline: Instant,
}

impl Soak {
    /// Whether the load is over (stopped, or past its time bound).
    pub fn over(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || Instant::now() >= self.deadline
    }

    fn done(&self) -> bool {
        let c = &self.counts;
        let p = &self.plan;
        c.locks.load(Ordering::Relaxed) >= p.lock_cycles
            && c.elections.load(Ordering::Relaxed) >= p.elections
            && c.cache_events.load(Ordering::Relaxed) >= p.cache_events
            && c.expiries.load(Ordering::Relaxed) >= p.expiries
            && c.cuts.load(Ordering::Relaxed) >= p.cuts
    }
}

/// The state the checks need from the library's runtime and the server.
async fn take_sample(soak: &Soak, cs: &str, started: Instant) -> Sample {
    let (watches, znodes, ephemerals) = sample::server_counts(cs).await;
    let c = &soak.counts;
    Sample {
        at: started.elapsed().as_secs_f64(),
        rss_kib: sample::rss_kib(),
        fds: sample::fds(),
        tasks: tokio::runtime::Handle::current().metrics().num_alive_tasks() as u64,
        watches,
        znodes,
        ephemerals,
        locks: c.locks.load(Ordering::Relaxed),
        elections: c.elections.load(Ordering::Relaxed),
        cache_events: c.cache_events.load(Ordering::Relaxed),
        expiries: c.expiries.load(Ordering::Relaxed),
        cuts: c.cuts.load(Ordering::Relaxed),
    }
}

/// Ignored in a plain `cargo test`: `scripts/test.sh` runs it at 240 s (`--ignored`),
/// `scripts/soak.sh` for an hour.
#[test]
#[ignore = "minutes long: scripts/test.sh and scripts/soak.sh run it"]
fn soak() {
    let plan = Plan::from_env();
    println!("soak plan: {plan:?}");
    // The server and the proxy on a runtime of their own: their tasks are not the library's.
    let kit = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("kit runtime");
    let server = kit.block_on(TestingServer::start()).expect("server");
    let cs = server.connect_string().to_string();
    let proxy = kit.block_on(async { TcpProxy::start(&cs).await }).expect("proxy");
    let proxy = Arc::new(proxy);
    let lib = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let failures = lib.block_on(run(plan, cs.clone(), proxy.clone()));
    drop(lib);
    drop(proxy);
    drop(kit);
    drop(server);
    assert!(failures.is_empty(), "the soak failed:\n{}", failures.join("\n"));
}

async fn run(plan: Plan, cs: String, proxy: Arc<TcpProxy>) -> Vec<String> {
    let mut fws = Vec::new();
    for _ in 0..4 {
        fws.push(fixtures::framework(proxy.connect_string()).await);
    }
    let root = fixtures::unique("/soak");
    fws[0].create(&root, b"", CreateMode::Persistent).await.expect("root");
    let started = Instant::now();
    let soak = Arc::new(Soak {
        deadline: started + Duration::from_secs(plan.secs),
        plan,
        fws,
        root,
        counts: Counts::default(),
        stop: AtomicBool::new(false),
    });
    let baseline = take_sample(&soak, &cs, started).await;
    println!("soak baseline: {}", baseline.csv());
    let every = Duration::from_secs((soak.plan.secs / 120).clamp(2, 30));
    let mut samples = vec![];
    let mut csv = vec![sample::CSV_HEADER.to_string()];
    let streams = mix::start(&soak, proxy);
    while !soak.over() && !soak.done() {
        tokio::time::sleep(every).await;
        let s = take_sample(&soak, &cs, started).await;
        println!("soak sample: {}", s.csv());
        csv.push(s.csv());
        samples.push(s);
    }
    let load_secs = started.elapsed().as_secs_f64();
    soak.stop.store(true, Ordering::SeqCst);
    let mut failures = Vec::new();
    if tokio::time::timeout(Duration::from_secs(120), futures_util::future::join_all(streams)).await.is_err() {
        failures.push("the streams did not stop within 120 s".to_string());
    }
    failures.extend(sample::flatness(&samples));
    // back to the baseline once the recipes are closed
    let settled = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let s = take_sample(&soak, &cs, started).await;
            let pending: usize = soak.fws.iter().map(|f| f.pending_background_deletes()).sum();
            if s.tasks <= baseline.tasks
                && s.fds <= baseline.fds
                && s.watches <= baseline.watches
                && s.ephemerals == 0
                && pending == 0
            {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
    .await;
    let end = take_sample(&soak, &cs, started).await;
    csv.push(end.csv());
    if settled.is_err() {
        failures.push(format!(
            "not back to the baseline 60 s after the load:\n  baseline {}\n  end      {}",
            baseline.csv(),
            end.csv()
        ));
    }
    let left = mix::left_under(&soak.fws[0], &soak.root).await;
    if !left.is_empty() {
        failures.push(format!("{} node(s) left under the test root: {:?}", left.len(), &left[..left.len().min(10)]));
    }
    for (i, fw) in soak.fws.iter().enumerate() {
        if let Err(e) = fw.shutdown(Duration::from_secs(10)).await {
            failures.push(format!("framework {i}: shutdown: {e}"));
        }
    }
    let parent = std::path::Path::new(&soak.plan.csv).parent().filter(|p| !p.as_os_str().is_empty());
    let written = parent.map_or(Ok(()), std::fs::create_dir_all);
    if let Err(e) = written.and_then(|()| std::fs::write(&soak.plan.csv, csv.join("\n") + "\n")) {
        failures.push(format!("writing {}: {e}", soak.plan.csv));
    }
    report(&soak, &samples, &baseline, &end, load_secs);
    failures
}

fn report(soak: &Soak, samples: &[Sample], baseline: &Sample, end: &Sample, load_secs: f64) {
    let c = &soak.counts;
    let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
    println!(
        "soak figures: load {load_secs:.0} s (bound {} s, seed {}); lock cycles {} ({} errors), elections {} ({} errors), \
         cache events {} ({} writes), session expiries {} ({} failed), connection cuts {}",
        soak.plan.secs,
        soak.plan.seed,
        n(&c.locks),
        n(&c.lock_errors),
        n(&c.elections),
        n(&c.election_errors),
        n(&c.cache_events),
        n(&c.cache_writes),
        n(&c.expiries),
        n(&c.expiry_errors),
        n(&c.cuts)
    );
    let columns: [sample::Column; 6] = [
        ("rss KiB", |s| s.rss_kib),
        ("fds", |s| s.fds),
        ("tasks", |s| s.tasks),
        ("watches", |s| s.watches),
        ("znodes", |s| s.znodes),
        ("ephemerals", |s| s.ephemerals),
    ];
    for (name, f) in columns {
        let (lo, hi) = sample::span(samples, f);
        println!("soak {name}: baseline {}, under load {lo}..{hi}, end {}", f(baseline), f(end));
    }
    println!("soak samples written to {}", soak.plan.csv);
}
