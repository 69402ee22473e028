//! Combining: concurrent updates of one counter on one framework become one write.
//!
//! Every update of a [`DistributedAtomicNumber`](super::DistributedAtomicNumber) goes through
//! a combiner: one per path, number type and options on a framework's session (see
//! [`Combiners`]). Updates queue in the order they are called. One task at a time — the
//! driver, spawned on the framework's runtime while there is work, so that no caller's future
//! carries a write others wait for — takes from the head of the queue either every addition
//! up to the next update that is not one (a batch, written as one versioned `multi` carrying
//! the sum) or that update alone. While a write is in flight, the next batch gathers.
//!
//! A batch is one write of the value engine, so it is exactly once as a whole: after a lost
//! reply the write's marker tells whether it was applied, and then it was for every member;
//! otherwise it was for none and they are written again together. Each member's before and
//! after values are cut from the written value in queue order. A member whose caller is gone
//! (its future dropped) before its batch starts is left out; a batch, once started, is
//! written as a whole (its sum may already stand in the value's queue, for another session's
//! write to apply), and the results of callers gone meanwhile go to nobody.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{oneshot, Notify};

use super::arith::{decode, AtomicNumber};
use super::value::{AtomicValue, DistributedAtomicValue};
use crate::error::{Error, Result};
use crate::sync::lock;

/// An update of a number.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op<T> {
    /// Adds a delta: combined with the additions queued beside it.
    Add(T),
    /// Written alone, in its place in the queue.
    Alone(Single<T>),
}

/// An update that is not additive.
#[derive(Debug, Clone, Copy)]
pub(super) enum Single<T> {
    Compare {
        expected: T,
        new: T,
    },
    Replace(T),
    /// Overwrites whatever is there (also data that is not a number); reports only success.
    Force(T),
}

type Reply<T> = oneshot::Sender<Result<AtomicValue<T>>>;

struct Waiter<T> {
    op: Op<T>,
    reply: Reply<T>,
}

struct Queue<T> {
    waiting: VecDeque<Waiter<T>>,
    /// A driver is running (it clears this when it finds the queue empty).
    driven: bool,
    /// Updates queued so far, and how many of them are settled (answered, or dropped by
    /// their callers before anything was sent).
    queued: u64,
    settled: u64,
}

/// What the driver does next.
enum Next<T> {
    Batch(Vec<(T, Reply<T>)>),
    Alone(Single<T>, Reply<T>),
    Idle,
}

impl<T: AtomicNumber> Queue<T> {
    /// What to write next, and how many updates it settles.
    fn next(&mut self) -> (Next<T>, u64) {
        let mut taken = 0;
        while self.waiting.front().is_some_and(|w| w.reply.is_closed()) {
            self.waiting.pop_front(); // its caller is gone before anything was sent
            taken += 1;
        }
        let Some(head) = self.waiting.pop_front() else {
            self.driven = false;
            self.settled += taken;
            return (Next::Idle, 0);
        };
        taken += 1;
        let delta = match head.op {
            Op::Alone(single) => return (Next::Alone(single, head.reply), taken),
            Op::Add(delta) => delta,
        };
        let mut batch = vec![(delta, head.reply)];
        while let Some(Waiter { op: Op::Add(delta), .. }) = self.waiting.front() {
            let delta = *delta;
            taken += 1;
            if let Some(w) = self.waiting.pop_front().filter(|w| !w.reply.is_closed()) {
                batch.push((delta, w.reply));
            }
        }
        (Next::Batch(batch), taken)
    }
}

/// The queue of updates of one number, and the value engine that writes them.
pub(super) struct Combiner<T> {
    engine: DistributedAtomicValue,
    queue: Mutex<Queue<T>>,
    /// Told when updates are settled.
    settled: Notify,
}

impl<T> std::fmt::Debug for Combiner<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = lock(&self.queue);
        f.debug_struct("Combiner")
            .field("engine", &self.engine)
            .field("waiting", &queue.waiting.len())
            .field("driven", &queue.driven)
            .finish()
    }
}

impl<T: AtomicNumber> Combiner<T> {
    pub(super) fn new(engine: DistributedAtomicValue) -> Arc<Self> {
        Arc::new(Self {
            engine,
            queue: Mutex::new(Queue { waiting: VecDeque::new(), driven: false, queued: 0, settled: 0 }),
            settled: Notify::new(),
        })
    }

    pub(super) fn engine(&self) -> &DistributedAtomicValue {
        &self.engine
    }

