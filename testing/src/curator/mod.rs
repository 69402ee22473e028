//! A real Apache Curator participant for interoperability tests.
//!
//! [`CuratorPeer`] compiles `CuratorPeer.java` (next to this module) (embedded in this crate), starts it in
//! one JVM with Debian's Curator jars, and drives it over stdin/stdout. One JVM hosts any number
//! of Curator clients ("client ids", one `CuratorFramework` and so one ZooKeeper session each)
//! and recipe objects ("holder ids"), so a test binary pays the JVM start-up once and then
//! simulates as many Java participants as it likes.
//!
//! # Requirements
//!
//! Java 11 or newer with `javac` (found through `JAVA_HOME` or `PATH`) and the Curator jars of
//! Debian's `libcurator-recipes-java` under `/usr/share/java` (another directory can be given
//! with the environment variable `ZK_RECIPES_CURATOR_JARS`). When something is missing,
//! [`CuratorPeer::start`] returns [`Error::CuratorNotInstalled`] naming the packages to install.
//!
//! # Protocol
//!
//! Each request is one line `<rid> <command> <arg>...`, answered by one line
//! `<rid> OK <payload>` or `<rid> ERR <ExceptionClass> <message>`. Arguments never contain
//! whitespace; times are milliseconds. [`CuratorPeer::call`] adds the request id and matches the
//! answer, so any number of calls may be outstanding at once (a blocking acquire does not hold
//! up other commands). `ERR` answers become [`Error::Peer`].
//!
//! | command | answer |
//! |---|---|
//! | `ping` | `pong` |
//! | `connect <cid> <connectString> [sessionTimeoutMs [tlsCaPem tlsKeyStorePem]]` (with the PEM files: mutual TLS over the Netty client socket) | the session id (decimal) |
//! | `close <cid>` · `session <cid>` | `closed` · the session id |
//! | `mutex.acquire <cid> <hid> <path> <timeoutMs>` | `true` / `false` |
//! | `mutex.release <cid> <hid>` | holds left (re-entrant) |
//! | `rw.read.acquire`, `rw.write.acquire` (as mutex) | `true` / `false` |
//! | `rw.release <cid> <hid> [read\|write]` | locks left; without a kind, the latest |
//! | `sem.acquire <cid> <hid> <path> <maxLeases> <count> <timeoutMs>` | count acquired / `false` |
//! | `sem.release <cid> <hid>` | number of leases returned (all of the holder's) |
//! | `semmutex.acquire <cid> <hid> <path> <timeoutMs>` · `semmutex.release <cid> <hid>` | `true`/`false` · `released` |
//! | `sharedcount.get <cid> <path>` · `sharedcount.add <cid> <path> <delta>` | the (new) value |
//! | `atomiclong.get/add`, `atomicint.get/add <cid> <path> [delta]` | `<succeeded> <pre> <post>` |
//! | `latch.start <cid> <hid> <path> <participantId>` | `started` |
//! | `latch.has` · `latch.await <cid> <hid> <timeoutMs>` · `latch.leader` · `latch.ourpath` · `latch.close` | `true`/`false` · `true`/`false` · leader id · own node path · `closed` |
//! | `dbarrier.enter <cid> <hid> <path> <memberQty> <timeoutMs>` · `dbarrier.leave <cid> <hid> <timeoutMs>` | `true` / `false` |
//! | `barrier.set <cid> <path>` · `barrier.remove <cid> <path>` · `barrier.wait <cid> <path> <timeoutMs>` | `set` · `removed` · `true`/`false` |
//! | `node.create <cid> <path> <data>` (persistent, missing parents persistent) | the new node's czxid |
//! | `node.set <cid> <path> <data>` · `node.delete <cid> <path> [recursive]` | the new version · `deleted` |
//! | `cache.start <cid> <hid> <path>` (a `CuratorCache` with data) · `cache.close <cid> <hid>` | `started` · `closed` |
//! | `cache.initialized <cid> <hid>` (its listener's `initialized()` was called) | `true` / `false` |
//! | `cache.content <cid> <hid>` | `<n>`, then `<path> <version> <czxid> <data>` per node, sorted by path |
//! | `cache.events <cid> <hid>` (taken: each is answered once) | `<n>`, then `<type> <path> <czxid>` per listener event (`created`, `changed`, `deleted`), in order |
//! | `group.start <cid> <hid> <path> <memberId> <data>` (a `GroupMember`) · `group.set <cid> <hid> <data>` · `group.close <cid> <hid>` | `started` · `set` · `closed` |
//! | `group.members <cid> <hid>` (`getCurrentMembers()`) | `<n>`, then `<id> <data>` per member, sorted by id |
//! | `queue.put <cid> <path> <simple\|distributed\|id\|priority\|delay> <id\|priority\|epochMs\|-> <item>[,<item>...]` | `put` |
//! | `queue.simple.poll <cid> <path> <timeoutMs>` (`SimpleDistributedQueue.poll`) | the item, `none` |
//! | `queue.consume.start <cid> <hid> <path> <kind> <lockPath\|->` · `queue.consume.close <cid> <hid>` | `started` · `closed` |
//! | `queue.consume.items <cid> <hid>` (what its `QueueConsumer` was handed) | `<n>`, then one item per word, in order |
//! | `queue.remove <cid> <path> <id>` (`DistributedIdQueue.remove`) | how many were removed |
//! | `shedlock.lock <cid> <hid> <root/name> <atMostMs> <atLeastMs> [clockOffsetMs]` (as ShedLock's ZooKeeper provider; `ShedLockCommands.java`) · `shedlock.unlock <cid> <hid>` | `true <lockUntil>` / `false` · the unlock instant written |
//! | `shedlock.islocked <cid> <root/name> [clockOffsetMs]` · `shedlock.format <epochMs>` · `shedlock.parse <text>` | `true`/`false` · the stored text · epoch ms / `unparsable` |
//! | `selector.start <cid> <hid> <path> <id>` (a `LeaderSelector` whose `takeLeadership` holds until relinquished) · `selector.close <cid> <hid>` | `started` · `closed` |
//! | `selector.has` · `selector.await <cid> <hid> <timeoutMs>` · `selector.terms` · `selector.leader` | `true`/`false` · `true`/`false` · how many leaderships it had · the leader's id |
//! | `selector.relinquish <cid> <hid>` (`takeLeadership` returns) · `selector.requeue <cid> <hid>` | `relinquished` · `true`/`false` |
//! | `multilock.acquire <cid> <hid> <path>[,<path>...] <timeoutMs>` (an `InterProcessMultiLock`, paths in that order) · `multilock.release <cid> <hid>` | `true`/`false` · `released` |
//! | `sharedvalue.start <cid> <hid> <path> <seed>` · `sharedvalue.read <cid> <hid>` (remembered for `tryset`) · `sharedvalue.tryset <cid> <hid> <data>` · `sharedvalue.set` · `sharedvalue.close` | `started` · `<version> <data>` · `true`/`false` · `set` · `closed` |
//! | `atomicvalue.get <cid> <path>` · `atomicvalue.cas <cid> <path> <expected> <new>` · `atomicvalue.tryset <cid> <path> <new>` · `atomicvalue.force <cid> <path> <new>` (a `DistributedAtomicValue`) | `<succeeded> <pre> <post>` (data words) · `set` for `force` |
//! | `pnode.start <cid> <hid> <path> <ephemeral\|protected\|persistent> <data>` (a `PersistentNode`) · `pnode.await <cid> <hid> <timeoutMs>` · `pnode.path` · `pnode.set <cid> <hid> <data>` · `pnode.close` | `started` · `true`/`false` · its actual path · `set` · `closed` |
//! | `ttlnode.start <cid> <hid> <path> <ttlMs> <data>` (a `PersistentTtlNode`) · `ttlnode.await <cid> <hid> <timeoutMs>` · `ttlnode.close` | `started` · `true`/`false` · `closed` |
//! | `pnode.read <cid> <path>` | `none`, or `<ephemeralOwner> <czxid> <data>` |
//! | `session.expire <cid>` (the server expires the session: an impostor's connect and `closeSession` in one write, until the client sees a new session) | the new session id |
//! | `revmutex.acquire <cid> <hid> <path> <timeoutMs>` (an `InterProcessMutex` with `makeRevocable`: a revocation request releases it) · `revmutex.state <cid> <hid>` · `revmutex.release <cid> <hid>` | `true`/`false` · `<held> <requests seen>` · whether it still held |
//! | `revoke.attempt <cid> <nodePath>` (`Revoker.attemptRevoke`) | `requested` |
//! | `gzip.create <cid> <path> <data>` · `gzip.set <cid> <path> <data>` (Curator's `.compressed()`; `CompressionCommands.java`) · `gzip.get <cid> <path>` (`.decompressed()`) | `created` · the new version · the data |
//! | `gzip.compress <data>` · `gzip.decompress <data>` (`GzipCompressionProvider`, no client) | the bytes |
//! | `quit` | `bye`, then the JVM closes its clients and exits |
//!
//! `<data>` is lowercase hex, `-` for no bytes (`?` in an answer: Curator held no data).
//! Errors of the plain node commands carry ZooKeeper's exception class, e.g.
//! `NodeExistsException`, `NoNodeException`, `NotEmptyException`.
//!
//! A negative timeout waits forever (only reachable through [`CuratorPeer::call`]). A holder id
//! stands for a Java thread: Curator's `InterProcessMutex` and read-write lock are owned by the
//! acquiring thread, so all `mutex.*`/`rw.*` commands of one `(cid, hid)` run on one dedicated
//! thread, and acquiring twice through the same holder is re-entrant (`multilock.*` and
//! `revmutex.*` run on a second thread of their own per holder).
//!
//! # Process hygiene
//!
//! The JVM is owned by a background thread with its own small tokio runtime, so one peer can
//! be shared by all `#[tokio::test]`s of a binary (see [`CuratorPeer::shared`]). Dropping a
//! [`CuratorPeer`] kills and reaps the JVM; the JVM also exits by itself when its stdin closes,
//! which happens when the test process ends in any way.

