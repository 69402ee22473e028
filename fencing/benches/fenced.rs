//! What fencing costs: increments per second made by contenders that each take one lock, make
//! one increment in PostgreSQL and release, in two modes, side by side on the same servers:
//!
//! - `fenced`: the increment goes through [`Fence::execute`] with the hold's token (`BEGIN`, the
//!   fence table's check-and-record upsert, the `UPDATE`, `COMMIT`);
//! - `plain`: the same `UPDATE` in a transaction of its own (`BEGIN`, `UPDATE`, `COMMIT`): as
//!   many commits, so what differs is the check.
//!
//! One ZooKeeper server (the testing kit's, with `forceSync=yes`: ZooKeeper's default, which the
//! kit turns off for tests) and one durable PostgreSQL (`fsync`, `synchronous_commit` on), both
//! with their data in the temp dir (`TMPDIR`, a disk for the headline: `bench/fencing.sh` checks).
//! Each contender has its own ZooKeeper session and its own PostgreSQL connection. The modes
//! alternate their order from one repeat to the next; the ratio fenced/plain is taken per repeat.
//! After each run the table's counter must equal the increments counted (else it panics).
//!
//! Environment: `BENCH_CLIENTS` (16), `BENCH_SECONDS` (10, per run), `BENCH_REPEATS` (3),
//! `BENCH_WARMUP_SECONDS` (2, per mode, untimed, before the first repeat; 0: none). Progress goes
//! to stderr, the markdown table to stdout. `bash bench/fencing.sh` runs it and writes
//! `bench/FENCING.md`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Barrier;
use zk_recipes::{Framework, InterProcessMutex};
use zk_recipes_fencing::tokio_postgres::{self, Client, NoTls};
use zk_recipes_fencing::{Fence, FencingToken};
use zk_recipes_testing::{TestingPostgres, TestingServer};

/// The one-row table the contenders increment.
const TABLE: &str = "fenced_bench";
const INCREMENT: &str = "UPDATE fenced_bench SET n = n + 1";
/// The fence table's resource key of the counter.
const RESOURCE: &str = "fenced_bench";
/// How long a run may take beyond its seconds (sessions, connections, the last hand-offs)
/// before the benchmark gives up.
const RUN_SLACK: Duration = Duration::from_secs(60);
/// How long a contender's session may take to close at the end of a run.
const SHUTDOWN: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Fenced,
    Plain,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Fenced => "fenced",
            Mode::Plain => "plain",
        }
    }
}

/// What the environment asks for.
#[derive(Debug, Clone, Copy)]
struct Plan {
    clients: usize,
    seconds: u64,
    repeats: usize,
    warmup_seconds: u64,
}

impl Plan {
    fn from_env() -> Plan {
        let plan = Plan {
            clients: env_number("BENCH_CLIENTS", 16) as usize,
            seconds: env_number("BENCH_SECONDS", 10),
            repeats: env_number("BENCH_REPEATS", 3) as usize,
            warmup_seconds: env_number("BENCH_WARMUP_SECONDS", 2),
        };
        assert!(
            plan.clients >= 1 && plan.seconds >= 1 && plan.repeats >= 1,
            "BENCH_CLIENTS, BENCH_SECONDS and BENCH_REPEATS must be at least 1: {plan:?}"
        );
        plan
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => {
            value.trim().parse().unwrap_or_else(|_| panic!("{name}={value:?} is not a whole number"))
        }
        _ => default,
    }
}

/// One timed run of one mode.
#[derive(Debug, Clone, Copy)]
struct Run {
    increments: u64,
    elapsed: Duration,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.increments as f64 / self.elapsed.as_secs_f64()
    }
}

fn main() {
    let plan = Plan::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    // Both servers are killed when their handles drop: at the end, and on a panic (unwinding)
    // too; the kit also gives them a parent-death signal.
    let zk = runtime
        .block_on(
            TestingServer::builder()
                // production-like: ZooKeeper's default tick and fsync of the log before each commit
                .tick_time(Duration::from_secs(2))
                .config("forceSync", "yes")
                .start(),
        )
        .expect("ZooKeeper server");
    assert_fsync_on(&zk);
    let pg = runtime.block_on(TestingPostgres::builder().durable(true).start()).expect("PostgreSQL server");
    eprintln!(
        "fenced bench: ZooKeeper {} (data {}), PostgreSQL {} (dir {}); {plan:?}",
        zk.connect_string(),
        zk.data_dir().display(),
        pg.port(),
        pg.dir().display()
    );
    let bench = Bench { zk: zk.connect_string().to_string(), pg: pg.connection_string(), plan };
    let table = runtime.block_on(async {
        let versions = bench.versions().await;
        format!("{versions}\n\n{}", bench.all().await)
    });
    print!("{table}");
    drop(runtime);
    drop(pg);
    drop(zk);
}