    /// Queues `op` and waits for its result.
    ///
    /// # Cancel safety
    /// Dropping the future before `op`'s batch starts leaves it out; once the batch started
    /// it is written as a whole, and its result goes to nobody.
    pub(super) async fn submit(self: &Arc<Self>, op: Op<T>) -> Result<AtomicValue<T>> {
        let (reply, answer) = oneshot::channel();
        let start = {
            let mut queue = lock(&self.queue);
            queue.waiting.push_back(Waiter { op, reply });
            queue.queued += 1;
            !std::mem::replace(&mut queue.driven, true)
        };
        if start {
            self.engine.framework().runtime().spawn(self.clone().drive());
        }
        // A reply is dropped unsent only when the driver was dropped in the middle of a write
        // (its runtime shut down, or a panic): whether that write was applied is not known.
        answer.await.unwrap_or_else(|_| Err(Error::OutcomeUnknown { path: self.engine.path().to_string() }))
    }

    /// Resolves once the updates queued before the call are settled (their writes done).
    pub(super) async fn settled(&self) {
        let target = lock(&self.queue).queued;
        loop {
            let told = self.settled.notified();
            if lock(&self.queue).settled >= target {
                return;
            }
            told.await;
        }
    }

    /// Writes what is queued, batch by batch, until the queue is empty. The guard is made
    /// before the first poll: a driver dropped unpolled (its runtime shut down) still tells
    /// the callers.
    fn drive(self: Arc<Self>) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut stop = Stop { combiner: self, finished: false };
        async move {
            let this = &*stop.combiner;
            loop {
                let (next, taken) = lock(&this.queue).next();
                match next {
                    Next::Batch(members) => this.add(members).await,
                    Next::Alone(single, reply) => {
                        let result = this.alone(single, &reply).await;
                        let _ = reply.send(result);
                    }
                    Next::Idle => break,
                }
                lock(&this.queue).settled += taken;
                this.settled.notify_waiters();
            }
            stop.finish();
        }
    }

    /// One write carrying the sum of `members`' deltas; each member gets its own before and
    /// after values, in queue order. The sum is fixed when the batch starts: it may be queued
    /// under its value's lock for another session's write to apply (see `joint.rs`).
    async fn add(&self, mut members: Vec<(T, Reply<T>)>) {
        members.retain(|(_, reply)| !reply.is_closed());
        if members.is_empty() {
            return;
        }
        let sum = members.iter().fold(T::ZERO, |sum, (delta, _)| sum.wrapping_add(*delta));
        let path = self.engine.path();
        let result = self.engine.apply_addition(&sum.encode()).await.and_then(|written| {
            Ok(AtomicValue {
                succeeded: written.succeeded,
                pre_value: decode::<T>(path, &written.pre_value)?,
                post_value: decode::<T>(path, &written.post_value)?,
                stats: written.stats,
            })
        });
        match result {
            Ok(written) if written.succeeded => {
                let mut before = written.pre_value;
                for (delta, reply) in members {
                    let after = before.wrapping_add(delta);
                    let mine =
                        AtomicValue { succeeded: true, pre_value: before, post_value: after, stats: written.stats };
                    let _ = reply.send(Ok(mine));
                    before = after;
                }
            }
            // an error (`Contended` when the tries ran out): the same for every member
            other => {
                for (_, reply) in members {
                    let _ = reply.send(other.as_ref().map(AtomicValue::clone).map_err(Error::duplicate));
                }
            }
        }
    }

    /// One update that is not additive; not written when its caller is gone before.
    async fn alone(&self, single: Single<T>, reply: &Reply<T>) -> Result<AtomicValue<T>> {
        let here = || !reply.is_closed();
        match single {
            Single::Compare { expected, new } => self.change(|v| (here() && v == expected).then_some(new)).await,
            Single::Replace(new) => self.change(|_| here().then_some(new)).await,
            Single::Force(new) => {
                let written = self.engine.apply(|_| here().then(|| new.encode())).await?;
                Ok(AtomicValue { succeeded: written.succeeded, pre_value: new, post_value: new, stats: written.stats })
            }
        }
    }

    /// The value engine's loop over numbers: `f` maps the current number to the new one, or
    /// `None` to stop without writing. Data that is not a number is an error, unless the
    /// operation ended on a value that is one.
    async fn change(&self, mut f: impl FnMut(T) -> Option<T>) -> Result<AtomicValue<T>> {
        let path = self.engine.path();
        let mut corrupt = None;
        let result = self
            .engine
            .apply(|bytes| match decode::<T>(path, bytes) {
                Ok(current) => {
                    corrupt = None;
                    f(current).map(T::encode)
                }
                Err(e) => {
                    corrupt = Some(e);
                    None
                }
            })
            .await?;
        if let Some(e) = corrupt {
            return Err(e);
        }
        Ok(AtomicValue {
            succeeded: result.succeeded,
            pre_value: decode(path, &result.pre_value)?,
            post_value: decode(path, &result.post_value)?,
            stats: result.stats,
        })
    }
}