mod classes;
mod commands;
mod compression;
mod discovery;
mod group;
mod parse;
mod process;
mod queue;
mod shedlock;

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch, OnceCell};

use crate::{Error, Result};
use classes::{compiled_classes, find_program, jar_classpath, JRE_HINT};
use process::{lock, PendingGuard, Shared};
pub use queue::CuratorQueueKind;

/// How long the JVM may take to answer its first `ping`.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long starting a [`CuratorPeer`] took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartTimings {
    /// Time spent in `javac`; `None` when the compiled class was already cached.
    pub compile: Option<Duration>,
    /// Time from spawning `java` until the peer answered its first `ping`.
    pub jvm: Duration,
}

/// The result of a `DistributedAtomicLong` / `DistributedAtomicInteger` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicResult<T> {
    /// Whether the operation succeeded (Curator's `AtomicValue::succeeded`).
    pub succeeded: bool,
    /// The value before the operation.
    pub pre_value: T,
    /// The value after the operation.
    pub post_value: T,
}

/// One node of a Curator `CuratorCache` as `cache.content` reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CuratorCacheNode {
    /// The node's full path.
    pub path: String,
    /// Its data version (`Stat.version`).
    pub version: i32,
    /// The zxid of its creation (`Stat.czxid`): a node deleted and re-created has a new one.
    pub czxid: i64,
    /// Its data; `None` when Curator held none (a cache built without data).
    pub data: Option<Vec<u8>>,
}

