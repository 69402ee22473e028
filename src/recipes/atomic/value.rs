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
//! previous markers). After a lost reply the marker tells whether the write happened — also
//! after a session expiry, which is why it is persistent. Curator reads only the counter
//! node's data, so the markers are invisible to it. Closing the value (or dropping every
//! clone) deletes its markers.
//!
//! An addition that queues fixes its marker's name in its queue node's name, and whoever
//! writes it — its own session in its turn, or the turn holder ahead of it — creates that
//! marker holding the value before the addition (see `joint.rs`). A marker created by another
//! session's write is deleted by our next write, with our previous one, in its transaction (so
//! a queued addition costs no delete of its own); at most 32 wait for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::framework::{paths, CreateMode, Framework, IfExists, MultiError, WriteAnswer};
use crate::recipes::layout;
use crate::recipes::locks::InterProcessMutex;
use crate::sync::lock;
use crate::ZooKeeperError;

use super::gate;
use super::joint::{self, Addition, Joiner};
use super::queue::{Taken, Turn};
use super::txn::{Joined, Op, Txn};

/// How an atomic operation went (Curator's `AtomicValue` + `AtomicStats`).
///
/// An operation that could not write because its tries ran out is not an `AtomicValue` but
/// [`Error::Contended`]: an `Ok` always means the operation took place as asked.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedAtomicLong;
///
/// let counter = DistributedAtomicLong::new(&fw, "/counters/builds")?;
/// let result = counter.compare_and_set(41, 42).await?;
/// if result.succeeded {
///     println!("set to {}", result.post_value);
/// } else {
///     println!("it was {}, not 41", result.pre_value);     // an answer, not an error
/// }
/// println!("{} optimistic tries", result.stats.optimistic_tries);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtomicValue<T> {
    /// Whether the value was changed: `false` only when a `compare_and_set`'s compare failed
    /// (the current value was not the expected one), an answer, not a failure. Every other
    /// operation that returns `Ok` changed the value.
    pub succeeded: bool,
    /// The value before the operation (for a failed compare: the current value).
    pub pre_value: T,
    /// The value after it (equal to `pre_value` when the compare failed).
    pub post_value: T,
    /// How many tries it took, and how long.
    pub stats: AtomicStats,
}

/// Tries and times of an atomic operation.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedAtomicLong;
///
/// let counter = DistributedAtomicLong::new(&fw, "/counters/hits")?;
/// let stats = counter.increment().await?.stats;
/// println!(
///     "{} optimistic tries in {:?}, {} under the lock, written by another session: {}",
///     stats.optimistic_tries, stats.optimistic_time, stats.promoted_tries, stats.applied_by_another
/// );
/// # Ok(()) }
/// ```
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
    /// Whether the change was learnt from its marker rather than from its own write's reply:
    /// an addition that queued and was applied by the turn holder ahead of it (see
    /// [`DistributedAtomicLong`](crate::DistributedAtomicLong)'s *Combining*), or, rarely, a
    /// queued addition's own write whose reply was lost.
    pub applied_by_another: bool,
}

