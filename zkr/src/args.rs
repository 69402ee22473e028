//! The command line (clap derive). Names, defaults and value sets here are the interface
//! documented in README.md (`## zkr`); change them only together.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::duration;

fn parse_duration(text: &str) -> Result<Duration, String> {
    duration::parse(text)
}

/// ZooKeeper recipes from the shell: locks, semaphores, leader election, barriers, counters.
#[derive(Debug, Parser)]
#[command(name = "zkr", version, max_term_width = 100)]
#[command(after_help = "Exit codes: the command's own code when it ran while the lock/lease/leadership was \
held throughout; 2 usage; 69 ZooKeeper unreachable, TLS handshake failed or authentication refused; 75 timed out waiting; 76 lock, lease or leadership lost.")]
#[command(after_long_help = include_str!("../help/zkr.txt"))]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand accepts, before or after the subcommand's name.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// ZooKeeper ensemble, `host:port[,host:port...]`
    #[arg(
        long,
        global = true,
        value_name = "HOSTS",
        hide_env_values = true,
        env = "ZK_CONNECT",
        default_value = "127.0.0.1:2181"
    )]
    pub connect: String,
    /// Requested session timeout (the server bounds it)
    #[arg(long, global = true, value_name = "DUR", default_value = "60s", value_parser = parse_duration)]
    pub session_timeout: Duration,
    /// How long to wait for a connection before giving up with exit code 69
    #[arg(long, global = true, value_name = "DUR", default_value = "15s", value_parser = parse_duration)]
    pub connection_timeout: Duration,
    /// Every path is relative to /NS (created on demand)
    #[arg(long, global = true, value_name = "NS")]
    pub namespace: Option<String>,
    /// Machine-readable output: one JSON object per line
    #[arg(long, global = true)]
    pub json: bool,
    /// Gzip node data as Curator's `.compressed()` and `enableCompression()` do: every write of
    /// a command compresses, every read decompresses (watch, inspect: data that is not gzip is
    /// shown as stored)
    #[arg(long, global = true)]
    pub compressed: bool,
    /// Log more to stderr: -v info, -vv debug, -vvv trace (default: warnings; RUST_LOG
    /// directives, e.g. `zk_recipes=debug`, apply as well)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(flatten)]
    pub security: Security,
}

