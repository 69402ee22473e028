//! `DistributedAtomicLong` and `DistributedAtomicInteger`: big-endian numbers on the value
//! engine, their updates combined per path (see `combine.rs`).

use std::sync::Arc;

use super::arith::{decode, AtomicNumber};
use super::combine::{Combiner, Combiners, Op, Single};
use super::value::{AtomicOptions, AtomicValue, DistributedAtomicValue};
use crate::error::Result;
use crate::framework::Framework;

/// A distributed atomic number: Curator's `DistributedAtomicLong` (`i64`, 8 bytes) and
/// `DistributedAtomicInteger` (`i32`, 4 bytes).
///
/// Every operation returns an [`AtomicValue`]: the value before and after, and the tries it
/// took (and, for [`compare_and_set`](Self::compare_and_set), whether the compare matched);
/// an operation whose tries ran out is [`Error::Contended`](crate::Error::Contended), never an `Ok` that did not
/// happen. Under contention no increment is lost or counted twice, also when a reply is lost
/// to a connection failure (see [`DistributedAtomicValue`]).
///
/// # Combining
/// Additions ([`increment`](Self::increment), [`decrement`](Self::decrement),
/// [`add`](Self::add), [`subtract`](Self::subtract)) made concurrently on one framework to
/// one path — through one handle, its clones, or other handles of the same type and options
/// for that path — are combined: while one write to the node is in flight, the additions
/// that arrive queue, and the next write carries their sum (one versioned `multi`, the same
/// write a single addition makes). Each caller still gets its own exact before and after
/// values: the callers of a batch are given consecutive slices of the change, in the order
/// they called, as if their additions had been written one by one at that point (the
/// [`stats`](AtomicValue::stats) are the batch's, the same for each). With many
/// tasks on one counter this multiplies the additions per second by the batch size; a lone
/// caller waits for no one and writes as before.
///
/// A batch is exactly once as a whole: when a write's reply is lost, its marker tells whether
/// it was applied — for every member — or for none, and then they are written again together.
/// An error ends the operation of every member alike.
///
/// [`compare_and_set`](Self::compare_and_set), [`try_set`](Self::try_set) and
/// [`force_set`](Self::force_set) are not combined: each is written alone, in its place in
/// the same queue (additions called after it wait for it, and it waits for those called
/// before it). Handles on other frameworks (sessions), other processes and Curator write
/// their own versioned writes and take turns with these as with any writer.
///
/// Across sessions, additions combine in the counter's queue: an addition whose optimistic
/// write was refused queues with its delta in its queue node's name, and the session whose
/// turn it is writes, in its one `multi`, its own addition and those queued behind it (up to
/// 64), creating each one's exactly-once marker (holding the value before that addition) and
/// deleting its queue node. The queued session learns its values from its marker without a
/// write of its own. A marker is created once, so an addition is applied at most once whoever
/// writes it; and as its queue node goes in the same transaction, a node gone without its
/// marker means an addition that was not applied and never will be. Curator's writers are not
/// affected: they never see the queue.
///
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedAtomicLong;
/// let counter = DistributedAtomicLong::new(&fw, "/counters/orders")?;
/// // 64 tasks counting at once: their increments share writes, each gets its own number
/// let mut tasks = Vec::new();
/// for _ in 0..64 {
///     let counter = counter.clone();
///     tasks.push(tokio::spawn(async move { counter.increment().await }));
/// }
/// for task in tasks {
///     let r = task.await.expect("task")?;
///     assert_eq!(r.post_value, r.pre_value + 1); // a number nobody else was given
/// }
/// # Ok(())
/// # }
/// ```
///
/// # Cancel safety
/// The updates are not cancel safe in the usual sense, as a write may be on its way: dropping
/// the future of an update (a timeout, `select!`) before its batch started leaves it out — it
/// is not applied — but a batch once started is written as a whole (its sum is then being
/// written, or queued for another session's write to apply): the update may then be applied,
/// once, and its result is given to nobody. The other members of its batch are not disturbed
/// either way.
///
/// # Curator compatibility
/// One persistent node, data big-endian signed, missing node or empty data = 0. A Curator
/// process incrementing the same node adds up with this one.
///
/// # Errors
/// Node data of another length is reported as [`Error::CorruptData`](crate::Error::CorruptData), never guessed at. When
/// the retry policy gives up while a write's reply is still missing, the operation reports
/// [`Error::OutcomeUnknown`](crate::Error::OutcomeUnknown) (the write may or may not have been applied) rather than a plain
/// failure; for a batch, every member gets it.
#[derive(Debug, Clone)]
pub struct DistributedAtomicNumber<T: AtomicNumber> {
    /// This handle's combiner (shared by its clones); updates use the session's combiner for
    /// the path, which is this one unless another handle's was registered first.
    own: Arc<Combiner<T>>,
}

/// Curator's `DistributedAtomicLong`.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedAtomicLong;
///
/// let orders = DistributedAtomicLong::new(&fw, "/counters/orders")?;
/// orders.initialize(1_000).await?;                 // only if the node does not exist yet
/// let sold = orders.add(3).await?;
/// println!("{} -> {}", sold.pre_value, sold.post_value);
/// let reset = orders.compare_and_set(sold.post_value, 0).await?;
/// if !reset.succeeded {
///     println!("someone wrote {} first", reset.pre_value);
/// }
/// # Ok(()) }
/// ```
pub type DistributedAtomicLong = DistributedAtomicNumber<i64>;
/// Curator's `DistributedAtomicInteger`.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedAtomicInteger;
///
/// // 4 bytes, big-endian: what Curator's DistributedAtomicInteger reads
/// let retries = DistributedAtomicInteger::new(&fw, "/counters/retries")?;
/// let value = retries.increment().await?;
/// assert_eq!(value.post_value, value.pre_value + 1);
/// # Ok(()) }
/// ```
pub type DistributedAtomicInteger = DistributedAtomicNumber<i32>;

