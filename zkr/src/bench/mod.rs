//! `zkr bench`: one benchmark run, one JSON line on stdout (everything else on stderr).
//!
//! Timeline: the N clients (each its own session, its own framework) connect first, untimed;
//! then all run the loop for the warm-up, then for the measured window; an operation counts
//! when it starts and finishes inside the window. Violations are checked while it runs.
//!
//! A connect string naming several servers spreads the clients over them: client `i` connects
//! to server `i mod k` alone (as every peer's driver does), so an ensemble's sessions sit on
//! all its servers and the writes of most go through a follower to the leader.

mod barrier;
mod cache;
mod entity;
mod floor;
mod holders;
mod recipes;
mod report;
mod shedlock;
mod stock;
mod waiters;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::Framework;

use recipes::Recipe;
pub use report::Report;

/// `zkr bench` options.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// mutex, rwlock, semaphore, semaphore_mutex, counter, shared_count, double_barrier, raw
    /// (create+delete pairs: the floor of the locks), raw_set (versioned setData of one node:
    /// the floor of the counters), raw_seq, raw_entity (the requests of an uncontended entity
    /// sale without a lock: the ceiling of entity), drain, waiters_memory, cache_load, cache_delay,
    /// shedlock (every client a replica deciding the ticks of one scheduled job; one operation
    /// = one tick decided), entity (a lock per entity: --tasks tasks on one session lock one of
    /// --paths entities, decrement its stock, release), holders (--holders distinct locks held
    /// at once, --tasks acquires in flight)
    #[arg(long)]
    pub recipe: String,
    /// Concurrent clients, each with its own session.
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Concurrent tasks per client, on its one session (timed loops only): the counter's tasks
    /// share one `DistributedAtomicLong` handle, other recipes give each task its own handle.
    #[arg(long, default_value_t = 1)]
    pub tasks: usize,
    /// Length of the measured window, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Warm-up before the window, in seconds (not counted).
    #[arg(long, default_value_t = 2.0)]
    pub warmup_seconds: f64,
    /// Paths are `<base>/<recipe>-<pid>`.
    #[arg(long, default_value = "/bench")]
    pub base: String,
    /// Maximum leases of the semaphore recipe.
    #[arg(long = "max-leases", alias = "leases", value_name = "N", default_value_t = 2)]
    pub leases: usize,
    /// Waiters queued by the drain and waiters_memory recipes.
    #[arg(long, default_value_t = 500)]
    pub waiters: usize,
    /// Nodes of the cache_load tree (`<base>/cache-tree-<nodes>`, built once and kept) and of
    /// the cache_delay tree.
    #[arg(long, default_value_t = 10_000)]
    pub nodes: usize,
    /// Writes per second of the cache_delay writer.
    #[arg(long, default_value_t = 1_000)]
    pub rate: usize,
    /// Entities of the entity recipe (each its own lock path and stock node).
    #[arg(long, default_value_t = 1_000)]
    pub paths: usize,
    /// How the entity recipe picks an entity: uniform, or zipf (exponent 1: a few hot ones).
    #[arg(long, default_value = "uniform")]
    pub skew: String,
    /// Locks the holders recipe holds at once.
    #[arg(long, default_value_t = 100_000)]
    pub holders: usize,
    /// The implementation measured: zk-recipes, or zookeeper-client (its own Client::lock as
    /// mutex and in entity; raw and raw_set on its plain session).
    #[arg(long, default_value = "zk-recipes")]
    pub peer: String,
}

/// The measured window, shared by every client.
#[derive(Clone, Copy)]
pub(crate) struct Window {
    pub start: Instant,
    pub end: Instant,
}

impl Window {
    pub fn counts(&self, asked: Instant, done: Instant) -> bool {
        asked >= self.start && done <= self.end
    }
}

/// What all clients of a run share.
#[derive(Default)]
pub(crate) struct Shared {
    pub violations: AtomicU64,
    pub errors: AtomicU64,
    pub stop: AtomicBool,
}

/// A benchmark failure: the exit code and the message for stderr.
pub type Failure = (i32, String);

/// Runs one benchmark and returns its JSON line.
///
/// # Errors
/// Exit code 2 for an unknown recipe or bad arguments, 69 when ZooKeeper cannot be reached.
pub async fn run(connect: &str, args: &BenchArgs) -> Result<String, Failure> {
    let recipe = Recipe::parse(&args.recipe, &args.peer)?;
    if args.clients == 0
        || args.tasks == 0
        || args.seconds.is_nan()
        || args.seconds <= 0.0
        || args.warmup_seconds.is_nan()
        || args.warmup_seconds < 0.0
    {
        return Err((2, "--clients and --tasks must be >= 1 and --seconds > 0".into()));
    }
    // a window a clock can hold (inf or 1e300 seconds would overflow it), and as many
    // sessions and tasks as a machine can run (usize::MAX would overflow their numbering)
    if args.seconds > MAX_SECONDS || args.warmup_seconds > MAX_SECONDS {
        return Err((2, format!("--seconds and --warmup-seconds must be at most {MAX_SECONDS}")));
    }
    if args.clients > MAX_CLIENTS || args.tasks > MAX_TASKS {
        return Err((2, format!("--clients must be at most {MAX_CLIENTS} and --tasks at most {MAX_TASKS}")));
    }
    if args.tasks > 1 && args.peer != "zk-recipes" && recipe != Recipe::ZkClientEntity {
        return Err((2, format!("--tasks is for zk-recipes; {} runs one task per session", args.peer)));
    }
    let mut clients = Vec::with_capacity(args.clients);
    for i in 0..args.clients {
        let fw = Framework::builder()
            .connect_string(server_for(connect, i))
            .session_timeout(Duration::from_secs(10))
            .connection_timeout(Duration::from_secs(10))
            .connect()
            .await
            .map_err(|e| (69, format!("cannot reach ZooKeeper at {connect}: {e}")))?;
        clients.push(fw);
    }
    let base = format!("{}/{}-{}", args.base.trim_end_matches('/'), args.recipe, std::process::id());
    let report = dispatch(recipe, &clients, &base, args).await;
    for fw in &clients {
        fw.close();
    }
    let report = report?;
    Ok(report.json(&args.peer, &args.recipe, args.clients, args.seconds))
}