/// Refuses to measure a ZooKeeper server that does not sync its log: the kit writes
/// `forceSync=no` and then the builder's lines, and the last line of a key wins.
fn assert_fsync_on(zk: &TestingServer) {
    let cfg = zk.data_dir().parent().expect("the server's directory").join("conf").join("zoo.cfg");
    let text = std::fs::read_to_string(&cfg)
        .unwrap_or_else(|e| panic!("{}: {e} (the bench runs the kit's local backend)", cfg.display()));
    let force_sync = text.lines().filter_map(|line| line.strip_prefix("forceSync=")).next_back();
    assert_eq!(force_sync, Some("yes"), "ZooKeeper must run with forceSync=yes:\n{text}");
}

struct Bench {
    zk: String,
    pg: String,
    plan: Plan,
}

impl Bench {
    /// The servers' versions, as they report them.
    async fn versions(&self) -> String {
        let srvr = zk_recipes_testing::four_letter_word(&self.zk, "srvr").await.expect("ZooKeeper's srvr");
        let zookeeper = srvr
            .lines()
            .find_map(|line| line.strip_prefix("Zookeeper version: "))
            .map_or("unknown", |v| v.split([',', '-']).next().unwrap_or(v).trim())
            .to_string();
        let db = connect(&self.pg).await;
        let postgres: String = db.query_one("SHOW server_version", &[]).await.expect("server_version").get(0);
        let fsync: String = db.query_one("SHOW fsync", &[]).await.expect("fsync").get(0);
        let commit: String = db.query_one("SHOW synchronous_commit", &[]).await.expect("synchronous_commit").get(0);
        assert_eq!((fsync.as_str(), commit.as_str()), ("on", "on"), "PostgreSQL must flush its commits");
        format!("Servers: ZooKeeper {zookeeper} (forceSync=yes), PostgreSQL {postgres} (fsync={fsync}, synchronous_commit={commit}).")
    }

    /// The warm-up, the repeats, and the markdown table of their figures.
    async fn all(&self) -> String {
        let db = connect(&self.pg).await;
        let fence = Fence::migrate(&db).await.expect("the fence table");
        db.batch_execute(&format!("CREATE TABLE {TABLE} (n bigint NOT NULL); INSERT INTO {TABLE} VALUES (0);"))
            .await
            .expect("the counter table");

        if self.plan.warmup_seconds > 0 {
            for mode in [Mode::Fenced, Mode::Plain] {
                let run = self.run(&db, &fence, mode, "warmup", self.plan.warmup_seconds).await;
                eprintln!("warm-up {:6}: {:8.1} increments/s", mode.name(), run.per_second());
            }
        }
        let (mut fenced, mut plain) = (Vec::new(), Vec::new());
        for repeat in 1..=self.plan.repeats {
            let order = match repeat % 2 {
                1 => [Mode::Fenced, Mode::Plain],
                _ => [Mode::Plain, Mode::Fenced],
            };
            for mode in order {
                let run = self.run(&db, &fence, mode, &format!("r{repeat}"), self.plan.seconds).await;
                eprintln!(
                    "repeat {repeat} {:6}: {} increments in {:.2} s = {:8.1} increments/s",
                    mode.name(),
                    run.increments,
                    run.elapsed.as_secs_f64(),
                    run.per_second()
                );
                match mode {
                    Mode::Fenced => fenced.push(run.per_second()),
                    Mode::Plain => plain.push(run.per_second()),
                }
            }
        }
        report(&self.plan, &fenced, &plain)
    }

    /// One run of `mode` for `seconds`, on a lock path of its own; panics when it takes longer
    /// than [`RUN_SLACK`] beyond that, or when the counter disagrees with the increments counted.
    async fn run(&self, db: &Client, fence: &Fence, mode: Mode, label: &str, seconds: u64) -> Run {
        let limit = Duration::from_secs(seconds) + RUN_SLACK;
        tokio::time::timeout(limit, self.run_unbounded(db, fence, mode, label, seconds))
            .await
            .unwrap_or_else(|_| panic!("the {} run {label} took longer than {limit:?}", mode.name()))
    }

