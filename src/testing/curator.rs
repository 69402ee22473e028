//! A real Apache Curator participant for interoperability tests.
//!
//! [`CuratorPeer`] compiles `tests/java/CuratorPeer.java` (embedded in this crate), starts it in
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
//! | `connect <cid> <connectString> [sessionTimeoutMs]` | the session id (decimal) |
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
//! | `quit` | `bye`, then the JVM closes its clients and exits |
//!
//! A negative timeout waits forever (only reachable through [`CuratorPeer::call`]). A holder id
//! stands for a Java thread: Curator's `InterProcessMutex` and read-write lock are owned by the
//! acquiring thread, so all `mutex.*`/`rw.*` commands of one `(cid, hid)` run on one dedicated
//! thread, and acquiring twice through the same holder is re-entrant.
//!
//! # Process hygiene
//!
//! The JVM is owned by a background thread with its own small tokio runtime, so one peer can
//! be shared by all `#[tokio::test]`s of a binary (see [`CuratorPeer::shared`]). Dropping a
//! [`CuratorPeer`] kills and reaps the JVM; the JVM also exits by itself when its stdin closes,
//! which happens when the test process ends in any way.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch, OnceCell};

use crate::{Error, Result};

/// The Java source of the peer, compiled on first use.
const SOURCE: &str = include_str!("../../tests/java/CuratorPeer.java");

/// The jars the peer needs, relative to the jar directory.
const REQUIRED_JARS: &[&str] = &[
    "curator-recipes.jar",
    "curator-framework.jar",
    "curator-client.jar",
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "guava.jar",
    "slf4j-api.jar",
    "slf4j-nop.jar",
];

const DEFAULT_JAR_DIR: &str = "/usr/share/java";
const JAR_DIR_ENV: &str = "ZK_RECIPES_CURATOR_JARS";
const JRE_HINT: &str = "apt-get install -y default-jre-headless libcurator-recipes-java";
const JDK_HINT: &str = "apt-get install -y default-jdk-headless";
/// How long the JVM may take to answer its first `ping`.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Stderr lines of the JVM kept for error messages.
const STDERR_TAIL: usize = 40;

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

/// A Java process running Apache Curator, driven from Rust tests.
///
/// See the [module documentation](self) for the protocol and requirements.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(connect_string: &str) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::testing::curator::CuratorPeer;
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

type Reply = oneshot::Sender<Result<String>>;

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    stderr: Mutex<VecDeque<String>>,
}

#[derive(Debug, Default)]
struct State {
    /// Outstanding requests: id -> (command text, reply channel).
    pending: HashMap<u64, (String, Reply)>,
    /// Why the peer is gone, once it is.
    dead: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// Routes one stdout line of the peer to the request it answers.
    fn route(&self, line: &str) {
        let parsed = line.split_once(' ').and_then(|(id, rest)| Some((id.parse::<u64>().ok()?, rest)));
        let Some((id, rest)) = parsed else {
            self.note_stderr(format!("(unexpected stdout line) {line}"));
            return;
        };
        let Some((cmd, reply)) = lock(&self.state).pending.remove(&id) else {
            return; // the caller gave up waiting
        };
        let result = if let Some(payload) = rest.strip_prefix("OK") {
            Ok(payload.strip_prefix(' ').unwrap_or(payload).to_string())
        } else if let Some(err) = rest.strip_prefix("ERR ") {
            let (class, message) = err.split_once(' ').unwrap_or((err, ""));
            Err(Error::Peer(format!("{cmd}: {class}: {message}")))
        } else {
            Err(Error::Peer(format!("{cmd}: malformed answer {rest:?}")))
        };
        let _ = reply.send(result);
    }

    fn note_stderr(&self, line: String) {
        let mut tail = lock(&self.stderr);
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }

    /// Marks the peer dead and fails every outstanding request.
    fn fail_all(&self, reason: String) {
        let tail: Vec<String> = lock(&self.stderr).iter().cloned().collect();
        let reason = if tail.is_empty() {
            reason
        } else {
            format!("{reason}; last stderr lines of the JVM:\n{}", tail.join("\n"))
        };
        let pending: Vec<(String, Reply)> = {
            let mut state = lock(&self.state);
            state.dead.get_or_insert(reason.clone());
            state.pending.drain().map(|(_, v)| v).collect()
        };
        for (cmd, reply) in pending {
            let _ = reply.send(Err(Error::Peer(format!("{cmd}: {reason}"))));
        }
    }
}