/// TLS and SASL to the ensemble (README.md, "Security").
#[derive(Debug, Args)]
pub struct Security {
    /// Trust the CA certificates in FILE (PEM); every server of --connect is then TLS
    #[arg(long, global = true, value_name = "FILE", hide_env_values = true, env = "ZK_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS, with --tls-key
    #[arg(long, global = true, value_name = "FILE", hide_env_values = true, env = "ZK_TLS_CERT", requires_all = ["tls_ca", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM)
    #[arg(long, global = true, value_name = "FILE", hide_env_values = true, env = "ZK_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Accept a server certificate that does not name the host connected to (still signed by the CA)
    #[arg(long, global = true, requires = "tls_ca")]
    pub tls_no_verify_hostname: bool,
    /// Log in with SASL DIGEST-MD5 as USER, with --sasl-password-file
    #[arg(
        long,
        global = true,
        value_name = "USER",
        hide_env_values = true,
        env = "ZK_SASL_USER",
        requires = "sasl_password_file"
    )]
    pub sasl_user: Option<String>,
    /// The SASL password: the first line of FILE
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        hide_env_values = true,
        env = "ZK_SASL_PASSWORD_FILE",
        requires = "sasl_user"
    )]
    pub sasl_password_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Hold a lock (several PATHs: all of them, as one multi-lock) while CMD runs, or until a signal
    #[command(long_about = concat!(include_str!("../help/lock.txt"), include_str!("../help/hold.txt")))]
    Lock(LockArgs),
    /// Hold leases of a counting semaphore while CMD runs, or until a signal
    #[command(long_about = concat!(include_str!("../help/semaphore.txt"), include_str!("../help/hold.txt")))]
    Semaphore(SemaphoreArgs),
    /// Take part in a leader election (run CMD while leader), or --observe who leads
    #[command(long_about = concat!(include_str!("../help/elect.txt"), include_str!("../help/hold.txt")))]
    Elect(ElectArgs),
    /// Set, remove or wait on a barrier
    #[command(long_about = include_str!("../help/barrier.txt"))]
    Barrier(BarrierArgs),
    /// Enter a double barrier with N members, run CMD, leave together
    #[command(long_about = include_str!("../help/double-barrier.txt"))]
    DoubleBarrier(DoubleBarrierArgs),
    /// Set, count down, wait on or read a count-down latch
    #[command(long_about = include_str!("../help/latch.txt"))]
    Latch(LatchArgs),
    /// Read or change a distributed atomic counter (Curator's DistributedAtomicLong/Integer)
    #[command(long_about = include_str!("../help/atomic.txt"))]
    Atomic(AtomicArgs),
    /// Read, set or watch a shared count (Curator's SharedCount)
    #[command(long_about = include_str!("../help/shared-count.txt"))]
    SharedCount(SharedCountArgs),
    /// Show which recipe lives at PATH, who holds and who waits
    #[command(long_about = include_str!("../help/inspect.txt"))]
    Inspect(InspectArgs),
    /// Delete a node; with -r, the node and everything under it
    #[command(long_about = include_str!("../help/rm.txt"))]
    Rm(RmArgs),
    /// Print what happens under PATH (a cache's events) until SIGINT/SIGTERM
    #[command(long_about = include_str!("../help/watch.txt"))]
    Watch(WatchArgs),
    /// Benchmark a recipe: one JSON line on stdout (see bench/README.md)
    #[command(long_about = include_str!("../help/bench.txt"))]
    Bench(crate::bench::BenchArgs),
    /// Join a group (Curator's GroupMember) while CMD runs, or list its members
    #[command(long_about = include_str!("../help/group.txt"))]
    Group(crate::registry_args::GroupArgs),
    /// Register a service instance (curator-x-discovery) while CMD runs, or list instances
    #[command(long_about = include_str!("../help/discover.txt"))]
    Discover(crate::registry_args::DiscoverArgs),
    /// Put an item into a queue, take one, or count them (Curator's queues)
    #[command(long_about = include_str!("../help/queue.txt"))]
    Queue(QueueArgs),
    /// Run CMD on one host only (a crontab's job once per tick; ShedLock-compatible lock)
    #[command(long_about = include_str!("../help/once.txt"))]
    Once(OnceArgs),
    /// Print a shell completion script for SHELL to stdout
    #[command(long_about = include_str!("../help/completions.txt"))]
    Completions(CompletionsArgs),
    /// Print zkr's man page (roff) to stdout, or write one page per subcommand into --dir
    #[command(long_about = include_str!("../help/man.txt"))]
    Man(ManArgs),
}

