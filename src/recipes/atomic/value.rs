//! `DistributedAtomicValue`: the byte-level engine under the atomic counters.
//!
//! Each operation reads the node (or uses the value and version its own last write left),
//! computes the new bytes, and writes them with a version check. Contention on the version
//! is retried at once, with no sleep: it is not a failure of the connection. A refused write is
//! followed by a read of the node: sending that read behind every write instead (to save the
//! round trip) measured slower, as it adds a request to every successful write and makes
//! contending sessions retry faster, which only adds refused writes to the server's queue.
//!
//! # Exactly once across a lost reply
//! A versioned write whose reply is lost (connection loss) may or may not have been applied,
//! and retrying blindly would count it twice. So each write is a `multi` that also creates a
//! small persistent marker node `<path>/_txn_<instance>-<n>` (and deletes this instance's
//! previous marker, so at most one is left per instance). After a lost reply the marker tells
//! whether the write happened — also after a session expiry, which is why it is persistent.
//! Curator reads only the counter node's data, so the markers are invisible to it. Closing
//! the value (or dropping every clone) deletes the last marker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::{CreateMode, Error as ZkError, MultiWriteError, MultiWriteResult};

use crate::error::{Error, Result};
use crate::framework::{is_retryable, paths, Framework, IfExists};
use crate::recipes::layout;
use crate::recipes::locks::InterProcessMutex;
use crate::sync::lock;

use super::gate;
use super::queue::Turn;

/// How an atomic operation went (Curator's `AtomicValue` + `AtomicStats`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtomicValue<T> {
    /// Whether the value was changed (false: a compare failed, or the tries ran out).
    pub succeeded: bool,
    /// The value before the operation.
    pub pre_value: T,
    /// The value after it (equal to `pre_value` when it did not succeed).
    pub post_value: T,
    /// How many tries it took, and how long.
    pub stats: AtomicStats,
}

/// Tries and times of an atomic operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtomicStats {
    /// Optimistic (lock-free, versioned) attempts.
    pub optimistic_tries: u32,
    /// Attempts made while holding the promotion lock.
    pub promoted_tries: u32,
    /// Time spent in optimistic attempts.
    pub optimistic_time: Duration,
    /// Time spent holding or waiting for the promotion lock.
    pub promoted_time: Duration,
}

/// Promotion to a lock (Curator's `PromotedToLock`): when the optimistic tries run out, take an
/// [`InterProcessMutex`] at `lock_path` (waiting at most `timeout`) and try again under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromotedToLock {
    /// The lock's path.
    pub lock_path: String,
    /// How long to wait for the lock.
    pub timeout: Duration,
    /// How many attempts to make under the lock.
    pub tries: u32,
}

/// Options of an atomic value.
///
/// # Contention
/// A versioned write refused because another write came first is contention, not a failure:
/// it is never answered by sleeping. By default (`queue_on_contention`) an operation whose
/// first write is refused queues on a lock of its own value, `<path>/_lock_` (an
/// [`InterProcessMutex`], FIFO, woken by a watch), and writes from there: contenders then take
/// turns instead of each refusing the others' writes — with 16 contenders on one counter this
/// more than doubled the successful increments per second. Writers that do not queue (Curator
/// processes, other versions) stay correct: every write is still versioned. With
/// `queue_on_contention: false` refused writes are retried at once, up to `optimistic_tries`.
/// While queueing, optimistic writes also check the version of a gate node, `<path>/_gate_`
/// (persistent, created on first use), that a turn holder refused 8 times raises, so that
/// sessions closer to the leader cannot keep the turn from ever writing.
/// A `promoted` lock (Curator's `PromotedToLock`) takes precedence: `optimistic_tries`
/// optimistic attempts first, then the given lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtomicOptions {
    /// Attempts of an operation (default 10,000): optimistic ones before giving up or
    /// promoting; when queueing on contention, the attempts made in the queue's turn.
    pub optimistic_tries: u32,
    /// Optional promotion to a lock.
    pub promoted: Option<PromotedToLock>,
    /// Queue on the value's own lock after a refused write (default `true`).
    pub queue_on_contention: bool,
}

impl Default for AtomicOptions {
    fn default() -> Self {
        Self { optimistic_tries: 10_000, promoted: None, queue_on_contention: true }
    }
}