/// Removes a request from the pending map when its caller stops waiting.
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.shared.state).pending.remove(&self.id);
    }
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

    /// Spawns the IO thread that owns the JVM.
    async fn spawn(command: tokio::process::Command) -> Result<CuratorPeer> {
        let shared = Arc::new(Shared::default());
        let (lines_tx, lines_rx) = mpsc::unbounded_channel();
        let (kill_tx, kill_rx) = oneshot::channel();
        let (exited_tx, exited_rx) = watch::channel(false);
        let (ready_tx, ready_rx) = oneshot::channel();
        let thread_shared = shared.clone();
        let io_thread = std::thread::Builder::new().name("curator-peer-io".into()).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(Error::Io(format!("cannot build the peer's runtime: {e}"))));
                    return;
                }
            };
            runtime.block_on(run_io(command, lines_rx, kill_rx, thread_shared, ready_tx));
            let _ = exited_tx.send(true);
        })?;
        let mut peer = CuratorPeer {
            lines: lines_tx,
            shared,
            next_id: AtomicU64::new(1),
            kill: Some(kill_tx),
            io_thread: Some(io_thread),
            exited: exited_rx,
            pid: None,
            timings: StartTimings { compile: None, jvm: Duration::ZERO },
        };
        // On error `peer` is dropped here, which joins the IO thread.
        peer.pid =
            ready_rx.await.map_err(|_| Error::Peer("the peer's IO thread ended before starting java".into()))??;
        Ok(peer)
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

    /// `ping`: checks that the JVM answers.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when it does not.
    pub async fn ping(&self) -> Result<()> {
        self.call("ping").await.map(drop)
    }

    /// `connect`: starts a Curator client `cid` with a 10 s session timeout and waits until it
    /// is connected. Returns its session id.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `cid` is taken or no connection is made within the session timeout.
    pub async fn connect(&self, cid: &str, connect_string: &str) -> Result<i64> {
        parse_num(&self.call(&words(&["connect", cid, connect_string])?).await?)
    }

    /// `connect` with an explicit session timeout. Returns the session id.
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::connect`].
    pub async fn connect_with_session_timeout(
        &self,
        cid: &str,
        connect_string: &str,
        session_timeout: Duration,
    ) -> Result<i64> {
        let ms = millis(session_timeout).to_string();
        parse_num(&self.call(&words(&["connect", cid, connect_string, &ms])?).await?)
    }

    /// `close`: closes client `cid` (its session ends, its ephemeral nodes go) and forgets its
    /// holders.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] for an unknown client.
    pub async fn close(&self, cid: &str) -> Result<()> {
        self.call(&words(&["close", cid])?).await.map(drop)
    }

    /// `session`: the current ZooKeeper session id of client `cid` (compare with a node's
    /// `ephemeralOwner`).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] for an unknown client.
    pub async fn session_id(&self, cid: &str) -> Result<i64> {
        parse_num(&self.call(&words(&["session", cid])?).await?)
    }

    /// `mutex.acquire`: an `InterProcessMutex` on `path`, held by holder `hid` (re-entrant per
    /// holder). `Ok(false)` when `timeout` passed.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws or `hid` is in use for something else.
    pub async fn mutex_acquire(&self, cid: &str, hid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["mutex.acquire", cid, hid, path, &ms])?).await?)
    }

    /// `mutex.release`: releases one hold of holder `hid`; returns the holds left.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` holds no mutex.
    pub async fn mutex_release(&self, cid: &str, hid: &str) -> Result<u32> {
        parse_num(&self.call(&words(&["mutex.release", cid, hid])?).await?)
    }

    /// `rw.read.acquire`: the read lock of an `InterProcessReadWriteLock` on `path`.
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::mutex_acquire`].
    pub async fn rw_read_acquire(&self, cid: &str, hid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["rw.read.acquire", cid, hid, path, &ms])?).await?)
    }

    /// `rw.write.acquire`: the write lock of an `InterProcessReadWriteLock` on `path`.
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::mutex_acquire`].
    pub async fn rw_write_acquire(&self, cid: &str, hid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["rw.write.acquire", cid, hid, path, &ms])?).await?)
    }

    /// `rw.release`: releases the lock that holder `hid` acquired last; returns the number of
    /// read/write holds it still has.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` holds nothing.
    pub async fn rw_release(&self, cid: &str, hid: &str) -> Result<u32> {
        parse_num(&self.call(&words(&["rw.release", cid, hid])?).await?)
    }

    /// `rw.release <kind>`: releases one hold of the read (`write == false`) or write lock of
    /// holder `hid` (e.g. the write lock after a downgrade); returns the holds left.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` holds no such lock.
    pub async fn rw_release_kind(&self, cid: &str, hid: &str, write: bool) -> Result<u32> {
        let kind = if write { "write" } else { "read" };
        parse_num(&self.call(&words(&["rw.release", cid, hid, kind])?).await?)
    }

    /// `sem.acquire`: `count` leases of an `InterProcessSemaphoreV2` on `path` with
    /// `max_leases`, kept by holder `hid`. `Ok(false)` when `timeout` passed.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws or `hid` is in use for something else.
    pub async fn sem_acquire(
        &self,
        cid: &str,
        hid: &str,
        path: &str,
        max_leases: u32,
        count: u32,
        timeout: Duration,
    ) -> Result<bool> {
        let (max, n, ms) = (max_leases.to_string(), count.to_string(), millis(timeout).to_string());
        let answer = self.call(&words(&["sem.acquire", cid, hid, path, &max, &n, &ms])?).await?;
        if answer == "false" {
            Ok(false)
        } else {
            parse_num::<u32>(&answer).map(|_| true)
        }
    }

    /// `sem.release`: returns all leases of holder `hid`; returns how many.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` holds no semaphore.
    pub async fn sem_release(&self, cid: &str, hid: &str) -> Result<u32> {
        parse_num(&self.call(&words(&["sem.release", cid, hid])?).await?)
    }

    /// `semmutex.acquire`: an `InterProcessSemaphoreMutex` on `path` (not re-entrant).
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::mutex_acquire`].
    pub async fn semmutex_acquire(&self, cid: &str, hid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["semmutex.acquire", cid, hid, path, &ms])?).await?)
    }

    /// `semmutex.release`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` does not hold it.
    pub async fn semmutex_release(&self, cid: &str, hid: &str) -> Result<()> {
        self.call(&words(&["semmutex.release", cid, hid])?).await.map(drop)
    }

    /// `sharedcount.get`: the value of a `SharedCount` on `path` (seeded with 0 if missing).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn shared_count_get(&self, cid: &str, path: &str) -> Result<i32> {
        parse_num(&self.call(&words(&["sharedcount.get", cid, path])?).await?)
    }

    /// `sharedcount.add`: adds `delta` with a `trySetCount` loop; returns the new value.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn shared_count_add(&self, cid: &str, path: &str, delta: i32) -> Result<i32> {
        let delta = delta.to_string();
        parse_num(&self.call(&words(&["sharedcount.add", cid, path, &delta])?).await?)
    }

    /// `atomiclong.get`: a `DistributedAtomicLong` read.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn atomic_long_get(&self, cid: &str, path: &str) -> Result<AtomicResult<i64>> {
        parse_atomic(&self.call(&words(&["atomiclong.get", cid, path])?).await?)
    }

    /// `atomiclong.add`: `DistributedAtomicLong::add` with `RetryNTimes(1000, 1)`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn atomic_long_add(&self, cid: &str, path: &str, delta: i64) -> Result<AtomicResult<i64>> {
        let delta = delta.to_string();
        parse_atomic(&self.call(&words(&["atomiclong.add", cid, path, &delta])?).await?)
    }

    /// `atomicint.get`: a `DistributedAtomicInteger` read.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn atomic_int_get(&self, cid: &str, path: &str) -> Result<AtomicResult<i32>> {
        parse_atomic(&self.call(&words(&["atomicint.get", cid, path])?).await?)
    }

    /// `atomicint.add`: `DistributedAtomicInteger::add` with `RetryNTimes(1000, 1)`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn atomic_int_add(&self, cid: &str, path: &str, delta: i32) -> Result<AtomicResult<i32>> {
        let delta = delta.to_string();
        parse_atomic(&self.call(&words(&["atomicint.add", cid, path, &delta])?).await?)
    }

    /// `latch.start`: starts a `LeaderLatch` on `path` with `participant_id`, kept by `hid`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` is in use or Curator throws.
    pub async fn latch_start(&self, cid: &str, hid: &str, path: &str, participant_id: &str) -> Result<()> {
        self.call(&words(&["latch.start", cid, hid, path, participant_id])?).await.map(drop)
    }

    /// `latch.has`: whether the latch of `hid` has leadership now.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no latch.
    pub async fn latch_has(&self, cid: &str, hid: &str) -> Result<bool> {
        parse_bool(&self.call(&words(&["latch.has", cid, hid])?).await?)
    }

    /// `latch.await`: waits up to `timeout` for leadership.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no latch.
    pub async fn latch_await(&self, cid: &str, hid: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["latch.await", cid, hid, &ms])?).await?)
    }

    /// `latch.leader`: the participant id of the current leader (empty when there is none).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no latch or Curator throws.
    pub async fn latch_leader(&self, cid: &str, hid: &str) -> Result<String> {
        self.call(&words(&["latch.leader", cid, hid])?).await
    }

    /// `latch.ourpath`: the full path of the latch's own node.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no latch.
    pub async fn latch_our_path(&self, cid: &str, hid: &str) -> Result<String> {
        self.call(&words(&["latch.ourpath", cid, hid])?).await
    }

    /// `latch.close`: closes the latch (its node is deleted, leadership passes on).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no latch or Curator throws.
    pub async fn latch_close(&self, cid: &str, hid: &str) -> Result<()> {
        self.call(&words(&["latch.close", cid, hid])?).await.map(drop)
    }

    /// `dbarrier.enter`: enters a `DistributedDoubleBarrier` on `path` for `member_qty`
    /// members; `Ok(false)` when `timeout` passed first.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws or `hid` is in use for something else.
    pub async fn dbarrier_enter(
        &self,
        cid: &str,
        hid: &str,
        path: &str,
        member_qty: u32,
        timeout: Duration,
    ) -> Result<bool> {
        let (n, ms) = (member_qty.to_string(), millis(timeout).to_string());
        parse_bool(&self.call(&words(&["dbarrier.enter", cid, hid, path, &n, &ms])?).await?)
    }

    /// `dbarrier.leave`: leaves the double barrier entered by `hid`; `Ok(false)` on timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` did not enter one or Curator throws.
    pub async fn dbarrier_leave(&self, cid: &str, hid: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["dbarrier.leave", cid, hid, &ms])?).await?)
    }

    /// `barrier.set`: `DistributedBarrier::setBarrier` on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn barrier_set(&self, cid: &str, path: &str) -> Result<()> {
        self.call(&words(&["barrier.set", cid, path])?).await.map(drop)
    }

    /// `barrier.remove`: `DistributedBarrier::removeBarrier` on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn barrier_remove(&self, cid: &str, path: &str) -> Result<()> {
        self.call(&words(&["barrier.remove", cid, path])?).await.map(drop)
    }

    /// `barrier.wait`: waits up to `timeout` until the barrier on `path` is removed.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn barrier_wait(&self, cid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["barrier.wait", cid, path, &ms])?).await?)
    }
}