/// One event of a Curator `CuratorCache`'s listener, as `cache.events` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuratorCacheEvent {
    /// `created`, `changed` or `deleted` (`CuratorCacheListener.Type`, lowercase).
    pub kind: String,
    /// The node's path.
    pub path: String,
    /// The node's `czxid` (of the new data; of the old data for `deleted`).
    pub czxid: i64,
}

/// A Java process running Apache Curator, driven from Rust tests.
///
/// See the [module documentation](self) for the protocol and requirements.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(connect_string: &str) -> zk_recipes_testing::Result<()> {
/// use std::time::Duration;
/// use zk_recipes_testing::curator::CuratorPeer;
///
/// let peer = CuratorPeer::shared().await?;
/// peer.connect("java-1", connect_string).await?;
/// assert!(peer.mutex_acquire("java-1", "h", "/lock", Duration::from_secs(5)).await?);
/// peer.mutex_release("java-1", "h").await?;
/// peer.close("java-1").await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct CuratorPeer {
    lines: mpsc::UnboundedSender<String>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    kill: Option<oneshot::Sender<()>>,
    io_thread: Option<std::thread::JoinHandle<()>>,
    exited: watch::Receiver<bool>,
    pid: Option<u32>,
    timings: StartTimings,
}

static SHARED_PEER: OnceCell<Arc<CuratorPeer>> = OnceCell::const_new();