/// `zkr completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell (bash: `source <(zkr completions bash)`, or save it as
    /// /usr/share/bash-completion/completions/zkr)
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `zkr man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write zkr.1 and a zkr-SUBCOMMAND.1 per subcommand into DIR instead
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// What to do with CMD when the lock, lease or leadership is lost while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnLost {
    /// SIGTERM to CMD (SIGKILL after --kill-after), then exit 76
    Term,
    /// SIGKILL to CMD, then exit 76
    Kill,
    /// Let CMD finish, then exit 76
    Ignore,
}

/// How the holding subcommands run CMD.
#[derive(Debug, Clone, Args)]
pub struct Supervision {
    /// What to do with CMD when the hold is lost
    #[arg(long, value_enum, value_name = "ACTION", default_value = "term")]
    pub on_lost: OnLost,
    /// After --on-lost term, SIGKILL a CMD that is still running this long after the SIGTERM
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration)]
    pub kill_after: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LockKind {
    /// InterProcessMutex
    Mutex,
    /// The read side of InterProcessReadWriteLock
    Read,
    /// The write side of InterProcessReadWriteLock
    Write,
    /// InterProcessSemaphoreMutex
    SemaphoreMutex,
}

/// What the holding subcommands `lock` and `semaphore` share: how long to wait, the node data,
/// and CMD with its supervision.
#[derive(Debug, Args)]
pub struct HoldArgs {
    /// Give up waiting after DUR, connecting included (exit 75), whatever the server does
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// The data of our nodes (each subcommand's help says which)
    #[arg(long, value_name = "TEXT")]
    pub data: Option<String>,
    #[command(flatten)]
    pub supervision: Supervision,
    /// The command to run while holding (after `--`)
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[derive(Debug, Args)]
#[command(mut_arg("data", |a| a.help("The lock node's data")))]
pub struct LockArgs {
    /// The lock's path; several: one multi-lock of all of them (same kind each)
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<String>,
    /// Which lock
    #[arg(long, value_enum, default_value = "mutex")]
    pub kind: LockKind,
    /// End the hold at DUR unless renewed: CMD then gets the --on-lost treatment, exit 76
    /// (one PATH)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub lease: Option<Duration>,
    /// Renew the lease (for another --lease) whenever CMD writes a line to stdout; the line is
    /// passed through
    #[arg(long, requires = "lease")]
    pub renew_on_output: bool,
    #[command(flatten)]
    pub hold: HoldArgs,
}

#[derive(Debug, Args)]
#[command(mut_arg("data", |a| a.help("The lease nodes' data")))]
pub struct SemaphoreArgs {
    /// The semaphore's path
    pub path: String,
    /// The semaphore's maximum number of leases (all its users must agree)
    #[arg(long = "max-leases", alias = "leases", value_name = "N")]
    pub leases: usize,
    /// How many leases to take
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub count: usize,
    #[command(flatten)]
    pub hold: HoldArgs,
}

#[derive(Debug, Args)]
pub struct ElectArgs {
    /// The election's path
    pub path: String,
    /// Our participant id (the latch node's data) [default: HOSTNAME-PID]
    #[arg(long, value_name = "TEXT", conflicts_with = "observe")]
    pub id: Option<String>,
    /// Give up waiting for leadership after DUR (exit 75)
    #[arg(long, value_name = "DUR", value_parser = parse_duration, conflicts_with = "observe")]
    pub timeout: Option<Duration>,
    /// Do not take part: print the current leader's id (empty line when none), then one line per change
    #[arg(long)]
    pub observe: bool,
    #[command(flatten)]
    pub supervision: Supervision,
    /// The command to run while leader (after `--`)
    #[arg(last = true, value_name = "CMD", conflicts_with = "observe")]
    pub cmd: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BarrierAction {
    /// Create the barrier node (set already is fine)
    Set,
    /// Delete the barrier node: every waiter passes
    Remove,
    /// Wait until the barrier is not set
    Wait,
}

#[derive(Debug, Args)]
pub struct BarrierArgs {
    /// What to do
    #[arg(value_enum, value_name = "OP")]
    pub action: BarrierAction,
    /// The barrier's path
    pub path: String,
    /// For wait: give up after DUR (exit 75)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
}

#[derive(Debug, Args)]
pub struct DoubleBarrierArgs {
    /// The barrier's path
    pub path: String,
    /// How many members open the barrier
    #[arg(long, value_name = "N")]
    pub members: usize,
    /// Give up entering, and again leaving, after DUR (exit 75)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// The command to run between enter and leave (after `--`)
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LatchArgs {
    #[command(subcommand)]
    pub op: LatchOp,
}

#[derive(Debug, Clone, Subcommand)]
pub enum LatchOp {
    /// Set the count to N if it is zero (a new generation); print the generation, or exit 1
    /// while a generation is still counting down
    Set {
        /// The latch's path
        path: String,
        /// How many participants must count down
        n: u64,
    },
    /// Count participant ID down (once per ID and generation); print the count-downs still
    /// missing, or exit 1 when no count is set
    Down {
        /// The latch's path
        path: String,
        /// The participant's id (a node name)
        #[arg(long, value_name = "ID")]
        id: String,
    },
    /// Wait until the latch is open (at once when no count is set)
    Wait {
        /// The latch's path
        path: String,
        /// Give up after DUR (exit 75)
        #[arg(long, value_name = "DUR", value_parser = parse_duration)]
        timeout: Option<Duration>,
    },
    /// Print the count-downs still missing (0: open, or no count set)
    Count {
        /// The latch's path
        path: String,
    },
}

#[derive(Debug, Args)]
pub struct AtomicArgs {
    /// A 4-byte DistributedAtomicInteger instead of an 8-byte DistributedAtomicLong
    #[arg(long, global = true)]
    pub int: bool,
    #[command(subcommand)]
    pub op: AtomicOp,
}

#[derive(Debug, Clone, Subcommand)]
pub enum AtomicOp {
    /// Print the current value (0 when the node does not exist)
    Get {
        /// The counter's path
        path: String,
    },
    /// Add N (negative: subtract); print the new value
    Add {
        /// The counter's path
        path: String,
        /// The number to add
        #[arg(allow_negative_numbers = true)]
        n: i64,
    },
    /// Set N; print it
    Set {
        /// The counter's path
        path: String,
        /// The new value
        #[arg(allow_negative_numbers = true)]
        n: i64,
    },
    /// Set NEW if the value is EXPECTED; print the new value, or the current one and exit 1
    Cas {
        /// The counter's path
        path: String,
        /// The value it must have
        #[arg(allow_negative_numbers = true)]
        expected: i64,
        /// The value to set
        #[arg(allow_negative_numbers = true)]
        new: i64,
    },
}

#[derive(Debug, Args)]
pub struct SharedCountArgs {
    #[command(subcommand)]
    pub op: SharedCountOp,
}

#[derive(Debug, Clone, Subcommand)]
pub enum SharedCountOp {
    /// Print the count (exit 1 when there is none)
    Get {
        /// The count's path
        path: String,
    },
    /// Set the count to N (creating the node when missing)
    Set {
        /// The count's path
        path: String,
        /// The new count
        #[arg(allow_negative_numbers = true)]
        n: i32,
    },
    /// Print the count, then each new value on its own line, until SIGINT/SIGTERM
    Watch {
        /// The count's path
        path: String,
    },
}

impl AtomicOp {
    /// The counter's path.
    pub fn path(&self) -> &str {
        match self {
            Self::Get { path } | Self::Add { path, .. } | Self::Set { path, .. } | Self::Cas { path, .. } => path,
        }
    }
}

impl SharedCountOp {
    /// The count's path.
    pub fn path(&self) -> &str {
        match self {
            Self::Get { path } | Self::Set { path, .. } | Self::Watch { path } => path,
        }
    }
}

/// `zkr rm [-r [-y]] PATH`.
#[derive(Debug, Args)]
pub struct RmArgs {
    /// The node to delete
    pub path: String,
    /// Delete the node's children too, and theirs (asks for confirmation on a terminal)
    #[arg(short, long)]
    pub recursive: bool,
    /// With -r: delete without asking (needed when stdin is not a terminal)
    #[arg(short, long)]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The recipe's path
    pub path: String,
}

/// What `zkr watch` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WatchMode {
    /// PATH and everything below it (down to --max-depth)
    Tree,
    /// PATH and its children
    Children,
    /// PATH alone
    Node,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The path to watch (it need not exist yet)
    pub path: String,
    /// What to follow under PATH
    #[arg(long = "kind", alias = "mode", value_enum, value_name = "KIND", default_value_t = WatchMode::Tree)]
    pub mode: WatchMode,
    /// With --kind tree: how many levels below PATH (1: its children)
    #[arg(long, value_name = "N")]
    pub max_depth: Option<usize>,
    /// Leave the nodes' data out (stats only)
    #[arg(long)]
    pub no_data: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn globals_go_before_or_after_the_subcommand() {
        let before = Cli::try_parse_from(["zkr", "--json", "--connect", "h:1", "inspect", "/a"]).unwrap();
        let after = Cli::try_parse_from(["zkr", "inspect", "/a", "--connect", "h:1", "--json"]).unwrap();
        for cli in [before, after] {
            assert!(cli.global.json);
            assert_eq!(cli.global.connect, "h:1");
        }
    }

    #[test]
    fn lock_takes_paths_options_and_a_command() {
        let cli = Cli::try_parse_from([
            "zkr",
            "lock",
            "/a",
            "/b",
            "--kind",
            "write",
            "--timeout",
            "300ms",
            "--",
            "sh",
            "-c",
            "exit 7",
        ])
        .unwrap();
        let Command::Lock(lock) = cli.command else { panic!("not lock") };
        assert_eq!(lock.paths, ["/a", "/b"]);
        assert_eq!(lock.kind, LockKind::Write);
        assert_eq!(lock.hold.timeout, Some(Duration::from_millis(300)));
        assert_eq!(lock.hold.cmd, ["sh", "-c", "exit 7"]);
        assert_eq!(lock.hold.supervision.on_lost, OnLost::Term);
    }

    #[test]
    fn atomic_takes_negative_numbers_and_int_anywhere() {
        let cli = Cli::try_parse_from(["zkr", "atomic", "add", "/c", "-5", "--int"]).unwrap();
        let Command::Atomic(a) = cli.command else { panic!("not atomic") };
        assert!(a.int);
        assert!(matches!(a.op, AtomicOp::Add { n: -5, ref path } if path == "/c"));
    }

    /// Parses as zkr does: the older forms turned into today's first.
    fn parse(words: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(crate::legacy::normalize(words.iter().map(Into::into).collect()))
    }

    #[test]
    fn one_spelling_per_concept_and_the_old_ones_still_parse() {
        for words in
            [&["zkr", "semaphore", "/s", "--max-leases", "3"][..], &["zkr", "semaphore", "/s", "--leases", "3"]]
        {
            let Command::Semaphore(s) = parse(words).unwrap().command else { panic!("not semaphore") };
            assert_eq!((s.leases, s.count), (3, 1), "{words:?}");
        }
        for words in [&["zkr", "watch", "/w", "--kind", "node"][..], &["zkr", "watch", "/w", "--mode", "node"]] {
            let Command::Watch(w) = parse(words).unwrap().command else { panic!("not watch") };
            assert_eq!(w.mode, WatchMode::Node, "{words:?}");
        }
        for words in [
            &["zkr", "once", "j", "--at-most", "1m", "--base", "/x", "--", "true"][..],
            &["zkr", "once", "j", "--at-most", "1m", "--root", "/x", "--", "true"],
        ] {
            let Command::Once(o) = parse(words).unwrap().command else { panic!("not once") };
            assert_eq!(o.root, "/x", "{words:?}");
        }
        for words in [
            &["zkr", "barrier", "wait", "/b", "--timeout", "1s"][..],
            &["zkr", "barrier", "/b", "wait", "--timeout", "1s"],
        ] {
            let Command::Barrier(b) = parse(words).unwrap().command else { panic!("not barrier") };
            assert_eq!(
                (b.action, b.path.as_str(), b.timeout),
                (BarrierAction::Wait, "/b", Some(Duration::from_secs(1)))
            );
        }
        for words in [&["zkr", "shared-count", "set", "/c", "-2"][..], &["zkr", "shared-count", "/c", "set", "-2"]] {
            let Command::SharedCount(c) = parse(words).unwrap().command else { panic!("not shared-count") };
            assert!(matches!(c.op, SharedCountOp::Set { n: -2, ref path } if path == "/c"), "{words:?}");
        }
        let Command::Bench(b) = parse(&["zkr", "bench", "--recipe", "semaphore", "--leases", "4"]).unwrap().command
        else {
            panic!("not bench")
        };
        assert_eq!(b.leases, 4);
        // the old names are hidden: help shows the new ones only
        let help = Cli::command().find_subcommand("semaphore").unwrap().clone().render_long_help().to_string();
        assert!(help.contains("--max-leases") && !help.contains("--leases "), "{help}");
    }

    #[test]
    fn verbosity_counts() {
        assert_eq!(parse(&["zkr", "-vv", "inspect", "/a"]).unwrap().global.verbose, 2);
        assert_eq!(parse(&["zkr", "inspect", "/a", "-v"]).unwrap().global.verbose, 1);
        assert_eq!(parse(&["zkr", "inspect", "/a"]).unwrap().global.verbose, 0);
    }

    #[test]
    fn latch_takes_an_operation_a_path_and_its_arguments() {
        let cli = Cli::try_parse_from(["zkr", "latch", "down", "/l", "--id", "w-7"]).unwrap();
        let Command::Latch(l) = cli.command else { panic!("not latch") };
        assert!(matches!(l.op, LatchOp::Down { ref path, ref id } if path == "/l" && id == "w-7"));
        let cli = Cli::try_parse_from(["zkr", "latch", "wait", "/l", "--timeout", "2s"]).unwrap();
        let Command::Latch(l) = cli.command else { panic!("not latch") };
        assert!(matches!(l.op, LatchOp::Wait { timeout: Some(t), .. } if t == Duration::from_secs(2)));
    }

    #[test]
    fn usage_errors() {
        for bad in [
            &["zkr", "lock", "/a", "--kind", "spin"][..],
            &["zkr", "lock"],
            &["zkr", "lock", "/a", "--timeout", "5"],
            &["zkr", "semaphore", "/s"],
            &["zkr", "elect", "/e", "--observe", "--", "true"],
            &["zkr", "latch", "set", "/l"],
            &["zkr", "latch", "set", "/l", "-3"],
            &["zkr", "latch", "down", "/l"],
            &["zkr", "latch", "wait", "/l", "--timeout", "5"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }
}

/// Which Curator queue (the node layout and the order items are taken in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueueKind {
    /// SimpleDistributedQueue: `qn-` nodes of raw bytes
    Simple,
    /// DistributedQueue: `queue-` nodes (with --id, --priority or --delay: that kind's layout)
    Distributed,
    /// DistributedIdQueue (for take and size; put: --id)
    Id,
    /// DistributedPriorityQueue (for take and size; put: --priority)
    Priority,
    /// DistributedDelayQueue (for take and size; put: --delay)
    Delay,
}

#[derive(Debug, Args)]
pub struct QueueArgs {
    #[command(subcommand)]
    pub op: QueueOp,
}

#[derive(Debug, Subcommand)]
pub enum QueueOp {
    /// Put DATA into the queue at PATH; print the new item node's path
    Put {
        /// The queue's path
        path: String,
        /// Which queue
        #[arg(long, value_enum, default_value = "distributed")]
        kind: QueueKind,
        /// The item's id (a DistributedIdQueue)
        #[arg(long, value_name = "ID", conflicts_with_all = ["priority", "delay"])]
        id: Option<String>,
        /// The item's priority, lowest taken first (a DistributedPriorityQueue)
        #[arg(long, value_name = "N", allow_negative_numbers = true, conflicts_with = "delay")]
        priority: Option<i32>,
        /// Take the item no sooner than DUR from now (a DistributedDelayQueue)
        #[arg(long, value_name = "DUR", value_parser = parse_duration)]
        delay: Option<Duration>,
        /// The item
        data: String,
    },
    /// Take the next item from the queue at PATH (deleted, then printed: at most once) and
    /// print it; every item of a multi-item node, one per line
    Take {
        /// The queue's path
        path: String,
        /// Give up waiting for an item after DUR (exit 75)
        #[arg(long, value_name = "DUR", value_parser = parse_duration)]
        timeout: Option<Duration>,
        /// Which queue
        #[arg(long, value_enum, default_value = "distributed")]
        kind: QueueKind,
    },
    /// Print how many item nodes the queue at PATH holds
    Size {
        /// The queue's path
        path: String,
        /// Which queue
        #[arg(long, value_enum, default_value = "distributed")]
        kind: QueueKind,
    },
}

/// `zkr once` (src/once.rs): run CMD on one host only, through the ShedLock-compatible lock.
#[derive(Debug, Args)]
pub struct OnceArgs {
    /// The job's name: the lock node is BASE/NAME
    pub name: String,
    /// Hold the lock at most this long if this host dies (ShedLock's lockAtMostFor); while CMD
    /// runs, the lock is extended by DUR whenever half of it has passed
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub at_most: Duration,
    /// Keep the lock at least this long from the start, also when CMD ends sooner, so that a
    /// host whose clock or cron is a little late skips this run (ShedLock's lockAtLeastFor)
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "0s")]
    pub at_least: Duration,
    /// Where the lock nodes are (ShedLock's root; its default: /shedlock)
    #[arg(long = "base", alias = "root", value_name = "PATH", default_value = zk_recipes::scheduled::SHEDLOCK_DEFAULT_ROOT)]
    pub root: String,
    #[command(flatten)]
    pub supervision: Supervision,
    /// The command to run when this host takes the lock (after `--`); zkr exits with its
    /// status, also when a lost lock stopped it (not 76 as the holding subcommands)
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}