impl Drop for CuratorPeer {
    /// Kills the JVM and waits (briefly, on the peer's own IO thread) until it is reaped.
    fn drop(&mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        if let Some(thread) = self.io_thread.take() {
            let _ = thread.join();
        }
    }
}

/// The body of the IO thread: spawns the JVM, pumps lines both ways, kills and reaps it.
async fn run_io(
    mut command: tokio::process::Command,
    mut lines: mpsc::UnboundedReceiver<String>,
    mut kill: oneshot::Receiver<()>,
    shared: Arc<Shared>,
    ready: oneshot::Sender<Result<Option<u32>>>,
) {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = ready.send(Err(Error::Peer(format!("cannot start java: {e}"))));
            return;
        }
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.start_kill();
        let _ = child.wait().await;
        let _ = ready.send(Err(Error::Peer("java's pipes are missing".into())));
        return;
    };
    let _ = ready.send(Ok(child.id()));

    let stderr_shared = shared.clone();
    let stderr_task = tokio::spawn(async move {
        let mut err_lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = err_lines.next_line().await {
            stderr_shared.note_stderr(line);
        }
    });

    let mut out_lines = BufReader::new(stdout).lines();
    let mut killed = false;
    let reason = loop {
        tokio::select! {
            _ = &mut kill => {
                killed = true;
                break "the peer was dropped".to_string();
            }
            line = lines.recv() => match line {
                Some(line) => {
                    if let Err(e) = async { stdin.write_all(line.as_bytes()).await?; stdin.flush().await }.await {
                        break format!("writing to the JVM failed: {e}");
                    }
                }
                None => {
                    killed = true;
                    break "the peer was dropped".to_string();
                }
            },
            line = out_lines.next_line() => match line {
                Ok(Some(line)) => shared.route(&line),
                Ok(None) => break "the JVM closed its stdout".to_string(),
                Err(e) => break format!("reading from the JVM failed: {e}"),
            },
        }
    };
    drop(stdin);
    if !killed {
        // It is exiting by itself (quit, crash): give it a moment before killing.
        if tokio::time::timeout(Duration::from_secs(3), child.wait()).await.is_err() {
            let _ = child.start_kill();
        }
    } else {
        let _ = child.start_kill();
    }
    let status = match child.wait().await {
        Ok(status) => status.to_string(),
        Err(e) => format!("unknown exit status ({e})"),
    };
    // Collect the last stderr lines (the pipe is closed now that the JVM is gone).
    let _ = tokio::time::timeout(Duration::from_secs(1), stderr_task).await;
    shared.fail_all(format!("{reason} (JVM {status})"));
}