/// A byte value stored in one node, changed atomically: Curator's `DistributedAtomicValue`.
///
/// # Curator compatibility
/// One persistent node holding the raw bytes; a missing node or empty data reads as empty.
#[derive(Debug, Clone)]
pub struct DistributedAtomicValue {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    fw: Framework,
    path: String,
    options: AtomicOptions,
    instance: String,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The value and version our last successful write left (a guess; the version check
    /// catches it when stale).
    cached: Option<(Vec<u8>, i32)>,
    /// Our latest marker node, deleted by our next write.
    marker: Option<String>,
    next: u64,
    /// The gate's version our optimistic writes check (queueing only; `None`: to be read).
    gate: Option<i32>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(marker) = lock(&self.state).marker.take() {
            self.fw.delete_in_background(marker, None);
        }
    }
}

/// The outcome of one write attempt.
enum Attempt {
    Written(i32),
    Contended,
    /// Our queue turn's node is gone (with an expired session): write without it.
    TurnGone,
}

/// Where a write stands: optimistic (checking the gate's version, when it has one), or in
/// our queue turn (giving back its node, while it has one).
#[derive(Clone, Copy)]
enum Place<'a> {
    Optimistic { gate: Option<i32> },
    InTurn { release: Option<&'a str> },
}

/// Where an operation starts from: a value and version to write from, and whether they are
/// only a guess (the value our last write left).
struct Start {
    known: Option<(Vec<u8>, Option<i32>)>,
    guessed: bool,
}

impl DistributedAtomicValue {
    /// A value at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; [`Error::InvalidArgument`] for zero optimistic tries or an
    /// invalid promotion lock path.
    pub fn new(fw: &Framework, path: &str, options: AtomicOptions) -> Result<Self> {
        paths::validate_recipe_path(path)?;
        if options.optimistic_tries == 0 {
            return Err(Error::InvalidArgument("optimistic tries must be at least 1".into()));
        }
        if let Some(p) = &options.promoted {
            paths::validate_recipe_path(&p.lock_path)?;
            if p.tries == 0 {
                return Err(Error::InvalidArgument("promoted tries must be at least 1".into()));
            }
        }
        let instance = uuid::Uuid::new_v4().simple().to_string();
        Ok(Self {
            inner: Arc::new(Inner {
                fw: fw.clone(),
                path: path.to_string(),
                options,
                instance,
                state: Mutex::default(),
            }),
        })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The framework the value was made on.
    pub(super) fn framework(&self) -> &Framework {
        &self.inner.fw
    }

    /// The options the value was made with.
    pub(super) fn options(&self) -> &AtomicOptions {
        &self.inner.options
    }

    /// The current bytes (empty when the node is missing).
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn get(&self) -> Result<Vec<u8>> {
        Ok(self.read().await?.0)
    }

    async fn read(&self) -> Result<(Vec<u8>, Option<i32>)> {
        let read = self.inner.fw.get_data(&self.inner.path).await.if_exists()?;
        Ok(read.map_or((Vec::new(), None), |(data, stat)| (data, Some(stat.version))))
    }

    /// Sets `new` whatever the current value (Curator's `forceSet`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for empty bytes; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    pub async fn force_set(&self, new: &[u8]) -> Result<()> {
        check_value(new)?;
        let result = self.apply(|_| Some(new.to_vec())).await?;
        match result.succeeded {
            true => Ok(()),
            false => Err(Error::Timeout(Duration::ZERO)),
        }
    }