/// Ends a driver: normally it found the queue empty; when dropped before that (its runtime
/// shut down) the callers still waiting are told, and the next update starts a new driver.
struct Stop<T: AtomicNumber> {
    combiner: Arc<Combiner<T>>,
    finished: bool,
}

impl<T: AtomicNumber> Stop<T> {
    /// The driver found the queue empty (and said so in the queue).
    fn finish(&mut self) {
        self.finished = true;
    }
}

impl<T: AtomicNumber> Drop for Stop<T> {
    fn drop(&mut self) {
        if !self.finished {
            let waiting = {
                let mut queue = lock(&self.combiner.queue);
                queue.driven = false;
                queue.settled = queue.queued;
                std::mem::take(&mut queue.waiting)
            };
            for w in waiting {
                let _ = w.reply.send(Err(Error::Closed));
            }
        }
        self.combiner.settled.notify_waiters();
    }
}

/// The combiners of one session by path, so that handles made separately for one path share
/// one (the number type is the key of the session's extension slot). Entries are weak: a
/// combiner lives as long as its handle.
pub(super) struct Combiners<T> {
    by_path: Mutex<HashMap<String, Weak<Combiner<T>>>>,
}

impl<T> Default for Combiners<T> {
    fn default() -> Self {
        Self { by_path: Mutex::default() }
    }
}

impl<T: AtomicNumber> Combiners<T> {
    /// The combiner to use for `own`'s path: the registered one, when it is alive and has the
    /// same options; else `own`, which is registered when no live one is.
    pub(super) fn share(&self, own: &Arc<Combiner<T>>) -> Arc<Combiner<T>> {
        let path = own.engine.path();
        let mut by_path = lock(&self.by_path);
        if let Some(registered) = by_path.get(path).and_then(Weak::upgrade) {
            let same = registered.engine.options() == own.engine.options();
            return if same { registered } else { own.clone() };
        }
        by_path.retain(|_, c| c.strong_count() > 0);
        by_path.insert(path.to_string(), Arc::downgrade(own));
        own.clone()
    }

    /// Unregisters `own` (its handle is closed): later updates of other handles register
    /// their own.
    pub(super) fn leave(&self, own: &Arc<Combiner<T>>) {
        let path = own.engine.path();
        let mut by_path = lock(&self.by_path);
        if by_path.get(path).is_some_and(|c| std::ptr::eq(c.as_ptr(), Arc::as_ptr(own))) {
            by_path.remove(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Answer = oneshot::Receiver<Result<AtomicValue<i64>>>;

    fn queue(ops: &[Op<i64>]) -> (Queue<i64>, Vec<Answer>) {
        let mut q = Queue { waiting: VecDeque::new(), driven: true, queued: 0, settled: 0 };
        let answers = ops
            .iter()
            .map(|&op| {
                let (reply, answer) = oneshot::channel();
                q.waiting.push_back(Waiter { op, reply });
                q.queued += 1;
                answer
            })
            .collect();
        (q, answers)
    }

    fn deltas(next: Next<i64>) -> Vec<i64> {
        match next {
            Next::Batch(members) => members.into_iter().map(|(d, _)| d).collect(),
            _ => panic!("not a batch"),
        }
    }

    #[test]
    fn additions_batch_up_to_an_update_that_is_not_one_and_gone_callers_are_skipped() {
        let set = Op::Alone(Single::Replace(7));
        let (mut q, mut answers) = queue(&[Op::Add(1), Op::Add(2), Op::Add(3), set, Op::Add(4), Op::Add(5)]);
        answers.remove(0); // the first caller is gone before anything was sent
        answers.remove(1); // and the third
        let (next, taken) = q.next();
        assert_eq!((deltas(next), taken), (vec![2], 3), "the batch stops at the set");
        let (next, taken) = q.next();
        assert!(matches!(next, Next::Alone(Single::Replace(7), _)) && taken == 1, "then the set, alone");
        let (next, taken) = q.next();
        assert_eq!((deltas(next), taken), (vec![4, 5], 2));
        assert!(q.driven);
        let (next, _) = q.next();
        assert!(matches!(next, Next::Idle) && !q.driven, "an empty queue ends the driver");
    }

    #[test]
    fn callers_gone_at_the_head_are_settled_when_the_queue_ends() {
        let (mut q, answers) = queue(&[Op::Add(1), Op::Add(2)]);
        drop(answers);
        assert!(matches!(q.next().0, Next::Idle));
        assert_eq!((q.queued, q.settled), (2, 2));
    }
}