    async fn run_unbounded(&self, db: &Client, fence: &Fence, mode: Mode, label: &str, seconds: u64) -> Run {
        // the same start for every run: the counter at zero, both tables vacuumed
        db.execute(&format!("UPDATE {TABLE} SET n = 0"), &[]).await.expect("reset the counter");
        for table in [TABLE, zk_recipes_fencing::FENCE_TABLE] {
            db.batch_execute(&format!("VACUUM {table}")).await.expect("vacuum");
        }
        let lock = format!("/fenced-bench/{}-{label}", mode.name());
        let stop = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(Barrier::new(self.plan.clients + 1));
        let mut contenders = Vec::new();
        for _ in 0..self.plan.clients {
            let contender = Contender {
                zk: self.zk.clone(),
                pg: self.pg.clone(),
                lock: lock.clone(),
                fence: fence.clone(),
                mode,
                stop: stop.clone(),
                ready: ready.clone(),
            };
            contenders.push(tokio::spawn(contender.run()));
        }
        // every contender has its session, its connection and its mutex: go
        ready.wait().await;
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        stop.store(true, Ordering::SeqCst);
        let mut increments = 0;
        for contender in contenders {
            increments += contender.await.expect("a contender failed");
        }
        // the contenders in line when told to stop made their increment too: they count, and
        // so does the time they took
        let elapsed = start.elapsed();
        let n: i64 = db.query_one(&format!("SELECT n FROM {TABLE}"), &[]).await.expect("read the counter").get(0);
        assert_eq!(
            n,
            increments as i64,
            "the {} run {label}: the counter is {n}, the contenders counted {increments} increments",
            mode.name()
        );
        Run { increments, elapsed }
    }
}

/// One contender of a run: its own session and connection, acquire, increment, release, until
/// told to stop.
struct Contender {
    zk: String,
    pg: String,
    lock: String,
    fence: Fence,
    mode: Mode,
    stop: Arc<AtomicBool>,
    ready: Arc<Barrier>,
}

impl Contender {
    /// The number of increments it made.
    async fn run(self) -> u64 {
        let fw = Framework::builder().connect_string(&self.zk).connect().await.expect("a ZooKeeper session");
        let mut db = connect(&self.pg).await;
        let mutex = InterProcessMutex::new(&fw, &self.lock).expect("the mutex");
        self.ready.wait().await;
        let mut increments = 0;
        while !self.stop.load(Ordering::SeqCst) {
            let guard = mutex.acquire().await.expect("acquire");
            let changed = match self.mode {
                Mode::Fenced => self
                    .fence
                    .execute(&mut db, &FencingToken::of(&guard), RESOURCE, INCREMENT, &[])
                    .await
                    .expect("the fenced increment"),
                Mode::Plain => {
                    let tx = db.transaction().await.expect("BEGIN");
                    let changed = tx.execute(INCREMENT, &[]).await.expect("the increment");
                    tx.commit().await.expect("COMMIT");
                    changed
                }
            };
            assert_eq!(changed, 1, "the increment changed {changed} rows");
            increments += 1;
            guard.release().await.expect("release");
        }
        if let Err(e) = fw.shutdown(SHUTDOWN).await {
            eprintln!("a contender's session did not close cleanly: {e}");
        }
        increments
    }
}

async fn connect(cs: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(cs, NoTls).await.expect("connect to PostgreSQL");
    tokio::spawn(connection);
    client
}

fn median(xs: &[f64]) -> f64 {
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    match xs.len() % 2 {
        1 => xs[mid],
        _ => (xs[mid - 1] + xs[mid]) / 2.0,
    }
}

fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

/// The markdown table: per mode the median increments/s and its min–max over the repeats, and
/// the ratio fenced/plain (the median of the per-repeat ratios, with their min–max).
fn report(plan: &Plan, fenced: &[f64], plain: &[f64]) -> String {
    let ratios: Vec<f64> = fenced.iter().zip(plain).map(|(f, p)| f / p).collect();
    let mut out = format!(
        "{} contenders (each its own ZooKeeper session and PostgreSQL connection), one lock, one \
         counter row; each increment: acquire, one transaction, release. {} repeats of {} s per \
         mode, the order alternating.\n\n",
        plan.clients, plan.repeats, plan.seconds
    );
    out += "| mode | increments/s (median) | min–max |\n|---|---:|---:|\n";
    for (name, xs) in [
        ("fenced: `Fence::execute` (BEGIN; check-and-record; UPDATE; COMMIT)", fenced),
        ("plain: the same UPDATE under the lock (BEGIN; UPDATE; COMMIT)", plain),
    ] {
        let (lo, hi) = min_max(xs);
        out += &format!("| {name} | {:.1} | {lo:.1}–{hi:.1} |\n", median(xs));
    }
    let (lo, hi) = min_max(&ratios);
    out += &format!("| **fenced / plain** (per repeat) | **{:.3}** | {lo:.3}–{hi:.3} |\n", median(&ratios));
    let each: Vec<String> =
        (0..ratios.len()).map(|i| format!("{:.1} / {:.1} = {:.3}", fenced[i], plain[i], ratios[i])).collect();
    out += &format!("\nPer repeat (fenced / plain increments/s): {}.\n", each.join("; "));
    out
}