/// Promotion to a lock (Curator's `PromotedToLock`): when the optimistic tries run out, take an
/// [`InterProcessMutex`] at `lock_path` (waiting at most `timeout`) and try again under it.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::counter::{AtomicOptions, DistributedAtomicNumber, PromotedToLock};
///
/// // 3 optimistic tries, then take a lock (Curator's PromotedToLock) and try 5 times under it
/// let options = AtomicOptions {
///     optimistic_tries: 3,
///     promoted: Some(PromotedToLock { lock_path: "/locks/counter".into(), timeout: Duration::from_secs(5), tries: 5 }),
///     ..AtomicOptions::default()
/// };
/// let counter = DistributedAtomicNumber::<i64>::with_options(&fw, "/counters/promoted", options)?;
/// counter.increment().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromotedToLock {
    /// The lock's path.
    pub lock_path: String,
    /// How long to wait for the lock, as
    /// [`InterProcessMutex::acquire_timeout`](crate::InterProcessMutex::acquire_timeout) takes
    /// it: zero is a try, `Duration::MAX` no bound.
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
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::counter::{AtomicOptions, DistributedAtomicNumber};
/// use zk_recipes::Error;
///
/// // retry refused writes at once, at most 20 times, instead of queueing on the value's lock
/// let options = AtomicOptions { optimistic_tries: 20, queue_on_contention: false, ..AtomicOptions::default() };
/// let counter = DistributedAtomicNumber::<i64>::with_options(&fw, "/counters/fast", options)?;
/// match counter.increment().await {
///     Ok(value) => println!("now {}", value.post_value),
///     Err(e @ Error::Contended { .. }) => eprintln!("gave up: {e}"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[must_use = "options do nothing until given to a counter"]
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
/// Under [`enable_compression`](crate::FrameworkBuilder::enable_compression) (or on a
/// [`compressed`](crate::Framework::compressed) handle) the node holds them gzip-compressed,
/// as Curator 5.8's `enableCompression()` stores them, and reads decompress them (data that
/// is not gzip is [`Error::CorruptData`], as in Curator); empty data still reads as empty.
/// The exactly-once markers and the queue's nodes under it stay uncompressed: only this crate
/// reads them.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::{AtomicOptions, DistributedAtomicValue};
///
/// let config = DistributedAtomicValue::new(&fw, "/config/mode", AtomicOptions::default())?;
/// config.initialize(b"blue").await?;
/// let swapped = config.compare_and_set(b"blue", b"green").await?;
/// println!("swapped: {}, now {:?}", swapped.succeeded, String::from_utf8_lossy(&config.get().await?));
/// # Ok(()) }
/// ```
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
    /// Our markers still there, the latest last: deleted by our next write (a queued addition
    /// written by another session's write leaves its marker to our next write, at most
    /// [`MARKERS_KEPT`] of them).
    markers: Vec<String>,
    next: u64,
    /// The gate's version our optimistic writes check (queueing only; `None`: to be read).
    gate: Option<i32>,
    /// Our last addition was written together with others' in the queue: the next one queues
    /// at once.
    crowded: bool,
}

/// Markers of ours left for our next write to delete, beyond which the oldest is deleted in
/// the background (a request of its own).
const MARKERS_KEPT: usize = 32;

impl Drop for Inner {
    fn drop(&mut self) {
        for marker in std::mem::take(&mut lock(&self.state).markers) {
            self.fw.delete_in_background(marker, None);
        }
    }
}

/// The outcome of one write attempt.
enum Attempt {
    /// Written: the new version, and the bytes written.
    Written(i32, Vec<u8>),
    /// The node was missing and is there now (ours or another's create): not a refused
    /// write, so it costs no try; the next attempt reads it.
    Created,
    Contended,
    /// Our queue turn's node is gone (with an expired session, or with a write that applied
    /// our addition).
    TurnGone,
    /// The k-th joining addition left the queue, or was written by another: write without it.
    JoinerGone(usize),
    /// Our addition's marker exists: it was applied (the marker's data, the value before it).
    Applied(Vec<u8>),
}