/// Joins command words, refusing words that would break the line protocol.
fn words(parts: &[&str]) -> Result<String> {
    if let Some(bad) = parts.iter().find(|w| w.is_empty() || w.chars().any(char::is_whitespace)) {
        return Err(Error::InvalidArgument(format!(
            "peer command argument {bad:?} must be non-empty and free of whitespace"
        )));
    }
    Ok(parts.join(" "))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 2)
}

fn parse_bool(s: &str) -> Result<bool> {
    match s {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(Error::Peer(format!("expected true or false, got {other:?}"))),
    }
}

fn parse_num<T: std::str::FromStr>(s: &str) -> Result<T> {
    s.trim().parse().map_err(|_| Error::Peer(format!("expected a number, got {s:?}")))
}

fn parse_atomic<T: std::str::FromStr>(s: &str) -> Result<AtomicResult<T>> {
    let mut it = s.split(' ');
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some(ok), Some(pre), Some(post), None) => {
            Ok(AtomicResult { succeeded: parse_bool(ok)?, pre_value: parse_num(pre)?, post_value: parse_num(post)? })
        }
        _ => Err(Error::Peer(format!("expected `<succeeded> <pre> <post>`, got {s:?}"))),
    }
}

/// Finds `name` in `$JAVA_HOME/bin`, then in `$PATH`.
fn find_program(name: &str) -> Option<PathBuf> {
    let java_home = std::env::var_os("JAVA_HOME").map(|home| PathBuf::from(home).join("bin"));
    let path = std::env::var_os("PATH");
    java_home
        .into_iter()
        .chain(path.iter().flat_map(std::env::split_paths))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The class path of the required jars, or which are missing.
fn jar_classpath() -> Result<String> {
    let dir = std::env::var_os(JAR_DIR_ENV).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_JAR_DIR));
    let jars: Vec<PathBuf> = REQUIRED_JARS.iter().map(|jar| dir.join(jar)).collect();
    let missing: Vec<&str> = REQUIRED_JARS.iter().zip(&jars).filter(|(_, p)| !p.is_file()).map(|(n, _)| *n).collect();
    if !missing.is_empty() {
        return Err(Error::CuratorNotInstalled {
            searched: format!("{} in {} (set {JAR_DIR_ENV} to look elsewhere)", missing.join(", "), dir.display()),
            install_hint: JRE_HINT,
        });
    }
    let parts: Vec<String> = jars.iter().map(|p| p.display().to_string()).collect();
    Ok(parts.join(":"))
}