    /// Sets `new` if the current bytes equal `expected` (a missing node equals empty bytes).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for empty `new`; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn compare_and_set(&self, expected: &[u8], new: &[u8]) -> Result<AtomicValue<Vec<u8>>> {
        check_value(new)?;
        self.apply(|current| (current == expected).then(|| new.to_vec())).await
    }

    /// Sets `new` unconditionally through the optimistic loop, reporting the value it replaced
    /// (Curator's `trySet`).
    ///
    /// # Errors
    /// As [`compare_and_set`](Self::compare_and_set).
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn try_set(&self, new: &[u8]) -> Result<AtomicValue<Vec<u8>>> {
        check_value(new)?;
        self.apply(|_| Some(new.to_vec())).await
    }

    /// Creates the node with `value` if it does not exist; `false` when it already did.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for empty bytes; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn initialize(&self, value: &[u8]) -> Result<bool> {
        check_value(value)?;
        match self.inner.fw.create(&self.inner.path, value, CreateMode::Persistent).await {
            Ok(_) => Ok(true),
            Err(Error::ZooKeeper(ZkError::NodeExists)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes this instance's last marker node now (also done when the last clone drops).
    ///
    /// # Errors
    /// The delete's error (it then continues in the background).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn close(&self) -> Result<()> {
        let marker = lock(&self.inner.state).marker.take();
        match marker {
            Some(m) => self.inner.fw.delete_guaranteed(&m).await,
            None => Ok(()),
        }
    }

    /// The optimistic loop, then the queue or the promoted lock. `compute` maps the current
    /// bytes to the new ones, or `None` to stop without writing.
    pub(crate) async fn apply<F>(&self, mut compute: F) -> Result<AtomicValue<Vec<u8>>>
    where
        F: FnMut(&[u8]) -> Option<Vec<u8>>,
    {
        let options = &self.inner.options;
        let queueing = options.promoted.is_none() && options.queue_on_contention;
        let optimistic = match (&options.promoted, queueing) {
            (Some(_), _) | (None, false) => options.optimistic_tries,
            // One optimistic write first, also while contention lasts: queueing at once after a
            // wait (a strict FIFO) was measured at half the throughput, as every increment then
            // waits a hand-off, while a writer that just wrote most often holds the current
            // version and writes again at once.
            (None, true) => 1,
        };
        let mut stats = AtomicStats::default();
        let started = Instant::now();
        let gate = match queueing {
            true => self.gate().await?,
            false => None,
        };
        let outcome =
            self.attempts(&mut compute, optimistic, &mut stats.optimistic_tries, self.cached(), gate, None).await;
        stats.optimistic_time = started.elapsed();
        let mut outcome = outcome?;
        if !outcome.succeeded && outcome.computed {
            let started = Instant::now();
            if queueing {
                outcome = self.queued(&mut compute, &mut stats.promoted_tries).await?;
            } else if let Some(p) = &options.promoted {
                outcome = self.promoted(&mut compute, p, &mut stats.promoted_tries).await?.unwrap_or(outcome);
            }
            stats.promoted_time = started.elapsed();
        }
        Ok(AtomicValue { succeeded: outcome.succeeded, pre_value: outcome.pre, post_value: outcome.post, stats })
    }

    /// The gate's version, as last known or read now (see [`gate`]).
    async fn gate(&self) -> Result<Option<i32>> {
        if let Some(known) = lock(&self.inner.state).gate {
            return Ok(Some(known));
        }
        let read = gate::version(&self.inner.fw, &self.inner.path).await?;
        lock(&self.inner.state).gate = Some(read);
        Ok(Some(read))
    }

    /// Where an optimistic operation starts: the value our last write left, as a guess.
    fn cached(&self) -> Start {
        let known = lock(&self.inner.state).cached.clone().map(|(v, ver)| (v, Some(ver)));
        Start { guessed: known.is_some(), known }
    }

    /// Attempts in our turn on the value's own queue; the turn is given back by the write.
    async fn queued<F>(&self, compute: &mut F, counter: &mut u32) -> Result<Outcome>
    where
        F: FnMut(&[u8]) -> Option<Vec<u8>>,
    {
        let mut turn = Turn::take(&self.inner.fw, &self.inner.path).await?;
        let start = match turn.prefetched.take() {
            // read after everyone before us in the queue wrote: the server's value
            Some(read) => {
                Start { known: Some(read.map_or((Vec::new(), None), |(v, ver)| (v, Some(ver)))), guessed: false }
            }
            // handed over without a listing: someone wrote since our last write, if we waited
            None if turn.waited => Start { known: None, guessed: false },
            None => self.cached(),
        };
        self.attempts(compute, self.inner.options.optimistic_tries, counter, start, None, Some(&mut turn)).await
    }

    /// Attempts under Curator's promoted lock; `None` when it was not had in time.
    async fn promoted<F>(&self, compute: &mut F, p: &PromotedToLock, counter: &mut u32) -> Result<Option<Outcome>>
    where
        F: FnMut(&[u8]) -> Option<Vec<u8>>,
    {
        let mutex = InterProcessMutex::new(&self.inner.fw, &p.lock_path)?;
        let Some(guard) = mutex.acquire_timeout(p.timeout).await? else { return Ok(None) };
        let start = Start { known: None, guessed: false };
        let under_lock = self.attempts(compute, p.tries, counter, start, None, None).await;
        // The value's outcome is what counts: a release that fails (its delete goes on in the
        // background) must not report a write that happened as failed.
        if let Err(e) = guard.release().await {
            tracing::debug!(error = %e, "atomic value: releasing the promoted lock");
        }
        under_lock.map(Some)
    }

    async fn attempts<F>(
        &self,
        compute: &mut F,
        tries: u32,
        counter: &mut u32,
        start: Start,
        gate: Option<i32>,
        mut turn: Option<&mut Turn>,
    ) -> Result<Outcome>
    where
        F: FnMut(&[u8]) -> Option<Vec<u8>>,
    {
        let Start { known: mut current, mut guessed } = start;
        // A guessed value: a write from it is refused when it is stale, but a decision not to
        // write must come from the server's value.
        let mut last = Vec::new();
        let mut refused_in_turn = 0;
        while *counter < tries {
            let (value, version) = match current.take() {
                Some(c) => c,
                None => self.read().await?,
            };
            let Some(new) = compute(&value) else {
                if std::mem::take(&mut guessed) {
                    continue; // read the server's value
                }
                return Ok(Outcome { succeeded: false, computed: false, pre: value.clone(), post: value });
            };
            guessed = false;
            *counter += 1;
            let place = match turn.as_deref() {
                Some(turn) => Place::InTurn { release: turn.node() },
                None => Place::Optimistic { gate },
            };
            match self.write(&new, version, place).await? {
                Attempt::Written(version) => {
                    if let Some(turn) = turn.as_deref_mut() {
                        turn.node_gone(); // given back by the write
                    }
                    lock(&self.inner.state).cached = Some((new.clone(), version));
                    return Ok(Outcome { succeeded: true, computed: true, pre: value, post: new });
                }
                Attempt::Contended => {
                    lock(&self.inner.state).cached = None;
                    last = value;
                    if turn.is_some() {
                        refused_in_turn += 1;
                        if refused_in_turn == gate::RAISE_AFTER {
                            // optimistic writers keep winning: close the gate, then read
                            let (fw, path) = (&self.inner.fw, &self.inner.path);
                            current = Some(gate::raise_and_read(fw, &gate::path(path), path).await?);
                        }
                    }
                }
                Attempt::TurnGone => {
                    // our lock node went with our session: the write alone still is correct
                    if let Some(turn) = turn.as_deref_mut() {
                        turn.node_gone();
                    }
                    current = Some((value, version));
                    *counter -= 1;
                }
            }
        }
        Ok(Outcome { succeeded: false, computed: true, pre: last.clone(), post: last })
    }

    /// One versioned write (creating the node first when missing), exactly once across lost
    /// replies; in the same transaction, an optimistic write checks the gate's version and a
    /// write in our turn deletes the turn's node.
    async fn write(&self, new: &[u8], version: Option<i32>, place: Place<'_>) -> Result<Attempt> {
        let fw = &self.inner.fw;
        let (gate, release) = match place {
            Place::Optimistic { gate } => (gate, None),
            Place::InTurn { release } => (None, release),
        };
        let gate_path = gate.map(|_| gate::path(&self.inner.path));
        let Some(version) = version else {
            // Create the node empty (idempotent: empty reads as the initial value), then write
            // with a version check like any other write.
            match fw.create(&self.inner.path, &[], CreateMode::Persistent).await {
                Ok(_) | Err(Error::ZooKeeper(ZkError::NodeExists)) => return Ok(Attempt::Contended),
                Err(e) => return Err(e),
            }
        };
        let (marker, previous) = {
            let mut state = lock(&self.inner.state);
            state.next += 1;
            let marker = paths::join(
                &self.inner.path,
                &format!("{}{}-{}", layout::ATOMIC_TXN_MARKER, self.inner.instance, state.next),
            );
            (marker, state.marker.clone())
        };
        let options = fw.create_options(CreateMode::Persistent);
        // Set while a write was sent whose reply we did not get and whose marker we could not
        // read yet: if the retries run out then, the outcome is unknown and we say so.
        let in_doubt = AtomicBool::new(false);
        // the transaction's operations: setData, [check gate], create marker, [delete previous
        // marker], [delete turn node]
        let marker_index = 1 + usize::from(gate.is_some());
        let previous_index = previous.as_ref().map(|_| marker_index + 1);
        let release_index = marker_index + 1 + usize::from(previous.is_some());
        let written = fw
            .retry(|client| {
                let (marker, previous, options, in_doubt, gate_path) =
                    (&marker, &previous, &options, &in_doubt, &gate_path);
                async move {
                    // After a lost reply, the marker tells whether that write happened.
                    if in_doubt.load(Ordering::SeqCst) {
                        if client.check_stat(marker).await?.is_some() {
                            return Ok(Written::Yes(None));
                        }
                        in_doubt.store(false, Ordering::SeqCst);
                    }
                    let mut multi = client.new_multi_writer();
                    multi.add_set_data(&self.inner.path, new, Some(version))?;
                    if let (Some(path), Some(gate)) = (gate_path, gate) {
                        multi.add_check_version(path, gate)?;
                    }
                    multi.add_create(marker, &[], options)?;
                    if let Some(prev) = previous {
                        multi.add_delete(prev, None)?;
                    }
                    if let Some(node) = release {
                        multi.add_delete(node, None)?;
                    }
                    let committed = multi.commit().await;
                    if let Err(MultiWriteError::RequestFailed { source }) = &committed {
                        if is_retryable(source) {
                            in_doubt.store(true, Ordering::SeqCst);
                        }
                    }
                    match committed {
                        Ok(results) => Ok(Written::Yes(results.into_iter().find_map(|r| match r {
                            MultiWriteResult::SetData { stat } => Some(stat.version),
                            _ => None,
                        }))),
                        Err(MultiWriteError::RequestFailed { source }) => Err(source),
                        Err(MultiWriteError::OperationFailed {
                            index: 0,
                            source: ZkError::BadVersion | ZkError::NoNode,
                        }) => Ok(Written::Contended),
                        Err(MultiWriteError::OperationFailed {
                            index: 1,
                            source: ZkError::BadVersion | ZkError::NoNode,
                        }) if gate.is_some() => Ok(Written::GateClosed),
                        Err(MultiWriteError::OperationFailed { index, source: ZkError::NoNode })
                            if release.is_some() && index == release_index =>
                        {
                            Ok(Written::TurnGone)
                        }
                        Err(MultiWriteError::OperationFailed { index, source: ZkError::NoNode })
                            if Some(index) == previous_index =>
                        {
                            Ok(Written::PreviousMarkerGone)
                        }
                        Err(MultiWriteError::OperationFailed { source, .. }) => Ok(Written::Refused(source)),
                    }
                }
            })
            .await;
        let written = match written {
            Err(_) if in_doubt.load(Ordering::SeqCst) => {
                // The caller is told; the evidence is no longer needed. Our previous marker is
                // either gone with the write or still ours to delete next time.
                lock(&self.inner.state).cached = None;
                fw.delete_in_background(marker, None);
                return Err(Error::OutcomeUnknown { path: self.inner.path.clone() });
            }
            other => other?,
        };
        let mut state = lock(&self.inner.state);
        match written {
            Written::Yes(new_version) => {
                state.marker = Some(marker);
                Ok(Attempt::Written(new_version.unwrap_or(version + 1)))
            }
            Written::Contended => Ok(Attempt::Contended),
            Written::GateClosed => {
                // a turn holder raised it (or it is gone): queue, and read it again next time
                state.gate = None;
                Ok(Attempt::Contended)
            }
            Written::PreviousMarkerGone => {
                // removed by someone else: forget it and try again
                state.marker = None;
                Ok(Attempt::Contended)
            }
            Written::TurnGone => Ok(Attempt::TurnGone),
            Written::Refused(e) => Err(e.into()),
        }
    }
}

enum Written {
    Yes(Option<i32>),
    Contended,
    GateClosed,
    PreviousMarkerGone,
    TurnGone,
    Refused(ZkError),
}

struct Outcome {
    succeeded: bool,
    computed: bool,
    pre: Vec<u8>,
    post: Vec<u8>,
}

fn check_value(value: &[u8]) -> Result<()> {
    if value.is_empty() {
        return Err(Error::InvalidArgument("an atomic value cannot be set to empty bytes".into()));
    }
    Ok(())
}