/// Runs `recipe` on the connected clients.
async fn dispatch(recipe: Recipe, clients: &[Framework], base: &str, args: &BenchArgs) -> Result<Report, Failure> {
    match recipe {
        _ if args.tasks != 1 && !recipe.timed() && recipe != Recipe::Holders => {
            Err((2, format!("--tasks applies to the timed loops, not to {}", args.recipe)))
        }
        Recipe::Drain => waiters::drain(clients, base, args.waiters).await,
        Recipe::WaitersMemory => waiters::waiters_memory(&clients[0], base, args.waiters).await,
        Recipe::CacheLoad => cache::load(&clients[0], args).await,
        Recipe::CacheDelay => cache::delay(&clients[0], base, args).await,
        Recipe::DoubleBarrier => barrier::double_barrier(clients, base, args).await,
        Recipe::ShedLock => shedlock::ticks(clients, base, args).await,
        Recipe::Holders => holders::holders(&clients[0], base, args).await,
        Recipe::Entity | Recipe::ZkClientEntity if clients.len() != 1 => {
            Err((2, "the entity recipe runs on one session: --clients 1 (and --tasks T)".into()))
        }
        _ => recipes::timed(recipe, clients, base, args).await,
    }
}

/// The longest run (or warm-up) a bench takes: about 31 years.
const MAX_SECONDS: f64 = 1e9;
/// The most sessions a bench opens (a server takes 60 per client address by default).
const MAX_CLIENTS: usize = 100_000;
/// The most tasks per session.
const MAX_TASKS: usize = 1_000_000;

/// The measured window of a run starting now.
pub(crate) fn window(args: &BenchArgs) -> Window {
    let start = Instant::now() + Duration::from_secs_f64(args.warmup_seconds);
    Window { start, end: start + Duration::from_secs_f64(args.seconds) }
}

/// A run that could not be carried out (exit code 1).
pub(crate) fn fail<E: std::fmt::Display>(e: E) -> Failure {
    (1, e.to_string())
}

/// Client `i`'s server: host `i mod k` of a connect string naming k hosts (its chroot kept);
/// the string itself when it names one.
pub(crate) fn server_for(connect: &str, i: usize) -> String {
    let (hosts, chroot) = connect.split_at(connect.find('/').unwrap_or(connect.len()));
    let hosts: Vec<&str> = hosts.split(',').map(str::trim).filter(|h| !h.is_empty()).collect();
    if hosts.len() <= 1 {
        return connect.to_string();
    }
    format!("{}{chroot}", hosts[i % hosts.len()])
}

/// Shows the measured run's progress (a bar over the warm-up and the window, with the
/// operations counted) on stderr when it is a terminal and the run is long enough; nothing
/// otherwise.
pub(crate) fn progress(
    total: Duration,
    ops: Arc<AtomicU64>,
    shared: Arc<Shared>,
) -> Option<tokio::task::JoinHandle<()>> {
    if !crate::progress::enabled() || total < Duration::from_secs(3) {
        return None;
    }
    let bar = crate::progress::bar(total.as_millis() as u64, "ms");
    Some(tokio::spawn(async move {
        let started = Instant::now();
        while !shared.stop.load(Ordering::SeqCst) {
            bar.set_position((started.elapsed().as_millis() as u64).min(bar.length().unwrap_or(0)));
            bar.set_message(format!("{} ops", ops.load(Ordering::Relaxed)));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        bar.finish_and_clear();
    }))
}

/// This process's resident memory (VmRSS), in MB; 0 where it cannot be read.
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next().and_then(|kb| kb.parse::<f64>().ok()))
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::server_for;

    #[test]
    fn clients_spread_over_the_servers() {
        let cs = "127.0.0.1:1,127.0.0.1:2, 127.0.0.1:3";
        let got: Vec<String> = (0..4).map(|i| server_for(cs, i)).collect();
        assert_eq!(got, ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:1"]);
        assert_eq!(server_for("a:1,b:2/app", 1), "b:2/app");
        assert_eq!(server_for("a:1", 5), "a:1");
        assert_eq!(server_for("a:1/app", 5), "a:1/app");
    }
}