/// FNV-1a, stable across Rust versions (unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// Returns the directory holding `CuratorPeer.class`, compiling it first if it is not cached.
async fn compiled_classes(classpath: &str) -> Result<(PathBuf, Option<Duration>)> {
    let name = format!("zk-recipes-curator-{:016x}", fnv1a(SOURCE.as_bytes()));
    let dir = std::env::temp_dir().join(&name);
    if dir.join("CuratorPeer.class").is_file() {
        return Ok((dir, None));
    }
    let javac = find_program("javac").ok_or_else(|| Error::CuratorNotInstalled {
        searched: "`javac` in $JAVA_HOME/bin and $PATH (a JDK is needed to compile the peer)".into(),
        install_hint: JDK_HINT,
    })?;
    let started = Instant::now();
    let work = std::env::temp_dir().join(format!("{name}.tmp-{}-{:08x}", std::process::id(), fastrand::u32(..)));
    let result = compile_into(&javac, classpath, &work).await.and_then(|()| publish(&work, &dir));
    if work.exists() {
        let _ = std::fs::remove_dir_all(&work);
    }
    result.map(|()| (dir, Some(started.elapsed())))
}

async fn compile_into(javac: &Path, classpath: &str, work: &Path) -> Result<()> {
    std::fs::create_dir_all(work)?;
    let source = work.join("CuratorPeer.java");
    std::fs::write(&source, SOURCE)?;
    let output = tokio::process::Command::new(javac)
        .args(["-encoding", "UTF-8", "-nowarn", "-d"])
        .arg(work)
        .arg("-cp")
        .arg(classpath)
        .arg(&source)
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| Error::Peer(format!("cannot run {}: {e}", javac.display())))?;
    if !output.status.success() {
        return Err(Error::Peer(format!(
            "javac failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}

/// Moves a finished compile directory into place atomically; losing the race to another
/// process is fine, its classes are the same.
fn publish(work: &Path, dir: &Path) -> Result<()> {
    for _ in 0..2 {
        match std::fs::rename(work, dir) {
            Ok(()) => return Ok(()),
            Err(_) if dir.join("CuratorPeer.class").is_file() => return Ok(()),
            Err(e) if dir.exists() => {
                // A broken leftover (e.g. a temp cleaner removed files): replace it.
                tracing::debug!(error = %e, dir = %dir.display(), "replacing incomplete peer class dir");
                let _ = std::fs::remove_dir_all(dir);
            }
            Err(e) => return Err(Error::Io(format!("cannot move {} to {}: {e}", work.display(), dir.display()))),
        }
    }
    Err(Error::Io(format!("cannot publish the compiled peer to {}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_refuse_whitespace_and_empty() {
        assert_eq!(words(&["a", "b"]).as_deref(), Ok("a b"));
        assert!(matches!(words(&["a", "b c"]), Err(Error::InvalidArgument(_))));
        assert!(matches!(words(&["a", ""]), Err(Error::InvalidArgument(_))));
        assert!(matches!(words(&["a\n"]), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn routes_ok_and_err_answers() {
        let shared = Shared::default();
        let (tx1, mut rx1) = oneshot::channel();
        let (tx2, mut rx2) = oneshot::channel();
        {
            let mut st = lock(&shared.state);
            st.pending.insert(1, ("ping".into(), tx1));
            st.pending.insert(2, ("mutex.release a h".into(), tx2));
        }
        shared.route("2 ERR IllegalStateException holder h holds nothing");
        shared.route("1 OK pong");
        shared.route("99 OK nobody waits");
        assert_eq!(rx1.try_recv().ok(), Some(Ok("pong".into())));
        assert_eq!(
            rx2.try_recv().ok(),
            Some(Err(Error::Peer("mutex.release a h: IllegalStateException: holder h holds nothing".into())))
        );
    }

    #[test]
    fn parses_atomic_results() {
        assert_eq!(
            parse_atomic::<i64>("true -1 4").ok(),
            Some(AtomicResult { succeeded: true, pre_value: -1, post_value: 4 })
        );
        assert!(parse_atomic::<i64>("true 1").is_err());
    }

    #[test]
    fn missing_jars_are_a_typed_error() {
        let empty = std::env::temp_dir().join(format!("zk-recipes-no-jars-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        std::env::set_var(JAR_DIR_ENV, &empty);
        let result = jar_classpath();
        std::env::remove_var(JAR_DIR_ENV);
        let _ = std::fs::remove_dir_all(&empty);
        match result {
            Err(Error::CuratorNotInstalled { searched, install_hint }) => {
                assert!(searched.contains("curator-recipes.jar"), "{searched}");
                assert_eq!(install_hint, "apt-get install -y default-jre-headless libcurator-recipes-java");
            }
            other => panic!("expected CuratorNotInstalled, got {other:?}"),
        }
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
