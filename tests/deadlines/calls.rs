//! The timed calls, each against recipe state that makes it wait (a holder holds, a barrier
//! is set, a queue is empty or full), and the check of how they came back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::queue::QueueBuilder;
use zk_recipes::CreateMode;

use zk_recipes::{
    with_deadline, DistributedBarrier, DistributedCountDownLatch, DistributedDoubleBarrier, DistributedQueue, Error,
    Framework, HeldLock, InterProcessLock, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, LeaderLatch, Lease, ShedLock, SimpleDistributedQueue,
};

use super::{OPERATION_TIMEOUT, SLACK, TIMEOUT};

/// What the holder side holds while the calls wait, and the waiter's own leader latch.
pub struct Setup {
    held: Vec<HeldLock>,
    leases: Vec<Lease>,
    latches: Vec<LeaderLatch>,
}

impl Setup {
    /// `holder` takes every lock and lease of the recipes under `base`, sets the barrier and
    /// the latch's count, fills the bounded queue, leads the election.
    pub async fn new(holder: &Framework, waiter: &Framework, base: &str) -> Setup {
        let mut held = Vec::new();
        for lock in locks(holder, base) {
            held.push(lock.acquire().await.expect("the holder's lock"));
        }
        let leases = InterProcessSemaphoreV2::new(holder, &format!("{base}/semaphore"), 2)
            .unwrap()
            .acquire_many(2)
            .await
            .unwrap();
        DistributedBarrier::new(holder, &format!("{base}/barrier")).unwrap().set_barrier().await.unwrap();
        assert!(DistributedCountDownLatch::new(holder, &format!("{base}/latch"))
            .unwrap()
            .try_set_count(1)
            .await
            .unwrap());
        bounded_queue(holder, base).put(&b"full".to_vec()).await.unwrap();
        let leader = LeaderLatch::new(holder, &format!("{base}/leader"), "holder").unwrap();
        leader.start().await.unwrap();
        leader.await_leadership_timeout(super::WAIT).await.unwrap();
        // the waiter's latch, in the election behind the holder's
        let follower = LeaderLatch::new(waiter, &format!("{base}/leader"), "waiter").unwrap();
        follower.start().await.unwrap();
        Setup { held, leases, latches: vec![leader, follower] }
    }

    /// The waiter's leader latch.
    fn follower(&self) -> LeaderLatch {
        self.latches[1].clone()
    }

    /// Releases what the holder holds (what the freeze took from it — a hold lost to a
    /// suspended connection — reports the loss; its node is gone or goes all the same).
    pub async fn release(self) {
        for held in self.held {
            let _ = held.release().await;
        }
        for lease in self.leases {
            let _ = lease.release().await;
        }
        for latch in self.latches {
            let _ = latch.close().await;
        }
    }
}

/// The exclusive locks under `base`, through the common trait.
fn locks(fw: &Framework, base: &str) -> Vec<Arc<dyn InterProcessLock>> {
    vec![
        Arc::new(InterProcessMutex::new(fw, &format!("{base}/mutex")).unwrap()),
        Arc::new(InterProcessSemaphoreMutex::new(fw, &format!("{base}/semaphore-mutex")).unwrap()),
        Arc::new(InterProcessReadWriteLock::new(fw, &format!("{base}/rw")).unwrap().write_lock()),
    ]
}

fn bounded_queue(fw: &Framework, base: &str) -> DistributedQueue {
    let path = format!("{base}/bounded");
    QueueBuilder::new(fw, &path).max_items(1).lock_path(&format!("{path}-locks")).build().unwrap()
}

type Call = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

/// One call: its name, its bound (the timeout, or the operation timeout for a `try_*`), and
/// whether its error is the expected one.
struct Timed {
    name: &'static str,
    bound: Duration,
    call: Call,
    expected: fn(&Error) -> bool,
}

fn timed(name: &'static str, call: impl Future<Output = Result<(), Error>> + Send + 'static) -> Timed {
    Timed { name, bound: TIMEOUT, call: Box::pin(call), expected: Error::is_timeout }
}

/// A `try_*` form: it may also answer "not now" at once (`Ok(None)`) without asking the server,
/// when an acquire of the same framework is ahead of it in the local queue; what it got must
/// not be a hold (the holder holds everything).
fn tried<T: Send + 'static>(
    name: &'static str,
    call: impl Future<Output = Result<Option<T>, Error>> + Send + 'static,
) -> Timed {
    let call = async move {
        match call.await? {
            None => Err(NOT_NOW),
            Some(_) => Err(Error::InvalidState("a try got what the holder holds")),
        }
    };
    Timed {
        name,
        bound: OPERATION_TIMEOUT,
        call: Box::pin(call),
        expected: |e| e.is_timeout() || matches!(e, Error::Unsupported("not now")),
    }
}

/// What a `try_*` form that answered "not now" is counted as.
const NOT_NOW: Error = Error::Unsupported("not now"); // `expected` matches it

fn unknown_write(e: &Error) -> bool {
    matches!(e, Error::OutcomeUnknown { .. }) || e.is_timeout()
}

