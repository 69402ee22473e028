//! What the soak samples, and the flatness checks on the samples.

use std::fmt::Write as _;
use std::time::Duration;

/// One sample of the process and of the server.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// Seconds since the load started.
    pub at: f64,
    /// Resident set size, KiB (`/proc/self/statm`).
    pub rss_kib: u64,
    /// Open file descriptors (`/proc/self/fd`).
    pub fds: u64,
    /// Live tasks of the library's runtime (`RuntimeMetrics::num_alive_tasks`).
    pub tasks: u64,
    /// Watches the server holds (`mntr`'s `zk_watch_count`; the server is the soak's own).
    pub watches: u64,
    /// Nodes on the server (`zk_znode_count`).
    pub znodes: u64,
    /// Ephemeral nodes on the server (`zk_ephemerals_count`).
    pub ephemerals: u64,
    /// Lock cycles, elections, cache events, expiries, cuts done so far.
    pub locks: u64,
    /// Leader elections done so far.
    pub elections: u64,
    /// Cache events received so far.
    pub cache_events: u64,
    /// Session expiries done so far.
    pub expiries: u64,
    /// Connection cuts done so far.
    pub cuts: u64,
}

/// The CSV header of [`Sample::csv`].
pub const CSV_HEADER: &str =
    "seconds,rss_kib,fds,tasks,watches,znodes,ephemerals,lock_cycles,elections,cache_events,expiries,cuts";

impl Sample {
    /// One CSV line.
    pub fn csv(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "{:.1},{},{},{},{},{},{},{},{},{},{},{}",
            self.at,
            self.rss_kib,
            self.fds,
            self.tasks,
            self.watches,
            self.znodes,
            self.ephemerals,
            self.locks,
            self.elections,
            self.cache_events,
            self.expiries,
            self.cuts
        );
        s
    }
}

/// The process's resident set size, KiB.
pub fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    pages * page / 1024
}

/// The process's open file descriptors.
pub fn fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count() as u64).unwrap_or(0)
}

/// The server's watch, node and ephemeral counts (`mntr`).
pub async fn server_counts(cs: &str) -> (u64, u64, u64) {
    let out = zk_recipes_testing::four_letter_word_with_timeout(cs, "mntr", Duration::from_secs(10))
        .await
        .unwrap_or_default();
    let field = |name: &str| {
        out.lines().find_map(|l| l.strip_prefix(name).map(|v| v.trim().parse().unwrap_or(0))).unwrap_or(u64::MAX)
    };
    (field("zk_watch_count"), field("zk_znode_count"), field("zk_ephemerals_count"))
}

/// The growth allowed for RSS over the second half of the run: 5 %, plus 2 MiB for the
/// allocator's rounding on a short run.
pub const RSS_GROWTH: f64 = 0.05;
/// The slack added to [`RSS_GROWTH`], KiB.
pub const RSS_SLACK_KIB: u64 = 2048;

/// The flatness checks over the samples taken under load, after the warm-up (the first
/// fifth), split in two halves. RSS: the second half's peak is at most the first half's plus
/// [`RSS_GROWTH`] plus [`RSS_SLACK_KIB`]. The counts (fds, tasks, watches, nodes, ephemeral
/// nodes), which swing with the work in flight at the instant of a sample: the second half's
/// median is at most the first half's plus a tenth plus 2 (a leak of one task or node per expiry or
/// cut raises it by dozens). Returns one line per failed check.
pub fn flatness(samples: &[Sample]) -> Vec<String> {
    let warm = samples.len() / 5;
    let load = &samples[warm..];
    if load.len() < 4 {
        return vec![format!("only {} samples after the warm-up", load.len())];
    }
    let (first, second) = load.split_at(load.len() / 2);
    let peak = |s: &[Sample], f: fn(&Sample) -> u64| s.iter().map(f).max().unwrap_or(0);
    let median = |s: &[Sample], f: fn(&Sample) -> u64| {
        let mut v: Vec<u64> = s.iter().map(f).collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let mut failed = Vec::new();
    let rss = (peak(first, |s| s.rss_kib), peak(second, |s| s.rss_kib));
    if rss.1 as f64 > rss.0 as f64 * (1.0 + RSS_GROWTH) + RSS_SLACK_KIB as f64 {
        failed.push(format!("RSS grew from a peak of {} KiB to {} KiB in the second half", rss.0, rss.1));
    }
    for (name, f) in COUNTS {
        let (a, b) = (median(first, f), median(second, f));
        if b > a + a / 10 + 2 {
            failed.push(format!("{name}: the median grew from {a} to {b} in the second half"));
        }
    }
    failed
}

/// A sampled quantity: its name, and how to read it.
pub type Column = (&'static str, fn(&Sample) -> u64);

/// The sampled counts, by name.
pub const COUNTS: [Column; 5] = [
    ("fds", |s| s.fds),
    ("tasks", |s| s.tasks),
    ("watches", |s| s.watches),
    ("znodes", |s| s.znodes),
    ("ephemerals", |s| s.ephemerals),
];

/// Min, max and the last value of a column, for the printed figures.
pub fn span(samples: &[Sample], f: fn(&Sample) -> u64) -> (u64, u64) {
    (samples.iter().map(f).min().unwrap_or(0), samples.iter().map(f).max().unwrap_or(0))
}