impl<T: AtomicNumber> DistributedAtomicNumber<T> {
    /// A number at `path` with default options (10,000 optimistic tries, no promotion).
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath).
    pub fn new(fw: &Framework, path: &str) -> Result<Self> {
        Self::with_options(fw, path, AtomicOptions::default())
    }

    /// A number at `path` with `options`.
    ///
    /// # Errors
    /// As [`DistributedAtomicValue::new`].
    pub fn with_options(fw: &Framework, path: &str, options: AtomicOptions) -> Result<Self> {
        Ok(Self { own: Combiner::new(DistributedAtomicValue::new(fw, path, options)?) })
    }

    fn value(&self) -> &DistributedAtomicValue {
        self.own.engine()
    }

    /// Queues `op` on the session's combiner for this path.
    async fn submit(&self, op: Op<T>) -> Result<AtomicValue<T>> {
        let combiners = self.value().framework().session_extension::<Combiners<T>>();
        let combiner = combiners.share(&self.own);
        drop(combiners);
        combiner.submit(op).await
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.value().path()
    }

    /// The current value (0 when the node is missing or empty).
    ///
    /// # Errors
    /// [`Error::CorruptData`](crate::Error::CorruptData); the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn get(&self) -> Result<T> {
        decode(self.path(), &self.value().get().await?)
    }

    /// Adds one (combined with concurrent additions: see [Combining](Self#combining)).
    ///
    /// # Errors
    /// [`Error::CorruptData`](crate::Error::CorruptData); [`Error::OutcomeUnknown`](crate::Error::OutcomeUnknown); [`Error::Contended`](crate::Error::Contended) when its tries
    /// ran out (see [`AtomicOptions`]): the addition was not applied; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped once its write was sent, the change stands and its result is
    /// lost (see [Cancel safety](Self#cancel-safety)).
    pub async fn increment(&self) -> Result<AtomicValue<T>> {
        self.add(T::ONE).await
    }

    /// Subtracts one (combined with concurrent additions).
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// As [`increment`](Self::increment).
    pub async fn decrement(&self) -> Result<AtomicValue<T>> {
        self.add(T::ONE.wrapping_neg()).await
    }

    /// Adds `delta` (wrapping on overflow, as Curator's Java arithmetic does), combined with
    /// concurrent additions: `post_value` is `pre_value + delta` and no other caller is given
    /// a change that overlaps it.
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// As [`increment`](Self::increment).
    pub async fn add(&self, delta: T) -> Result<AtomicValue<T>> {
        self.submit(Op::Add(delta)).await
    }

    /// Subtracts `delta` (combined with concurrent additions).
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// As [`increment`](Self::increment).
    pub async fn subtract(&self, delta: T) -> Result<AtomicValue<T>> {
        self.add(delta.wrapping_neg()).await
    }

    /// Sets `new` if the current value is `expected` ([`succeeded`](AtomicValue::succeeded)
    /// tells whether it was). Written alone, in call order with this framework's other
    /// updates of the path.
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// As [`increment`](Self::increment).
    pub async fn compare_and_set(&self, expected: T, new: T) -> Result<AtomicValue<T>> {
        self.submit(Op::Alone(Single::Compare { expected, new })).await
    }

    /// Sets `new` through the optimistic loop, reporting what it replaced. Written alone, in
    /// call order with this framework's other updates of the path.
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// As [`increment`](Self::increment).
    pub async fn try_set(&self, new: T) -> Result<AtomicValue<T>> {
        self.submit(Op::Alone(Single::Replace(new))).await
    }

    /// Sets `new` whatever the current value (even corrupt data is overwritten). Written alone,
    /// in call order with this framework's other updates of the path.
    ///
    /// # Errors
    /// [`Error::Contended`](crate::Error::Contended) when the tries ran out (as [`DistributedAtomicValue::force_set`]);
    /// the framework's errors.
    ///
    /// # Cancel safety
    /// As [`increment`](Self::increment).
    pub async fn force_set(&self, new: T) -> Result<()> {
        self.submit(Op::Alone(Single::Force(new))).await.map(drop)
    }

    /// Creates the node with `value` unless it exists; `false` when it did. Not queued with
    /// the updates: a create is not a versioned write.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the node may have been created.
    pub async fn initialize(&self, value: T) -> Result<bool> {
        self.value().initialize(&value.encode()).await
    }

    /// Deletes this handle's transaction marker (see [`DistributedAtomicValue::close`]) once
    /// the updates queued on this handle's combiner before the call are written; later
    /// updates of other handles of the path stop using that combiner. The handle stays
    /// usable (a later update makes a new marker). Idempotent: a second close is `Ok(())`.
    ///
    /// # Errors
    /// The delete's error.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn close(&self) -> Result<()> {
        self.value().framework().session_extension::<Combiners<T>>().leave(&self.own);
        self.own.settled().await;
        self.value().close().await
    }
}