/// Every timed call, made by `fw` while its server does not answer, all at once; what came
/// back late or with an unexpected outcome (empty: all on time, with the right error).
pub async fn run_all(fw: &Framework, base: &str, setup: &Setup) -> Vec<String> {
    let mut calls = Vec::new();
    let follower = setup.follower();
    calls.push(timed("leader latch await_leadership_timeout", async move {
        follower.await_leadership_timeout(TIMEOUT).await.map(drop)
    }));
    for (i, lock) in locks(fw, base).into_iter().enumerate() {
        let name = ["mutex", "semaphore mutex", "write lock"][i];
        let (l, t) = (lock.clone(), lock);
        calls.push(timed(name, async move { l.acquire_timeout(TIMEOUT).await.map(drop) }));
        calls.push(tried(name, async move { t.try_acquire().await }));
    }
    let mutex = InterProcessMutex::new(fw, &format!("{base}/mutex")).unwrap();
    calls.push(timed(
        "InterProcessMutex::acquire_timeout",
        async move { mutex.acquire_timeout(TIMEOUT).await.map(drop) },
    ));
    let rw = InterProcessReadWriteLock::new(fw, &format!("{base}/rw")).unwrap();
    let (r1, r2, r3, r4) = (rw.clone(), rw.clone(), rw.clone(), rw);
    calls.push(timed("read_timeout", async move { r1.read_timeout(TIMEOUT).await.map(drop) }));
    calls.push(timed("write_timeout", async move { r2.write_timeout(TIMEOUT).await.map(drop) }));
    calls.push(tried("try_read", async move { r3.try_read().await }));
    calls.push(tried("try_write", async move { r4.try_write().await }));
    let sem = InterProcessSemaphoreV2::new(fw, &format!("{base}/semaphore"), 2).unwrap();
    let (s1, s2, s3, s4) = (sem.clone(), sem.clone(), sem.clone(), sem);
    calls.push(timed("semaphore acquire_timeout", async move { s1.acquire_timeout(TIMEOUT).await.map(drop) }));
    calls.push(timed(
        "semaphore acquire_many_timeout",
        async move { s2.acquire_many_timeout(2, TIMEOUT).await.map(drop) },
    ));
    calls.push(timed("semaphore acquire_with_expiry_timeout", async move {
        s3.acquire_with_expiry_timeout(Duration::from_secs(60), TIMEOUT).await.map(drop)
    }));
    calls.push(tried("semaphore try_acquire", async move { s4.try_acquire().await }));
    let multi = InterProcessMultiLock::new(locks(fw, base)).unwrap();
    calls.push(timed("multi-lock acquire_timeout", async move { multi.acquire_timeout(TIMEOUT).await.map(drop) }));
    let barrier = DistributedBarrier::new(fw, &format!("{base}/barrier")).unwrap();
    calls.push(timed("barrier", async move { barrier.wait_on_barrier_timeout(TIMEOUT).await }));
    let double = DistributedDoubleBarrier::new(fw, &format!("{base}/double"), 2).unwrap();
    calls.push(timed("double barrier enter", async move { double.enter_timeout(TIMEOUT).await }));
    let leaving = DistributedDoubleBarrier::new(fw, &format!("{base}/double-leave"), 2).unwrap();
    calls.push(timed("double barrier leave", async move { leaving.leave_timeout(TIMEOUT).await }));
    let latch = DistributedCountDownLatch::new(fw, &format!("{base}/latch")).unwrap();
    calls.push(timed("count-down latch", async move { latch.wait_timeout(TIMEOUT).await }));
    let simple = SimpleDistributedQueue::new(fw, &format!("{base}/queue")).unwrap();
    let (q1, q2) = (simple.clone(), simple.clone());
    calls.push(timed("queue take_timeout", async move { q1.take_timeout(TIMEOUT).await.map(drop) }));
    calls.push(tried("queue try_take", async move { q2.try_take().await }));
    calls.push(Timed {
        name: "queue offer_timeout",
        bound: TIMEOUT,
        call: Box::pin(async move { simple.offer_timeout(b"late", TIMEOUT).await.map(drop) }),
        expected: unknown_write,
    });
    let bounded = bounded_queue(fw, base);
    let (b1, b2) = (bounded.clone(), bounded);
    calls.push(timed(
        "bounded queue put_timeout",
        async move { b1.put_timeout(&b"x".to_vec(), TIMEOUT).await.map(drop) },
    ));
    calls.push(timed("queue take_safe_timeout", async move { b2.take_safe_timeout(TIMEOUT).await.map(drop) }));
    let shedlock = ShedLock::new(fw).root(&format!("{base}/shedlock")).unwrap();
    calls.push(tried("ShedLock try_lock", async move {
        shedlock.try_lock("job", Duration::from_secs(60), Duration::ZERO).await
    }));
    let (f1, f2) = (fw.clone(), fw.clone());
    let (p1, p2) = (format!("{base}/mutex"), format!("{base}/plain"));
    calls.push(timed("get_data under with_deadline", async move {
        with_deadline(TIMEOUT, f1.get_data(&p1)).await.map(drop)
    }));
    calls.push(Timed {
        name: "create under with_deadline",
        bound: TIMEOUT,
        call: Box::pin(
            async move { with_deadline(TIMEOUT, f2.create(&p2, b"", CreateMode::Persistent)).await.map(drop) },
        ),
        expected: unknown_write,
    });
    let runs: Vec<_> = calls
        .into_iter()
        .map(|c| {
            tokio::spawn(async move {
                let started = Instant::now();
                let outcome = c.call.await;
                (c.name, c.bound, started.elapsed(), outcome, c.expected)
            })
        })
        .collect();
    let mut late = Vec::new();
    for run in runs {
        let (name, bound, took, outcome, expected) = run.await.expect("a call panicked");
        let right = outcome.as_ref().err().is_some_and(expected);
        if took > bound + SLACK || !right {
            late.push(format!("{name}: {outcome:?} after {took:?} (bound {bound:?})"));
        }
        println!("{name}: {:?} after {took:?}", outcome.err().and_then(|e| e.timeout_step()));
    }
    late
}