/// Where a write stands: optimistic (checking the gate's version, when it has one), or in
/// our queue turn (giving back its node, while it has one; an addition with the additions
/// that joined it).
#[derive(Clone, Copy)]
enum Place<'a> {
    Optimistic { gate: Option<i32> },
    InTurn { release: Option<&'a str>, joint: Option<&'a Joint>, joiners: &'a [Joiner] },
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
            return Err(Error::invalid("optimistic_tries", "optimistic tries must be at least 1"));
        }
        if let Some(p) = &options.promoted {
            paths::validate_recipe_path(&p.lock_path)?;
            if p.tries == 0 {
                return Err(Error::invalid("promoted_tries", "promoted tries must be at least 1"));
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
        let read = self.inner.fw.get_data_plain(&self.inner.path).await.if_exists()?;
        read.map_or(Ok((Vec::new(), None)), |(data, stat)| Ok((self.value_of(data)?, Some(stat.version))))
    }

    /// The value stored as `stored` in the value's node: decompressed under a compressing
    /// framework (Curator 5.8's `enableCompression()` compresses it), where empty data — the
    /// node as a write from nothing or the gate creates it — still reads as empty.
    ///
    /// # Errors
    /// [`Error::CorruptData`] for data a compressing framework cannot decompress.
    pub(super) fn value_of(&self, stored: Vec<u8>) -> Result<Vec<u8>> {
        self.inner.fw.decode_or_empty(&self.inner.path, stored)
    }

    /// Sets `new` whatever the current value (Curator's `forceSet`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for empty bytes; [`Error::Contended`] when the tries ran
    /// out; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    pub async fn force_set(&self, new: &[u8]) -> Result<()> {
        check_value(new)?;
        self.apply(|_| Some(new.to_vec())).await.map(drop)
    }

    /// Sets `new` if the current bytes equal `expected` (a missing node equals empty bytes):
    /// [`succeeded`](AtomicValue::succeeded) tells whether they did.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for empty `new`; [`Error::Contended`] when the tries ran out
    /// (other writers kept changing the value); the framework's errors.
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
        let stored = self.inner.fw.encode(&self.inner.path, value)?;
        match self.inner.fw.create_if_absent(&self.inner.path, &stored, CreateMode::Persistent).await {
            Ok(_) => Ok(true),
            Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes this instance's marker nodes now (also done, in the background, when the last
    /// clone drops); resolves once they are deleted (or handed to the guaranteed background
    /// delete when a delete fails). There is no background task to stop. Idempotent: a
    /// second close is `Ok(())`; the value stays usable (a later update makes a new marker).
    ///
    /// # Errors
    /// The delete's error (it then continues in the background).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn close(&self) -> Result<()> {
        let markers = std::mem::take(&mut lock(&self.inner.state).markers);
        let mut result = Ok(());
        for marker in markers {
            if let Err(e) = self.inner.fw.delete_guaranteed(&marker).await {
                result = result.and(Err(e));
            }
        }
        result
    }

    /// The optimistic loop, then the queue or the promoted lock. `compute` maps the current
    /// bytes to the new ones, or `None` to stop without writing.
    pub(crate) async fn apply<F>(&self, compute: F) -> Result<AtomicValue<Vec<u8>>>
    where
        F: FnMut(&[u8]) -> Option<Vec<u8>>,
    {
        self.run(compute, None).await
    }

    /// Adds `delta` (a number's big-endian bytes: 4 or 8 of them) to the number stored here,
    /// as [`apply`](Self::apply) would, except that in the queue the addition joins others
    /// (see `joint.rs`): a turn holder ahead of it may write it with its own. Data that is not
    /// a number of that width is not written (the outcome shows it as the value before).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a delta that is not 4 or 8 bytes; as `apply`.
    pub(crate) async fn apply_addition(&self, delta: &[u8]) -> Result<AtomicValue<Vec<u8>>> {
        let Some(addition) = Addition::from_bytes(delta) else {
            return Err(Error::invalid("delta", "an addition is of 4 or 8 bytes"));
        };
        self.run(|bytes| addition.applied_to(bytes), Some(addition)).await
    }

    async fn run<F>(&self, mut compute: F, addition: Option<Addition>) -> Result<AtomicValue<Vec<u8>>>
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
        // after an addition written with others', the next one queues at once: under that
        // contention its optimistic write would only be refused, and would race the turn
        let crowded = addition.is_some() && queueing && lock(&self.inner.state).crowded;
        let outcome = if crowded {
            Ok(Outcome { succeeded: false, by_another: false, computed: true, pre: Vec::new(), post: Vec::new() })
        } else {
            let first = Attempts { tries: optimistic, start: self.cached(), gate, turn: None };
            self.attempts(&mut compute, first, &mut stats.optimistic_tries).await
        };
        stats.optimistic_time = started.elapsed();
        let mut outcome = outcome?;
        if !outcome.succeeded && outcome.computed {
            let started = Instant::now();
            if queueing {
                outcome = match addition {
                    Some(addition) => self.joined(&mut compute, addition, &mut stats.promoted_tries).await?,
                    None => self.queued(&mut compute, &mut stats.promoted_tries).await?,
                };
            } else if let Some(p) = &options.promoted {
                outcome = self.promoted(&mut compute, p, &mut stats.promoted_tries).await?.unwrap_or(outcome);
            }
            stats.promoted_time = started.elapsed();
        }
        stats.applied_by_another = outcome.by_another;
        if !outcome.succeeded && outcome.computed {
            // the tries ran out: never an `Ok` that silently did not happen
            let attempts = stats.optimistic_tries.saturating_add(stats.promoted_tries);
            return Err(Error::Contended { path: self.inner.path.clone(), attempts });
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

    /// Where a write in our turn starts.
    fn turn_start(&self, turn: &mut Turn) -> Result<Start> {
        Ok(match turn.prefetched.take() {
            // read after everyone before us in the queue wrote: the server's value
            Some(read) => {
                let known = match read {
                    Some((stored, ver)) => (self.value_of(stored)?, Some(ver)),
                    None => (Vec::new(), None),
                };
                Start { known: Some(known), guessed: false }
            }
            // handed over without a listing: someone wrote since our last write, if we waited
            None if turn.waited => Start { known: None, guessed: false },
            None => self.cached(),
        })
    }

    /// Attempts in our turn on the value's own queue; the turn is given back by the write.
    async fn queued<F>(&self, compute: &mut F, counter: &mut u32) -> Result<Outcome>
    where
        F: FnMut(&[u8]) -> Option<Vec<u8>>,
    {
        let mut turn = Turn::take(&self.inner.fw, &self.inner.path).await?;
        let start = self.turn_start(&mut turn)?;
        let tries = self.inner.options.optimistic_tries;
        let joint = InTurn { turn: &mut turn, joint: None };
        self.attempts(compute, Attempts { tries, start, gate: None, turn: Some(joint) }, counter).await
    }

    /// An addition's place in the queue: applied by a turn holder ahead of us, or written in
    /// our own turn with the additions queued behind us (see `joint.rs`).
    async fn joined<F>(&self, compute: &mut F, addition: Addition, counter: &mut u32) -> Result<Outcome>
    where
        F: FnMut(&[u8]) -> Option<Vec<u8>>,
    {
        let (fw, path, tries) = (&self.inner.fw, &self.inner.path, self.inner.options.optimistic_tries);
        loop {
            let n = self.next_marker();
            let marker = paths::join(path, &joint::marker_name(&self.inner.instance, n));
            let name = addition.queue_name(&self.inner.instance, n);
            let taken = match Turn::take_joint(fw, path, addition, &name, &marker).await {
                Ok(taken) => taken,
                // whether a turn holder applied it meanwhile, only the marker can tell
                Err(e) => match fw.get_data_plain(&marker).await.if_exists() {
                    Ok(Some((before, _))) => Taken::Applied(before),
                    _ => {
                        tracing::debug!(error = %e, %path, "atomic value: queued addition in doubt");
                        return Err(Error::OutcomeUnknown { path: path.clone() });
                    }
                },
            };
            match taken {
                Taken::Applied(before) => return Ok(self.applied_by_another(before, marker, addition)),
                Taken::Gone => {
                    *counter += 1;
                    if *counter >= tries {
                        let (value, _) = self.read().await?;
                        return Ok(Outcome {
                            succeeded: false,
                            by_another: false,
                            computed: true,
                            pre: value.clone(),
                            post: value,
                        });
                    }
                }
                Taken::Held(mut turn) => {
                    let start = self.turn_start(&mut turn)?;
                    let joint = Some(Joint { addition, marker });
                    let in_turn = InTurn { turn: &mut turn, joint };
                    return self
                        .attempts(compute, Attempts { tries, start, gate: None, turn: Some(in_turn) }, counter)
                        .await;
                }
            }
        }
    }

    /// A new marker number of this instance.
    fn next_marker(&self) -> u64 {
        let mut state = lock(&self.inner.state);
        state.next += 1;
        state.next
    }

    /// Our addition was applied with `marker` by another writer (or by a write of ours whose
    /// reply was lost): `before` is the value it found. The marker is ours now, for our next
    /// write to delete with the others.
    fn applied_by_another(&self, before: Vec<u8>, marker: String, addition: Addition) -> Outcome {
        let oldest = {
            let mut state = lock(&self.inner.state);
            state.cached = None;
            state.crowded = true;
            state.markers.push(marker);
            let beyond = state.markers.len().saturating_sub(MARKERS_KEPT);
            state.markers.drain(..beyond).collect::<Vec<_>>()
        };
        for marker in oldest {
            self.inner.fw.delete_in_background(marker, None);
        }
        let after = addition.applied_to(&before).unwrap_or_else(|| before.clone());
        Outcome { succeeded: true, by_another: true, computed: true, pre: before, post: after }
    }

    /// Attempts under Curator's promoted lock; `None` when it was not had in time.
    async fn promoted<F>(&self, compute: &mut F, p: &PromotedToLock, counter: &mut u32) -> Result<Option<Outcome>>
    where
        F: FnMut(&[u8]) -> Option<Vec<u8>>,
    {
        let mutex = InterProcessMutex::new(&self.inner.fw, &p.lock_path)?;
        let guard = match mutex.acquire_timeout(p.timeout).await {
            Ok(guard) => guard,
            Err(Error::Timeout { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let start = Start { known: None, guessed: false };
        let under_lock =
            self.attempts(compute, Attempts { tries: p.tries, start, gate: None, turn: None }, counter).await;
        // The value's outcome is what counts: a release that fails (its delete goes on in the
        // background) must not report a write that happened as failed.
        if let Err(e) = guard.release().await {
            tracing::debug!(error = %e, "atomic value: releasing the promoted lock");
        }
        under_lock.map(Some)
    }

    async fn attempts<F>(&self, compute: &mut F, how: Attempts<'_>, counter: &mut u32) -> Result<Outcome>
    where
        F: FnMut(&[u8]) -> Option<Vec<u8>>,
    {
        let Attempts { tries, start, gate, mut turn } = how;
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
                return Ok(Outcome {
                    succeeded: false,
                    by_another: false,
                    computed: false,
                    pre: value.clone(),
                    post: value,
                });
            };
            guessed = false;
            *counter += 1;
            let place = match turn.as_ref() {
                Some(t) => Place::InTurn { release: t.turn.node(), joint: t.joint.as_ref(), joiners: &t.turn.joiners },
                None => Place::Optimistic { gate },
            };
            match self.write(&value, &new, version, place).await? {
                Attempt::Written(version, written) => {
                    if let Some(t) = turn.as_mut() {
                        t.turn.node_gone(); // given back by the write
                    }
                    // what the node holds now: ours and the joined additions
                    lock(&self.inner.state).cached = Some((written, version));
                    return Ok(Outcome { succeeded: true, by_another: false, computed: true, pre: value, post: new });
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
                Attempt::Created => {
                    // the node exists now: read it and write, without counting a try
                    lock(&self.inner.state).cached = None;
                    *counter -= 1;
                }
                Attempt::JoinerGone(k) => {
                    // it left the queue (or was written by another): write without it
                    if let Some(t) = turn.as_mut() {
                        t.turn.joiners.remove(k);
                    }
                    current = Some((value, version));
                    *counter -= 1;
                }
                Attempt::TurnGone => {
                    // our lock node is gone: with our session, or with a write that applied our
                    // addition (its marker then says so); else the write alone still is correct
                    let Some(t) = turn.as_mut() else { continue };
                    t.turn.node_gone();
                    if let Some(joint) = &t.joint {
                        if let Some((before, _)) = self.inner.fw.get_data_plain(&joint.marker).await.if_exists()? {
                            return Ok(self.applied_by_another(before, joint.marker.clone(), joint.addition));
                        }
                    }
                    current = Some((value, version));
                    *counter -= 1;
                }
                Attempt::Applied(before) => {
                    // our addition's marker exists: it was applied, by a write of ours whose reply
                    // was lost or by another turn holder. That write deleted a queue node of
                    // ours, but not necessarily the one we hold the turn with (an addition
                    // queued again after a session loss may have had two): the turn is given
                    // back by deleting it (dropping the turn), never assumed gone.
                    if let Some(t) = turn.as_ref() {
                        if let Some(joint) = &t.joint {
                            return Ok(self.applied_by_another(before, joint.marker.clone(), joint.addition));
                        }
                    }
                    // (only a joint write's marker can exist before it is written)
                    return Err(Error::OutcomeUnknown { path: self.inner.path.clone() });
                }
            }
        }
        Ok(Outcome { succeeded: false, by_another: false, computed: true, pre: last.clone(), post: last })
    }

    /// One versioned write of `new` over `value` (creating the node first when missing),
    /// exactly once across lost replies; in the same transaction, an optimistic write checks
    /// the gate's version, and a write in our turn deletes the turn's node and writes the
    /// additions that joined it.
    async fn write(&self, value: &[u8], new: &[u8], version: Option<i32>, place: Place<'_>) -> Result<Attempt> {
        let fw = &self.inner.fw;
        let (gate, release, joint, joiners) = match place {
            Place::Optimistic { gate } => (gate, None, None, &[][..]),
            Place::InTurn { release, joint, joiners } => (None, release, joint, joiners),
        };
        let gate_path = gate.map(|_| gate::path(&self.inner.path));
        let Some(version) = version else {
            // Create the node empty (idempotent: empty reads as the initial value), then write
            // with a version check like any other write.
            let empty = fw.encode(&self.inner.path, &[])?;
            match fw.create_if_absent(&self.inner.path, &empty, CreateMode::Persistent).await {
                Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => return Ok(Attempt::Created),
                Err(e) => return Err(e),
            }
        };
        let (marker, previous): (String, Vec<String>) = {
            let mut state = lock(&self.inner.state);
            let marker = match joint {
                Some(joint) => joint.marker.clone(),
                None => {
                    state.next += 1;
                    paths::join(&self.inner.path, &joint::marker_name(&self.inner.instance, state.next))
                }
            };
            (marker, state.markers.clone())
        };
        // what each joining addition finds, in queue order, after ours; and the total
        let (mut total, mut joined) = (new.to_vec(), Vec::new());
        if joint.is_some() {
            let dir = paths::join(&self.inner.path, layout::ATOMIC_QUEUE);
            for j in joiners {
                // (joiners have our width, so this always applies; never write what does not)
                let Some(after) = j.addition.applied_to(&total) else { break };
                let marker = paths::join(&self.inner.path, &j.marker);
                joined.push(Joined {
                    marker,
                    before: std::mem::replace(&mut total, after),
                    node: paths::join(&dir, &j.node),
                });
            }
        }
        // the value's node as Curator 5.8 stores it (compressed under `enableCompression()`);
        // the markers stay plain: only this crate reads them
        let stored_new = fw.encode(&self.inner.path, &total)?;
        let txn = Txn {
            value_path: &self.inner.path,
            new: &stored_new,
            version,
            gate: gate_path.as_deref().zip(gate),
            marker: &marker,
            // a joint write's marker holds the value before its addition
            marker_data: if joint.is_some() { value } else { &[] },
            previous: &previous,
            release,
            joiners: &joined,
        };
        // Set while a write was sent whose reply we did not get and whose marker we could not
        // read yet: if the retries run out then, the outcome is unknown and we say so.
        let in_doubt = AtomicBool::new(false);
        let written = fw
            .request("write", &self.inner.path, |conn| {
                let (txn, in_doubt, marker) = (&txn, &in_doubt, &marker);
                async move {
                    // After a lost reply, the marker tells whether that write happened.
                    if in_doubt.load(Ordering::SeqCst) {
                        conn.caught_up(marker).await?;
                        if let Some((before, _)) = conn.get_data(marker).await.if_exists()? {
                            return Ok(Written::Marked(before));
                        }
                        in_doubt.store(false, Ordering::SeqCst);
                    }
                    match conn.multi(&txn.writes()).await {
                        Ok(results) => Ok(Written::Yes(results.into_iter().find_map(|r| match r {
                            WriteAnswer::Set(stat) => Some(stat.version),
                            _ => None,
                        }))),
                        Err(MultiError::Request(e)) => {
                            if e.is_retryable() {
                                in_doubt.store(true, Ordering::SeqCst);
                            }
                            Err(e)
                        }
                        Err(MultiError::Refused { index, error }) => Ok(Written::Failed(txn.op(index), error)),
                    }
                }
            })
            .await;
        let written = match written {
            Err(_) if in_doubt.load(Ordering::SeqCst) => {
                // The caller is told; the evidence is no longer needed (a joint write's marker
                // stays: it may be another writer's evidence). Our previous marker is either
                // gone with the write or still ours to delete next time.
                lock(&self.inner.state).cached = None;
                if joint.is_none() {
                    fw.delete_in_background(marker, None);
                }
                return Err(Error::OutcomeUnknown { path: self.inner.path.clone() });
            }
            other => other?,
        };
        let mut state = lock(&self.inner.state);
        match written {
            Written::Yes(new_version) => {
                state.markers.retain(|m| !previous.contains(m));
                state.markers.push(marker);
                state.crowded = joint.is_some() && !joined.is_empty();
                Ok(Attempt::Written(new_version.unwrap_or(version + 1), total))
            }
            Written::Marked(before) if joint.is_some() => Ok(Attempt::Applied(before)),
            Written::Marked(_) => {
                state.markers.retain(|m| !previous.contains(m));
                state.markers.push(marker);
                Ok(Attempt::Written(version + 1, total))
            }
            Written::Failed(Some(Op::Value), ZooKeeperError::BadVersion | ZooKeeperError::NoNode) => {
                Ok(Attempt::Contended)
            }
            Written::Failed(Some(Op::Gate), ZooKeeperError::BadVersion | ZooKeeperError::NoNode) => {
                // a turn holder raised it (or it is gone): queue, and read it again next time
                state.gate = None;
                Ok(Attempt::Contended)
            }
            Written::Failed(Some(Op::Marker), ZooKeeperError::NodeExists) if joint.is_some() => {
                drop(state);
                // applied already: the marker holds the value before our addition
                match fw.get_data_plain(&marker).await.if_exists()? {
                    Some((before, _)) => Ok(Attempt::Applied(before)),
                    None => Ok(Attempt::Contended), // (markers are deleted only by their owner)
                }
            }
            Written::Failed(Some(Op::Previous(k)), ZooKeeperError::NoNode) => {
                // removed by someone else: forget it and try again
                state.markers.retain(|m| *m != previous[k]);
                Ok(Attempt::Contended)
            }
            Written::Failed(Some(Op::Release), ZooKeeperError::NoNode) => Ok(Attempt::TurnGone),
            Written::Failed(
                Some(Op::JoinerMarker(k) | Op::JoinerNode(k)),
                ZooKeeperError::NodeExists | ZooKeeperError::NoNode,
            ) => Ok(Attempt::JoinerGone(k)),
            Written::Failed(_, e) => Err(Error::ZooKeeper(e)),
        }
    }
}

/// How to attempt: how many tries, from where, and in which place.
struct Attempts<'t> {
    tries: u32,
    start: Start,
    /// The gate's version an optimistic write checks.
    gate: Option<i32>,
    turn: Option<InTurn<'t>>,
}

/// Our turn, and for an addition what it joined with.
struct InTurn<'t> {
    turn: &'t mut Turn,
    joint: Option<Joint>,
}

/// A queued addition: what it adds, and its marker (a path).
struct Joint {
    addition: Addition,
    marker: String,
}

enum Written {
    Yes(Option<i32>),
    /// After a lost reply, the marker was found: its data.
    Marked(Vec<u8>),
    /// An operation failed (`None`: an index the transaction does not have).
    Failed(Option<Op>, ZooKeeperError),
}

struct Outcome {
    succeeded: bool,
    /// Applied by another session's write.
    by_another: bool,
    computed: bool,
    pre: Vec<u8>,
    post: Vec<u8>,
}

fn check_value(value: &[u8]) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid("value", "an atomic value cannot be set to empty bytes"));
    }
    Ok(())
}