impl CuratorPeer {
    /// Compiles the peer if needed, starts a JVM and waits until it answers.
    ///
    /// The class files are cached in `<temp dir>/zk-recipes-curator-<hash of the source>`;
    /// concurrent test binaries compile into private directories and rename atomically.
    ///
    /// # Errors
    ///
    /// [`Error::CuratorNotInstalled`] when `java`, `javac` or a Curator jar is missing,
    /// [`Error::Peer`] when compiling or starting fails, [`Error::Timeout`] when the JVM does
    /// not answer within 60 s.
    ///
    /// # Cancel safety
    ///
    /// Cancelling may leave a private compile directory behind in the temp directory; a JVM
    /// that was already spawned is killed.
    pub async fn start() -> Result<CuratorPeer> {
        let java = find_program("java").ok_or_else(|| Error::CuratorNotInstalled {
            searched: "`java` in $JAVA_HOME/bin and $PATH".into(),
            install_hint: JRE_HINT,
        })?;
        let classpath = jar_classpath()?;
        let (class_dir, compile) = compiled_classes(&classpath).await?;
        // the Netty jars a TLS client (`connect_tls`) needs beyond zookeeper.jar's manifest
        let netty = crate::install::DEBIAN_NETTY_JARS.iter().filter(|jar| Path::new(jar).is_file());
        let classpath = std::iter::once(classpath.as_str()).chain(netty.copied()).collect::<Vec<_>>().join(":");

        let mut command = tokio::process::Command::new(&java);
        command
            .args([
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData",
                "-Xshare:auto",
                "-Xmx256m",
                "-cp",
            ])
            .arg(format!("{}:{classpath}", class_dir.display()))
            .arg("CuratorPeer")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);

        let spawned = Instant::now();
        let mut peer = Self::spawn(command).await?;
        match tokio::time::timeout(START_TIMEOUT, peer.ping()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(Error::Timeout(START_TIMEOUT)),
        }
        peer.timings = StartTimings { compile, jvm: spawned.elapsed() };
        tracing::debug!(timings = ?peer.timings, pid = ?peer.pid, "Curator peer started");
        Ok(peer)
    }

    /// One peer per process, started on first use and shared by every caller (and so by every
    /// test of a test binary, whatever runtime each runs on).
    ///
    /// The shared peer is never dropped: its JVM exits when the test process ends and closes
    /// the JVM's stdin. Use distinct client ids in different tests, and `close` them at the end.
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::start`]; a failed start is retried by the next call.
    pub async fn shared() -> Result<Arc<CuratorPeer>> {
        SHARED_PEER.get_or_try_init(|| async { CuratorPeer::start().await.map(Arc::new) }).await.cloned()
    }

    /// The JVM's process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// How long compiling and starting took.
    pub fn timings(&self) -> StartTimings {
        self.timings
    }

    /// Sends one raw command (without request id) and returns the payload of its `OK` answer.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty command or one with a line break,
    /// [`Error::Peer`] for an `ERR` answer (`"<command>: <ExceptionClass>: <message>"`) or when
    /// the JVM is gone.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe in the sense that the peer is not disturbed: the command still runs in the
    /// JVM (e.g. a lock may still be acquired there), its answer is discarded.
    pub async fn call(&self, cmd: &str) -> Result<String> {
        if cmd.trim().is_empty() || cmd.contains(['\n', '\r']) {
            return Err(Error::InvalidArgument(format!("peer command {cmd:?} must be one non-empty line")));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut state = lock(&self.shared.state);
            if let Some(reason) = &state.dead {
                return Err(Error::Peer(format!("{cmd}: {reason}")));
            }
            state.pending.insert(id, (cmd.to_string(), tx));
        }
        let _guard = PendingGuard { shared: &self.shared, id };
        if self.lines.send(format!("{id} {cmd}\n")).is_err() {
            return Err(Error::Peer(format!("{cmd}: the peer's IO thread is gone")));
        }
        rx.await.unwrap_or_else(|_| Err(Error::Peer(format!("{cmd}: the peer is gone"))))
    }

    /// Asks the JVM to close its clients and exit, and waits (at most 5 s) until it did; then
    /// kills it if needed.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when the peer was already gone.
    pub async fn shutdown(mut self) -> Result<()> {
        let answer = self.call("quit").await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.exited.wait_for(|gone| *gone)).await;
        answer.map(drop)
    }
}
