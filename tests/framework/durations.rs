//! Durations at their extremes, a property of every timed method: each recipe's timed waits,
//! leases, TTLs and intervals, the framework's own (`shutdown`, `wait_connected`,
//! `with_deadline`, the builder's timeouts), fed `Duration::ZERO`, 1 ns, `Duration::MAX`,
//! `MAX - 1 ns`, `u64::MAX` seconds and seeded random ones, in two situations:
//!
//! * uncontended (a free lock, an open barrier, a queue with an item, a loaded cache...): the
//!   call succeeds promptly whatever the duration — a zero (or already passed) timeout is a
//!   try, `MAX` is no bound — or refuses a duration that cannot be (a TTL of zero or past
//!   ZooKeeper's largest) with `Error::InvalidArgument`;
//! * contended (held by another framework's session, a set barrier, an empty or full queue,
//!   a framework whose link forwards nothing): a short duration times out by itself + 1 s; a
//!   long one is still waiting after 200 ms, and is dropped then (cancelled): it must leave
//!   nothing behind.
//!
//! Never a panic (`overflow when adding duration to instant` was the issue's). Seeded and
//! bounded: the fixed extremes, then a few seeded random cases, all calls of a case at once.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use tokio::time::Instant;
use zk_recipes::discovery::{DownInstancePolicy, ServiceCache};
use zk_recipes::lock::ExpiringPermit;
use zk_recipes::queue::QueueBuilder;
use zk_recipes::{
    with_deadline, BoundedExponentialBackoff, Cache, CreateMode, Deadline, DistributedBarrier,
    DistributedCountDownLatch, DistributedDelayQueue, DistributedDoubleBarrier, DistributedIdQueue,
    DistributedPriorityQueue, DistributedQueue, Error, ExponentialBackoff, Framework, GroupMember, HeldLock,
    InterProcessLock, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, LeaderLatch, Lease, NodeMode, PersistentNode, PersistentTtlNode, RetryAttempt,
    RetryForever, RetryNTimes, RetryPolicy, Scheduled, ServiceDiscovery, ShedLock, SimpleDistributedQueue, TimedHold,
    ZooKeeperError,
};
use zk_recipes_testing::{fixtures, ProxyMode, TcpProxy};

/// A duration this short or shorter, in a contended call, must time out (and is awaited); a
/// longer one is probed for [`PROBE`] and must still be waiting.
const SHORT: Duration = Duration::from_millis(300);
/// How long a contended call with a long duration is watched before it is dropped.
const PROBE: Duration = Duration::from_millis(200);
/// How long after its duration a call that times out may return (the issue's promise).
const SLACK: Duration = Duration::from_secs(1);
/// How long a call that needs no waiting may take (a few round trips, on a loaded machine).
const PROMPT: Duration = Duration::from_secs(5);
/// The operation timeout of the frameworks whose link forwards nothing: what bounds a try
/// (a zero timeout) there.
const STALLED_OPERATION: Duration = Duration::from_secs(1);
/// ZooKeeper's largest TTL: 2^40 - 1 ms.
const MAX_TTL: Duration = Duration::from_millis((1 << 40) - 1);
/// Milliseconds from the epoch to 10000-01-01, where ShedLock's instants end.
const END_OF_FORMAT_MS: u128 = 253_402_300_800_000;

/// The durations every run starts with: the issue's extremes and their neighbours.
const EXTREMES: [Duration; 7] = [
    Duration::ZERO,
    Duration::from_nanos(1),
    Duration::MAX,
    Duration::new(u64::MAX, 999_999_998), // MAX - 1 ns
    Duration::from_secs(u64::MAX),
    Duration::from_millis(1),
    Duration::from_secs(86_400 * 365 * 100),
];

/// Seeded random cases after the extremes.
const RANDOM_CASES: u32 = 10;
const SEED: u64 = 0x2026_1202;

/// What a call must do with the duration it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// `Ok`, within [`PROMPT`].
    Done,
    /// [`Error::InvalidArgument`], within [`PROMPT`], nothing done.
    Refused,
    /// An error that says the time ran out (`is_timeout`, or `OutcomeUnknown` for a write),
    /// by the duration + [`SLACK`] (by `bound` + [`SLACK`] when given: a try's bound).
    Timeout(Option<Duration>),
    /// Either `Ok` or the time ran out, by the duration + [`SLACK`] (a deadline of a few
    /// milliseconds may pass before the round trips are done).
    DoneOrTimeout,
    /// Still waiting after [`PROBE`]; then dropped.
    Pending,
}

/// An uncontended wait: a try for a zero (or passed) timeout, no bound for a long one; in
/// between the deadline may come before the answer.
fn free_wait(d: Duration) -> Expect {
    if d <= Duration::from_nanos(1) || d >= Duration::from_secs(1) {
        Expect::Done
    } else {
        Expect::DoneOrTimeout
    }
}

/// A contended wait: short ones time out, long ones wait.
fn busy_wait(d: Duration) -> Expect {
    if d <= SHORT {
        Expect::Timeout(None)
    } else {
        Expect::Pending
    }
}

/// A contended wait on a framework whose link forwards nothing: a try (a zero or passed
/// timeout) is bounded by its operation timeout.
fn stalled_wait(d: Duration) -> Expect {
    match busy_wait(d) {
        Expect::Timeout(_) if d <= Duration::from_nanos(1) => Expect::Timeout(Some(STALLED_OPERATION)),
        other => other,
    }
}

/// Done whatever the duration (a local wait: the condition holds already).
fn always(_: Duration) -> Expect {
    Expect::Done
}

fn ttl_ok(d: Duration) -> bool {
    d >= Duration::from_millis(1) && d <= MAX_TTL
}

/// A TTL (or an expiring permit's expiry): 1 ms to 2^40 - 1 ms.
fn ttl(d: Duration) -> Expect {
    if ttl_ok(d) {
        Expect::Done
    } else {
        Expect::Refused
    }
}

/// A hold's length: anything but zero (`MAX`: no bound).
fn length(d: Duration) -> Expect {
    if d.is_zero() {
        Expect::Refused
    } else {
        Expect::Done
    }
}

/// A ShedLock duration written as an instant: at least 1 ms (its instants are in ms), and
/// ending before the year 10000.
fn shedlock_until(d: Duration) -> Expect {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_millis();
    if d < Duration::from_millis(1) || now + d.as_millis() >= END_OF_FORMAT_MS - 60_000 {
        Expect::Refused
    } else {
        Expect::Done
    }
}

type Outcome = zk_recipes::Result<()>;

/// One timed method, called with a duration.
struct Timed {
    name: &'static str,
    expect: fn(Duration) -> Expect,
    call: Box<dyn Fn(Duration) -> BoxFuture<'static, Outcome> + Send + Sync>,
}

fn timed<F, Fut>(name: &'static str, expect: fn(Duration) -> Expect, call: F) -> Timed
where
    F: Fn(Duration) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    Timed { name, expect, call: Box::new(move |d| Box::pin(call(d))) }
}

/// `timed` with the handles named cloned into each call.
macro_rules! call {
    ($name:expr, $expect:expr, |$d:ident| $($h:ident),* => $body:expr) => {{
        $(let $h = $h.clone();)*
        timed($name, $expect, move |$d: Duration| {
            $(let $h = $h.clone();)*
            async move { $body }
        })
    }};
}

fn ran_out(e: &Error) -> bool {
    e.is_timeout() || matches!(e, Error::OutcomeUnknown { .. })
}

/// Runs `calls` with `d`, all at once; what did not behave.
async fn run(calls: &[Timed], d: Duration) -> Vec<String> {
    run_in(calls, d, None).await
}

/// [`run`], each call under a `with_deadline(scope)` when given: then a call that would wait
/// must time out by the scope's deadline instead.
async fn run_in(calls: &[Timed], d: Duration, scope: Option<Duration>) -> Vec<String> {
    let runs: Vec<_> = calls
        .iter()
        .map(|c| {
            let (mut expect, mut call) = ((c.expect)(d), (c.call)(d));
            if let Some(scope) = scope {
                if matches!(expect, Expect::Pending | Expect::Timeout(_)) {
                    expect = Expect::Timeout(Some(scope));
                }
                call = Box::pin(with_deadline(scope, call));
            }
            let watch_for = match expect {
                Expect::Pending => PROBE,
                Expect::Done | Expect::Refused => PROMPT,
                Expect::Timeout(bound) => bound.unwrap_or(d) + SLACK * 3,
                Expect::DoneOrTimeout => d + SLACK * 3,
            };
            let task = tokio::spawn(async move {
                let started = Instant::now();
                let outcome = tokio::time::timeout(watch_for, call).await;
                (expect, started.elapsed(), outcome)
            });
            (c.name, task)
        })
        .collect();
    let mut failed = Vec::new();
    for (name, task) in runs {
        let (expect, took, outcome) = match task.await {
            Ok(done) => done,
            Err(e) => {
                let panic = e.try_into_panic().map(|p| {
                    p.downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default()
                });
                failed.push(format!("{name}({d:?}): PANICKED {panic:?}"));
                continue;
            }
        };
        let right = match (expect, &outcome) {
            (Expect::Pending, Err(_)) => true,
            (Expect::Done, Ok(Ok(()))) => took <= PROMPT,
            (Expect::Refused, Ok(Err(Error::InvalidArgument { .. }))) => took <= PROMPT,
            (Expect::Timeout(bound), Ok(Err(e))) => ran_out(e) && took <= bound.unwrap_or(d) + SLACK,
            (Expect::DoneOrTimeout, Ok(Ok(()))) => took <= d + SLACK,
            (Expect::DoneOrTimeout, Ok(Err(e))) => ran_out(e) && took <= d + SLACK,
            _ => false,
        };
        if !right {
            let outcome = match outcome {
                Ok(outcome) => format!("{outcome:?}"),
                Err(_) => "still running".to_string(),
            };
            failed.push(format!("{name}({d:?}): want {expect:?}, got {outcome} after {took:?}"));
        }
    }
    failed
}

/// A name no earlier call used (for calls that leave state behind on purpose).
fn fresh(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{prefix}-{}", N.fetch_add(1, Ordering::SeqCst))
}

/// The ShedLock clock cannot write a lock held past the year 9999: a few durations it refuses.
fn shed_least(d: Duration) -> Expect {
    if d > Duration::from_secs(60) {
        Expect::Refused
    } else {
        Expect::Done
    }
}

/// `Scheduled::every`: at least 1 ms, a first tick before the year 10000.
fn interval(d: Duration) -> Expect {
    if d < Duration::from_millis(1) || d.as_millis() >= END_OF_FORMAT_MS {
        Expect::Refused
    } else {
        Expect::Done
    }
}

/// `Scheduled::at_most_for`, with `every(1 h)`.
fn at_most(d: Duration) -> Expect {
    shedlock_until(d)
}

/// `Scheduled::at_least_for`, with `at_most_for(1 h)`.
fn at_least(d: Duration) -> Expect {
    if d > Duration::from_secs(3_600) {
        Expect::Refused
    } else {
        Expect::Done
    }
}

/// A `with_deadline` scope: a deadline passed already cuts every operation in it.
fn scope(d: Duration) -> Expect {
    if d <= Duration::from_nanos(1) {
        Expect::Timeout(None)
    } else {
        free_wait(d)
    }
}

/// `FrameworkBuilder::session_timeout`: 1 ms to `i32::MAX` ms (what the protocol carries);
/// one much shorter than a connection's round trips may not connect (zookeeper-client gives
/// each connection attempt 2/5 of it).
fn session(d: Duration) -> Expect {
    if d < Duration::from_millis(1) || d > Duration::from_millis(i32::MAX as u64) {
        Expect::Refused
    } else if d >= Duration::from_secs(1) {
        Expect::Done
    } else {
        Expect::DoneOrTimeout
    }
}

/// A delete of a TTL node: one of a short TTL may be gone already (the server reaped it).
fn gone_or(deleted: Outcome) -> Outcome {
    match deleted {
        Err(e) if e.is_not_found() => Ok(()),
        other => other,
    }
}

/// An unlock of a ShedLock held for `d`: a hold shorter than the round trips has expired by
/// then (the guard tells it as lost).
fn expired_or(d: Duration, unlocked: Outcome) -> Outcome {
    match unlocked {
        Err(e) if e.is_lost() && d < Duration::from_secs(10) => Ok(()),
        other => other,
    }
}

/// `FrameworkBuilder::connection_timeout` / `operation_timeout`: above zero; a tiny one may
/// run out before the session is up.
fn positive(d: Duration) -> Expect {
    if d.is_zero() {
        Expect::Refused
    } else if d >= Duration::from_secs(1) {
        Expect::Done
    } else {
        Expect::DoneOrTimeout
    }
}

/// `shutdown(d)` of a connected framework: acknowledged in time unless `d` is a deadline
/// shorter than the close's round trip (zero is a try: bounded by one operation's time).
fn close(d: Duration) -> Expect {
    free_wait(d)
}

/// What the uncontended calls use: `fw`'s free recipes under `base`.
struct Free {
    latch: LeaderLatch,
    cache: Arc<Cache>,
    services: Arc<ServiceDiscovery<()>>,
    service_cache: Arc<ServiceCache<()>>,
    node: Arc<PersistentNode>,
    member: Arc<GroupMember>,
    ttl_node: Arc<PersistentTtlNode>,
}

impl Free {
    async fn new(fw: &Framework, base: &str) -> Free {
        let at = |rest: &str| format!("{base}/{rest}");
        let latch = LeaderLatch::new(fw, &at("leader"), "free").unwrap();
        latch.start().await.unwrap();
        latch.await_leadership_timeout(PROMPT).await.expect("the only participant leads");
        fw.create(&at("cached/child"), b"x", CreateMode::Persistent).await.unwrap();
        let cache = Cache::children(fw, &at("cached")).build().unwrap();
        cache.start().await.unwrap();
        cache.initialized_timeout(PROMPT).await.unwrap();
        let services = ServiceDiscovery::<()>::new(fw, &at("services")).unwrap();
        let service_cache = services.service_cache("svc").unwrap();
        service_cache.start().await.unwrap();
        let node = PersistentNode::new(fw, &at("node"), NodeMode::Ephemeral, "n").unwrap();
        node.start().await.unwrap();
        node.wait_for_initial_create(PROMPT).await.unwrap();
        let member = GroupMember::new(fw, &at("group"), "m", "").unwrap();
        member.start().await.unwrap();
        member.wait_for_initial_create(PROMPT).await.unwrap();
        let ttl_node = PersistentTtlNode::new(fw, &at("ttl-node"), Duration::from_secs(60), "").unwrap();
        ttl_node.start().await.unwrap();
        ttl_node.wait_for_initial_create(PROMPT).await.unwrap();
        let (node, member, ttl_node) = (Arc::new(node), Arc::new(member), Arc::new(ttl_node));
        let (cache, services, service_cache) = (Arc::new(cache), Arc::new(services), Arc::new(service_cache));
        Free { latch, cache, services, service_cache, node, member, ttl_node }
    }

    async fn close(self) {
        self.latch.close().await.unwrap();
        self.cache.close().await.unwrap();
        self.service_cache.close().await.unwrap();
        self.services.close().await.unwrap();
        self.node.close().await.unwrap();
        self.member.close().await.unwrap();
        self.ttl_node.close().await.unwrap();
    }
}

/// Every timed method on free recipes of `fw` under `base` (`cs`: the server, for frameworks
/// of their own).
fn free_calls(fw: &Framework, cs: &str, base: &str, free: &Free) -> Vec<Timed> {
    let at = |rest: &str| format!("{base}/{rest}");
    let fw = fw.clone();
    let cs = cs.to_string();
    let mutex = InterProcessMutex::new(&fw, &at("mutex")).unwrap();
    let timed_lock = InterProcessMutex::new(&fw, &at("timed-hold")).unwrap();
    let renewed = InterProcessMutex::new(&fw, &at("renewed")).unwrap();
    let sem_mutex = InterProcessSemaphoreMutex::new(&fw, &at("semaphore-mutex")).unwrap();
    let as_trait: Arc<dyn InterProcessLock> = Arc::new(InterProcessSemaphoreMutex::new(&fw, &at("trait")).unwrap());
    // one recipe per call: the calls of a case run at once, and must not contend
    let rw = |name: &str| InterProcessReadWriteLock::new(&fw, &at(name)).unwrap();
    let (rw_read, rw_write, rw_read_side, rw_write_side) = (rw("rw-read"), rw("rw-write"), rw("rw-r"), rw("rw-w"));
    let sem = |name: &str| InterProcessSemaphoreV2::new(&fw, &at(name), 2).unwrap();
    let (sem, sem_many, expiring, expiring_any) = (sem("semaphore"), sem("many"), sem("expiring"), sem("expiring-any"));
    let multi = Arc::new(InterProcessMultiLock::from_paths(&fw, [at("multi-a"), at("multi-b")]).unwrap());
    let barrier = DistributedBarrier::new(&fw, &at("barrier")).unwrap();
    let double = Arc::new(DistributedDoubleBarrier::new(&fw, &at("double-enter"), 1).unwrap());
    let leaving = Arc::new(DistributedDoubleBarrier::new(&fw, &at("double-leave"), 1).unwrap());
    let countdown = DistributedCountDownLatch::new(&fw, &at("countdown")).unwrap();
    let latch = free.latch.clone();
    let simple = |name: &str| SimpleDistributedQueue::new(&fw, &at(name)).unwrap().with_max_items(usize::MAX).unwrap();
    let (simple_take, simple_offer) = (simple("simple-take"), simple("simple-offer"));
    let fifo =
        |name: &str| -> DistributedQueue { QueueBuilder::new(&fw, &at(name)).max_items(usize::MAX).build().unwrap() };
    let (fifo_put, fifo_take, fifo_safe) = (fifo("fifo-put"), fifo("fifo-take"), fifo("fifo-safe"));
    let ids: DistributedIdQueue = DistributedIdQueue::new(&fw, &at("ids")).unwrap();
    let prio: DistributedPriorityQueue = DistributedPriorityQueue::new(&fw, &at("prio")).unwrap();
    let delay: DistributedDelayQueue = DistributedDelayQueue::new(&fw, &at("delay")).unwrap();
    let cache = free.cache.clone();
    let service_cache = free.service_cache.clone();
    let services = free.services.clone();
    let (node, member, ttl_node) = (free.node.clone(), free.member.clone(), free.ttl_node.clone());
    let shedlock = ShedLock::new(&fw).root(&at("shedlock")).unwrap();
    let base = base.to_string();
    vec![
        call!("mutex acquire_timeout", free_wait, |d| mutex => mutex.acquire_timeout(d).await?.release().await),
        call!("InterProcessLock::acquire_timeout", free_wait, |d| as_trait => {
            as_trait.acquire_timeout(d).await?.release().await
        }),
        call!("semaphore mutex acquire_timeout", free_wait, |d| sem_mutex => {
            sem_mutex.acquire_timeout(d).await?.release().await
        }),
        call!("read_timeout", free_wait, |d| rw_read => rw_read.read_timeout(d).await?.release().await),
        call!("write_timeout", free_wait, |d| rw_write => rw_write.write_timeout(d).await?.release().await),
        call!("ReadLock::acquire_timeout", free_wait, |d| rw_read_side => {
            rw_read_side.read_lock().acquire_timeout(d).await?.release().await
        }),
        call!("WriteLock::acquire_timeout", free_wait, |d| rw_write_side => {
            rw_write_side.write_lock().acquire_timeout(d).await?.release().await
        }),
        call!("semaphore acquire_timeout", free_wait, |d| sem => sem.acquire_timeout(d).await?.release().await),
        call!("semaphore acquire_many_timeout", free_wait, |d| sem_many => {
            release_all(sem_many.acquire_many_timeout(2, d).await?).await
        }),
        call!("semaphore acquire_with_expiry_timeout(60 s, d)", free_wait, |d| expiring => {
            expiring.acquire_with_expiry_timeout(Duration::from_secs(60), d).await?.release().await
        }),
        call!("semaphore acquire_with_expiry_timeout(d, d)", expiry_and_wait_free, |d| expiring_any => {
            let permit: ExpiringPermit = expiring_any.acquire_with_expiry_timeout(d, d).await?;
            // a permit of a few ms may be reclaimed already
            let _ = permit.release().await;
            Ok(())
        }),
        call!("multi-lock acquire_timeout", free_wait, |d| multi => multi.acquire_timeout(d).await?.release().await),
        call!("TimedHold::acquire", length, |d| timed_lock => TimedHold::acquire(&timed_lock, d).await?.release().await),
        call!("TimedHold::new / renew", length, |d| renewed => {
            let hold = TimedHold::new(renewed.acquire().await?, Duration::from_secs(60))?;
            let renewal = hold.renew(d);
            hold.release().await?;
            renewal
        }),
        call!("InterProcessMutex::with_server_ttl", ttl, |d| fw => {
            InterProcessMutex::new(&fw, "/ttl-lock")?.with_server_ttl(d).map(drop)
        }),
        call!("InterProcessReadWriteLock::with_server_ttl", ttl, |d| fw => {
            InterProcessReadWriteLock::new(&fw, "/ttl-lock")?.with_server_ttl(d).map(drop)
        }),
        call!("barrier wait_on_barrier_timeout", free_wait, |d| barrier => barrier.wait_on_barrier_timeout(d).await),
        call!("double barrier enter_timeout", free_wait, |d| double => {
            double.enter_timeout(d).await?;
            double.leave().await
        }),
        call!("double barrier leave_timeout", free_wait, |d| leaving => {
            leaving.enter().await?;
            leaving.leave_timeout(d).await
        }),
        call!("count-down latch wait_timeout", free_wait, |d| countdown => countdown.wait_timeout(d).await),
        call!("leader latch await_leadership_timeout", always, |d| latch => latch.await_leadership_timeout(d).await.map(drop)),
        call!("simple queue take_timeout", free_wait, |d| simple_take => {
            simple_take.offer(b"x").await?;
            simple_take.take_timeout(d).await.map(drop)
        }),
        call!("simple queue offer_timeout", free_wait, |d| simple_offer => {
            simple_offer.offer_timeout(b"x", d).await.map(drop)
        }),
        call!("queue put_timeout", free_wait, |d| fifo_put => fifo_put.put_timeout(&b"x".to_vec(), d).await.map(drop)),
        call!("queue take_timeout", free_wait, |d| fifo_take => {
            fifo_take.put(&b"x".to_vec()).await?;
            fifo_take.take_timeout(d).await.map(drop)
        }),
        call!("queue take_safe_timeout", free_wait, |d| fifo_safe => {
            fifo_safe.put(&b"x".to_vec()).await?;
            fifo_safe.take_safe_timeout(d).await?.complete().await.map(drop)
        }),
        call!("id queue put_timeout", free_wait, |d| ids => ids.put_timeout(&b"x".to_vec(), "id", d).await.map(drop)),
        call!("priority queue put_timeout", free_wait, |d| prio => prio.put_timeout(&b"x".to_vec(), 1, d).await.map(drop)),
        call!("delay queue put_multi_at_timeout", free_wait, |d| delay => {
            delay.put_multi_at_timeout(&[b"x".to_vec()], SystemTime::now(), d).await.map(drop)
        }),
        call!("delay queue put_after", always, |d| delay => delay.put_after(&b"x".to_vec(), d).await.map(drop)),
        call!("cache initialized_timeout", always, |d| cache => cache.initialized_timeout(d).await),
        call!("service cache initialized_timeout", always, |d| service_cache => service_cache.initialized_timeout(d).await),
        call!("persistent node wait_for_initial_create", always, |d| node => node.wait_for_initial_create(d).await.map(drop)),
        call!("group member wait_for_initial_create", always, |d| member => member.wait_for_initial_create(d).await.map(drop)),
        call!("TTL node wait_for_initial_create", always, |d| ttl_node => ttl_node.wait_for_initial_create(d).await.map(drop)),
        call!("PersistentTtlNode::new", ttl, |d| fw => PersistentTtlNode::new(&fw, "/ttl-node", d, "").map(drop)),
        call!("NodeMode::PersistentWithTtl", ttl, |d| fw => {
            PersistentNode::new(&fw, "/ttl-node", NodeMode::PersistentWithTtl(d), "").map(drop)
        }),
        call!("create_with_ttl", ttl, |d| fw, base => {
            let path = format!("{base}/{}", fresh("ttl"));
            fw.create_with_ttl(&path, b"", CreateMode::Persistent, d).await?;
            gone_or(fw.delete(&path).await)
        }),
        call!("Transaction::create_with_ttl", ttl, |d| fw, base => {
            let path = format!("{base}/{}", fresh("txn-ttl"));
            fw.transaction().create_with_ttl(&path, b"", CreateMode::Persistent, d).commit().await?;
            gone_or(fw.delete(&path).await)
        }),
        call!("ShedLock try_lock(at_most_for)", shedlock_until, |d| shedlock => {
            let guard = shedlock.try_lock(&fresh("most"), d, Duration::ZERO).await?;
            expired_or(d, guard.ok_or(Error::InvalidState("a free ShedLock not taken"))?.unlock().await)
        }),
        call!("ShedLock try_lock(at_least_for)", shed_least, |d| shedlock => {
            let guard = shedlock.try_lock(&fresh("least"), Duration::from_secs(60), d).await?;
            guard.ok_or(Error::InvalidState("a free ShedLock not taken"))?.unlock().await
        }),
        call!("ScheduledLockGuard::extend", shedlock_until, |d| shedlock => {
            let guard = shedlock.try_lock(&fresh("extend"), Duration::from_secs(60), Duration::ZERO).await?;
            let guard = guard.ok_or(Error::InvalidState("a free ShedLock not taken"))?;
            let extended = guard.extend(d).await;
            expired_or(d, guard.unlock().await)?;
            extended
        }),
        call!("Scheduled::every", interval, |d| fw, shedlock => {
            let job = Scheduled::new(&fw, &fresh("every")).lock(shedlock.clone()).every(d).at_most_for(Duration::from_secs(60));
            job.start(|_| async { Ok::<_, String>(()) }).await?.close().await
        }),
        call!("Scheduled::at_most_for", at_most, |d| fw, shedlock => {
            let job = Scheduled::new(&fw, &fresh("at-most")).lock(shedlock.clone()).every(Duration::from_secs(3_600)).at_most_for(d);
            job.start(|_| async { Ok::<_, String>(()) }).await?.close().await
        }),
        call!("Scheduled::at_least_for", at_least, |d| fw, shedlock => {
            let job = Scheduled::new(&fw, &fresh("at-least"))
                .lock(shedlock.clone())
                .every(Duration::from_secs(3_600))
                .at_most_for(Duration::from_secs(3_600))
                .at_least_for(d);
            job.start(|_| async { Ok::<_, String>(()) }).await?.close().await
        }),
        call!("DownInstancePolicy::new", always, |d| services => {
            let provider = services.provider("svc").down_instance_policy(DownInstancePolicy::new(d, 1)).build()?;
            provider.start().await?;
            provider.note_error(&zk_recipes::ServiceInstance::builder("svc").id("i").address("h").port(1).build()?);
            let _ = provider.get_instance();
            provider.close().await
        }),
        call!("Framework::wait_connected", always, |d| fw => fw.wait_connected(d).await),
        call!("with_deadline", scope, |d| fw => with_deadline(d, fw.exists("/")).await.map(drop)),
        call!("Deadline::after in with_deadline", scope, |d| fw => with_deadline(Deadline::after(d), fw.exists("/")).await.map(drop)),
        call!("Framework::shutdown", close, |d| cs => fixtures::framework(&cs).await.shutdown(d).await),
        call!("FrameworkBuilder::session_timeout", session, |d| cs => {
            Framework::builder().connect_string(&cs).session_timeout(d).connect().await?.shutdown(PROMPT).await
        }),
        call!("FrameworkBuilder::connection_timeout", positive, |d| cs => {
            Framework::builder().connect_string(&cs).connection_timeout(d).connect().await?.shutdown(PROMPT).await
        }),
        call!("FrameworkBuilder::operation_timeout", positive, |d| cs => {
            let fw = Framework::builder().connect_string(&cs).operation_timeout(d).connect().await?;
            let read = fw.exists("/").await.map(drop);
            let _ = fw.shutdown(PROMPT).await;
            read
        }),
    ]
}

/// An expiring permit with expiry `d` waiting at most `d` for its lease, uncontended.
fn expiry_and_wait_free(d: Duration) -> Expect {
    if ttl_ok(d) {
        free_wait(d)
    } else {
        Expect::Refused
    }
}

/// The same, contended.
fn expiry_and_wait_busy(d: Duration) -> Expect {
    if ttl_ok(d) {
        busy_wait(d)
    } else {
        Expect::Refused
    }
}

/// A timed hold of a held lock: waits whatever its length (it is no timeout).
fn length_busy(d: Duration) -> Expect {
    match length(d) {
        Expect::Done => Expect::Pending,
        other => other,
    }
}

async fn release_all(leases: Vec<Lease>) -> Outcome {
    for lease in leases {
        lease.release().await?;
    }
    Ok(())
}

/// What the holder holds while the contended calls wait.
struct Held {
    held: Vec<HeldLock>,
    leases: Vec<Lease>,
    leader: LeaderLatch,
    follower: LeaderLatch,
    guard: zk_recipes::ScheduledLockGuard,
    inside: DistributedDoubleBarrier,
}

/// The full bounded queues under `base`.
fn full_queue(fw: &Framework, base: &str, name: &str) -> QueueBuilder<Vec<u8>> {
    QueueBuilder::new(fw, &format!("{base}/{name}")).max_items(1)
}

impl Held {
    /// `holder` takes every lock and lease under `base`, sets the barrier and the latch's
    /// count, fills the bounded queues, leads the election (`follower_fw` follows), holds the
    /// ShedLock and stays inside a double barrier.
    async fn new(holder: &Framework, follower_fw: &Framework, base: &str) -> Held {
        let at = |rest: &str| format!("{base}/{rest}");
        let mut held = Vec::new();
        for lock in busy_locks(holder, base) {
            held.push(lock.acquire().await.unwrap());
        }
        let leases = InterProcessSemaphoreV2::new(holder, &at("semaphore"), 2).unwrap().acquire_many(2).await.unwrap();
        DistributedBarrier::new(holder, &at("barrier")).unwrap().set_barrier().await.unwrap();
        assert!(DistributedCountDownLatch::new(holder, &at("countdown")).unwrap().try_set_count(1).await.unwrap());
        let item = b"full".to_vec();
        full_queue(holder, base, "fifo").build::<zk_recipes::queue::Fifo>().unwrap().put(&item).await.unwrap();
        full_queue(holder, base, "ids").build::<zk_recipes::queue::ById>().unwrap().put(&item, "id").await.unwrap();
        full_queue(holder, base, "prio").build::<zk_recipes::queue::ByPriority>().unwrap().put(&item, 1).await.unwrap();
        let delayed = full_queue(holder, base, "delay").build::<zk_recipes::queue::Delayed>().unwrap();
        delayed.put_at(&item, SystemTime::now()).await.unwrap();
        let simple = SimpleDistributedQueue::new(holder, &at("simple-full")).unwrap().with_max_items(1).unwrap();
        simple.offer(b"full").await.unwrap();
        let leader = LeaderLatch::new(holder, &at("leader"), "holder").unwrap();
        leader.start().await.unwrap();
        leader.await_leadership_timeout(PROMPT).await.unwrap();
        let follower = LeaderLatch::new(follower_fw, &at("leader"), "follower").unwrap();
        follower.start().await.unwrap();
        let shedlock = ShedLock::new(holder).root(&at("shedlock")).unwrap();
        let guard = shedlock.try_lock("held", Duration::from_secs(600), Duration::ZERO).await.unwrap().unwrap();
        let inside = DistributedDoubleBarrier::new(holder, &at("double-leave"), 1).unwrap();
        inside.enter().await.unwrap();
        Held { held, leases, leader, follower, guard, inside }
    }

    async fn release(self) {
        for held in self.held {
            held.release().await.unwrap();
        }
        release_all(self.leases).await.unwrap();
        self.follower.close().await.unwrap();
        self.leader.close().await.unwrap();
        self.guard.unlock().await.unwrap();
        self.inside.leave().await.unwrap();
    }
}

/// The locks the holder holds, through the common trait.
fn busy_locks(fw: &Framework, base: &str) -> Vec<Arc<dyn InterProcessLock>> {
    let at = |rest: &str| format!("{base}/{rest}");
    vec![
        Arc::new(InterProcessMutex::new(fw, &at("mutex")).unwrap()),
        Arc::new(InterProcessSemaphoreMutex::new(fw, &at("semaphore-mutex")).unwrap()),
        Arc::new(InterProcessReadWriteLock::new(fw, &at("rw")).unwrap().write_lock()),
    ]
}

/// Every timed method of `fw` on recipes under `base` that the holder holds (`held.follower`:
/// the waiting leader latch).
fn busy_calls(fw: &Framework, base: &str, held: &Held) -> Vec<Timed> {
    let at = |rest: &str| format!("{base}/{rest}");
    let mutex = InterProcessMutex::new(fw, &at("mutex")).unwrap();
    let sem_mutex = InterProcessSemaphoreMutex::new(fw, &at("semaphore-mutex")).unwrap();
    let as_trait: Arc<dyn InterProcessLock> =
        Arc::new(InterProcessSemaphoreMutex::new(fw, &at("semaphore-mutex")).unwrap());
    let rw = InterProcessReadWriteLock::new(fw, &at("rw")).unwrap();
    let sem = InterProcessSemaphoreV2::new(fw, &at("semaphore"), 2).unwrap();
    let multi = Arc::new(InterProcessMultiLock::from_paths(fw, [at("multi-free"), at("mutex")]).unwrap());
    let barrier = DistributedBarrier::new(fw, &at("barrier")).unwrap();
    let leaving = Arc::new(DistributedDoubleBarrier::new(fw, &at("double-leave"), 1).unwrap());
    let countdown = DistributedCountDownLatch::new(fw, &at("countdown")).unwrap();
    let follower = held.follower.clone();
    let empty: DistributedQueue = DistributedQueue::new(fw, &at("empty")).unwrap();
    let simple_empty = SimpleDistributedQueue::new(fw, &at("simple-empty")).unwrap();
    let fifo = full_queue(fw, base, "fifo").build::<zk_recipes::queue::Fifo>().unwrap();
    let ids = full_queue(fw, base, "ids").build::<zk_recipes::queue::ById>().unwrap();
    let prio = full_queue(fw, base, "prio").build::<zk_recipes::queue::ByPriority>().unwrap();
    let delay = full_queue(fw, base, "delay").build::<zk_recipes::queue::Delayed>().unwrap();
    let simple_full = SimpleDistributedQueue::new(fw, &at("simple-full")).unwrap().with_max_items(1).unwrap();
    let shedlock = ShedLock::new(fw).root(&at("shedlock")).unwrap();
    let (fw, base) = (fw.clone(), base.to_string());
    vec![
        call!("mutex acquire_timeout", busy_wait, |d| mutex => mutex.acquire_timeout(d).await.map(drop)),
        call!("InterProcessLock::acquire_timeout", busy_wait, |d| as_trait => as_trait.acquire_timeout(d).await.map(drop)),
        call!("semaphore mutex acquire_timeout", busy_wait, |d| sem_mutex => sem_mutex.acquire_timeout(d).await.map(drop)),
        call!("read_timeout", busy_wait, |d| rw => rw.read_timeout(d).await.map(drop)),
        call!("write_timeout", busy_wait, |d| rw => rw.write_timeout(d).await.map(drop)),
        call!("ReadLock::acquire_timeout", busy_wait, |d| rw => rw.read_lock().acquire_timeout(d).await.map(drop)),
        call!("semaphore acquire_timeout", busy_wait, |d| sem => sem.acquire_timeout(d).await.map(drop)),
        call!("semaphore acquire_many_timeout", busy_wait, |d| sem => sem.acquire_many_timeout(2, d).await.map(drop)),
        call!("semaphore acquire_with_expiry_timeout(60 s, d)", busy_wait, |d| sem => {
            sem.acquire_with_expiry_timeout(Duration::from_secs(60), d).await.map(drop)
        }),
        call!("semaphore acquire_with_expiry_timeout(d, d)", expiry_and_wait_busy, |d| sem => {
            sem.acquire_with_expiry_timeout(d, d).await.map(drop)
        }),
        call!("multi-lock acquire_timeout", busy_wait, |d| multi => multi.acquire_timeout(d).await.map(drop)),
        call!("TimedHold::acquire", length_busy, |d| mutex => TimedHold::acquire(&mutex, d).await.map(drop)),
        call!("barrier wait_on_barrier_timeout", busy_wait, |d| barrier => barrier.wait_on_barrier_timeout(d).await),
        call!("double barrier enter_timeout", busy_wait, |d| fw, base => {
            let alone = DistributedDoubleBarrier::new(&fw, &format!("{base}/{}", fresh("double-enter")), 2)?;
            alone.enter_timeout(d).await
        }),
        call!("double barrier leave_timeout", busy_wait, |d| leaving => leaving.leave_timeout(d).await),
        call!("count-down latch wait_timeout", busy_wait, |d| countdown => countdown.wait_timeout(d).await),
        call!("leader latch await_leadership_timeout", busy_wait, |d| follower => follower.await_leadership_timeout(d).await.map(drop)),
        call!("queue take_timeout", busy_wait, |d| empty => empty.take_timeout(d).await.map(drop)),
        call!("queue take_safe_timeout", busy_wait, |d| empty => empty.take_safe_timeout(d).await.map(drop)),
        call!("simple queue take_timeout", busy_wait, |d| simple_empty => simple_empty.take_timeout(d).await.map(drop)),
        call!("queue put_timeout", busy_wait, |d| fifo => fifo.put_timeout(&b"x".to_vec(), d).await.map(drop)),
        call!("id queue put_timeout", busy_wait, |d| ids => ids.put_timeout(&b"x".to_vec(), "id", d).await.map(drop)),
        call!("priority queue put_timeout", busy_wait, |d| prio => prio.put_timeout(&b"x".to_vec(), 1, d).await.map(drop)),
        call!("delay queue put_multi_at_timeout", busy_wait, |d| delay => {
            delay.put_multi_at_timeout(&[b"x".to_vec()], SystemTime::now(), d).await.map(drop)
        }),
        call!("simple queue offer_timeout", busy_wait, |d| simple_full => simple_full.offer_timeout(b"x", d).await.map(drop)),
        call!("ShedLock try_lock of a held lock", shedlock_until, |d| shedlock => {
            match shedlock.try_lock("held", d, Duration::ZERO).await? {
                None => Ok(()),
                Some(_) => Err(Error::InvalidState("took a ShedLock another replica holds")),
            }
        }),
    ]
}

/// The waits without a timeout of `fw` on the recipes under `base` that the holder holds:
/// they wait as long as it takes, except under a caller's `with_deadline` scope.
fn unbounded_calls(fw: &Framework, base: &str, held: &Held) -> Vec<Timed> {
    let at = |rest: &str| format!("{base}/{rest}");
    let pending = |_: Duration| Expect::Pending;
    let mutex = InterProcessMutex::new(fw, &at("mutex")).unwrap();
    let sem_mutex = InterProcessSemaphoreMutex::new(fw, &at("semaphore-mutex")).unwrap();
    let rw = InterProcessReadWriteLock::new(fw, &at("rw")).unwrap();
    let sem = InterProcessSemaphoreV2::new(fw, &at("semaphore"), 2).unwrap();
    let multi = Arc::new(InterProcessMultiLock::from_paths(fw, [at("multi-free"), at("mutex")]).unwrap());
    let barrier = DistributedBarrier::new(fw, &at("barrier")).unwrap();
    let leaving = Arc::new(DistributedDoubleBarrier::new(fw, &at("double-leave"), 1).unwrap());
    let countdown = DistributedCountDownLatch::new(fw, &at("countdown")).unwrap();
    let follower = held.follower.clone();
    let empty: DistributedQueue = DistributedQueue::new(fw, &at("empty")).unwrap();
    let simple_empty = SimpleDistributedQueue::new(fw, &at("simple-empty")).unwrap();
    let fifo = full_queue(fw, base, "fifo").build::<zk_recipes::queue::Fifo>().unwrap();
    let simple_full = SimpleDistributedQueue::new(fw, &at("simple-full")).unwrap().with_max_items(1).unwrap();
    let (fw, base) = (fw.clone(), base.to_string());
    vec![
        call!("mutex acquire", pending, |_d| mutex => mutex.acquire().await.map(drop)),
        call!("semaphore mutex acquire", pending, |_d| sem_mutex => sem_mutex.acquire().await.map(drop)),
        call!("read", pending, |_d| rw => rw.read().await.map(drop)),
        call!("write", pending, |_d| rw => rw.write().await.map(drop)),
        call!("semaphore acquire", pending, |_d| sem => sem.acquire().await.map(drop)),
        call!("semaphore acquire_many", pending, |_d| sem => sem.acquire_many(2).await.map(drop)),
        call!("semaphore acquire_with_expiry", pending, |_d| sem => {
            sem.acquire_with_expiry(Duration::from_secs(60)).await.map(drop)
        }),
        call!("multi-lock acquire", pending, |_d| multi => multi.acquire().await.map(drop)),
        call!("barrier wait_on_barrier", pending, |_d| barrier => barrier.wait_on_barrier().await),
        call!("double barrier enter", pending, |_d| fw, base => {
            DistributedDoubleBarrier::new(&fw, &format!("{base}/{}", fresh("double-enter")), 2)?.enter().await
        }),
        call!("double barrier leave", pending, |_d| leaving => leaving.leave().await),
        call!("count-down latch wait", pending, |_d| countdown => countdown.wait().await),
        call!("leader latch await_leadership", pending, |_d| follower => follower.await_leadership().await.map(drop)),
        call!("queue take", pending, |_d| empty => empty.take().await.map(drop)),
        call!("queue take_safe", pending, |_d| empty => empty.take_safe().await.map(drop)),
        call!("simple queue take", pending, |_d| simple_empty => simple_empty.take().await.map(drop)),
        call!("queue put", pending, |_d| fifo => fifo.put(&b"x".to_vec()).await.map(drop)),
        call!("simple queue offer", pending, |_d| simple_full => simple_full.offer(b"x").await.map(drop)),
    ]
}

/// A framework whose link forwards nothing, with recipes started on it that never get their
/// first answer; and a proxy for frameworks that are shut down across such a link.
struct Stalled {
    proxy: TcpProxy,
    fw: Framework,
    closing: Arc<TcpProxy>,
    cache: Arc<Cache>,
    service_cache: Arc<ServiceCache<()>>,
    node: Arc<PersistentNode>,
    member: Arc<GroupMember>,
    ttl_node: Arc<PersistentTtlNode>,
}

async fn stalled_framework(cs: &str) -> Framework {
    fixtures::framework_with(cs, |b| b.operation_timeout(STALLED_OPERATION)).await
}

impl Stalled {
    async fn new(cs: &str, base: &str) -> Stalled {
        let at = |rest: &str| format!("{base}/{rest}");
        let proxy = TcpProxy::start(cs).await.unwrap();
        let closing = Arc::new(TcpProxy::start(cs).await.unwrap());
        let fw = stalled_framework(proxy.connect_string()).await;
        proxy.set_mode(ProxyMode::Blackhole);
        proxy.cut();
        let cache = Cache::children(&fw, &at("cached")).build().unwrap();
        cache.start().await.unwrap();
        let service_cache = ServiceDiscovery::<()>::new(&fw, &at("services")).unwrap().service_cache("svc").unwrap();
        // started: it goes on loading past the start's own (short) bound
        let _ = with_deadline(Duration::from_millis(10), service_cache.start()).await;
        let node = PersistentNode::new(&fw, &at("node"), NodeMode::Ephemeral, "").unwrap();
        node.start().await.unwrap();
        let member = GroupMember::new(&fw, &at("group"), "m", "").unwrap();
        member.start().await.unwrap();
        let ttl_node = PersistentTtlNode::new(&fw, &at("ttl-node"), Duration::from_secs(60), "").unwrap();
        ttl_node.start().await.unwrap();
        let (node, member, ttl_node) = (Arc::new(node), Arc::new(member), Arc::new(ttl_node));
        let (cache, service_cache) = (Arc::new(cache), Arc::new(service_cache));
        Stalled { proxy, fw, closing, cache, service_cache, node, member, ttl_node }
    }

    fn calls(&self) -> Vec<Timed> {
        let (fw, cache, service_cache) = (self.fw.clone(), self.cache.clone(), self.service_cache.clone());
        let (node, member, ttl_node) = (self.node.clone(), self.member.clone(), self.ttl_node.clone());
        let closing = self.closing.clone();
        vec![
            call!("stalled cache initialized_timeout", stalled_wait, |d| cache => cache.initialized_timeout(d).await),
            call!("stalled service cache initialized_timeout", stalled_wait, |d| service_cache => {
                service_cache.initialized_timeout(d).await
            }),
            call!("stalled persistent node wait_for_initial_create", stalled_wait, |d| node => {
                node.wait_for_initial_create(d).await.map(drop)
            }),
            call!("stalled group member wait_for_initial_create", stalled_wait, |d| member => {
                member.wait_for_initial_create(d).await.map(drop)
            }),
            call!("stalled TTL node wait_for_initial_create", stalled_wait, |d| ttl_node => {
                ttl_node.wait_for_initial_create(d).await.map(drop)
            }),
            call!("stalled Framework::wait_connected", stalled_wait, |d| fw => fw.wait_connected(d).await),
            call!("stalled Framework::shutdown", stalled_wait, |d| closing => {
                // (the previous case's call may have been dropped with the link stalled)
                closing.set_mode(ProxyMode::Pass);
                let fw = stalled_framework(closing.connect_string()).await;
                closing.set_mode(ProxyMode::Blackhole);
                fw.shutdown(d).await
            }),
        ]
    }

    async fn close(self) {
        self.proxy.set_mode(ProxyMode::Pass);
        self.closing.set_mode(ProxyMode::Pass);
        self.cache.close().await.unwrap();
        self.service_cache.close().await.unwrap();
        self.node.close().await.unwrap();
        self.member.close().await.unwrap();
        self.ttl_node.close().await.unwrap();
        let _ = self.fw.shutdown(PROMPT).await;
    }
}

/// Everything a case runs against.
struct World {
    cases: Vec<Timed>,
}

/// The durations of the random cases: short ones (a contended call times out), long ones
/// (it waits), and any at all.
fn durations() -> impl Strategy<Value = Duration> {
    prop_oneof![
        prop::sample::select(EXTREMES.to_vec()),
        (0..=SHORT.as_nanos() as u64).prop_map(Duration::from_nanos),
        (SHORT.as_millis() as u64 + 1..=86_400_000u64).prop_map(Duration::from_millis),
        (any::<u64>(), 0..1_000_000_000u32).prop_map(|(secs, nanos)| Duration::new(secs, nanos)),
    ]
}

#[test]
fn every_timed_method_takes_any_duration() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (cs, base) =
        rt.block_on(async { (fixtures::shared_ttl_server().await, format!("/{}", fixtures::unique("durations"))) });
    let (free_fw, waiter, holder, follower_fw) = rt.block_on(async {
        let short = |b: zk_recipes::FrameworkBuilder| b.operation_timeout(Duration::from_secs(5));
        (
            fixtures::framework_with(&cs, short).await,
            fixtures::framework_with(&cs, short).await,
            fixtures::framework(&cs).await,
            fixtures::framework(&cs).await,
        )
    });
    let free_base = format!("{base}/free");
    let busy_base = format!("{base}/busy");
    let stalled_base = format!("{base}/stalled");
    let free = rt.block_on(Free::new(&free_fw, &free_base));
    let held = rt.block_on(Held::new(&holder, &follower_fw, &busy_base));
    let stalled = rt.block_on(Stalled::new(&cs, &stalled_base));
    let mut calls = free_calls(&free_fw, &cs, &free_base, &free);
    let busy_from = calls.len();
    calls.extend(busy_calls(&waiter, &busy_base, &held));
    calls.extend(stalled.calls());
    let world = World { cases: calls };

    // every wait honours a caller's shorter deadline: an hour's timeout, or none, under a
    // scope of SHORT ends by the scope's deadline
    let mut failed = rt.block_on(run_in(&world.cases[busy_from..], Duration::from_secs(3_600), Some(SHORT)));
    let unbounded = unbounded_calls(&waiter, &busy_base, &held);
    failed.extend(rt.block_on(run_in(&unbounded, Duration::MAX, Some(SHORT))));
    for d in EXTREMES {
        failed.extend(rt.block_on(run(&world.cases, d)));
    }
    let config = Config {
        cases: RANDOM_CASES,
        rng_seed: RngSeed::Fixed(SEED),
        failure_persistence: None,
        max_shrink_iters: 8,
        ..Config::default()
    };
    let random = TestRunner::new(config).run(&durations(), |d| {
        let failed = rt.block_on(run(&world.cases, d));
        if failed.is_empty() {
            Ok(())
        } else {
            Err(TestCaseError::fail(failed.join("\n")))
        }
    });
    if let Err(e) = random {
        failed.push(format!("random durations: {e}"));
    }

    // nothing left behind by the calls that timed out or were dropped: no ephemeral node of
    // the waiter, the holder's leases alone, no member of an abandoned double barrier
    rt.block_on(async {
        fixtures::settle(&[&waiter, &free_fw]).await;
        let left = waiter.ephemerals("/").await.unwrap();
        if !left.is_empty() {
            failed.push(format!("the waiter left ephemeral nodes: {left:?}"));
        }
        let leases = holder.children(&format!("{busy_base}/semaphore/leases")).await.unwrap();
        if leases.len() != 2 {
            failed.push(format!("the busy semaphore holds {leases:?}, not the holder's two leases"));
        }
        let mut members = Vec::new();
        for child in holder.children(&busy_base).await.unwrap().into_iter().filter(|c| c.starts_with("double-enter")) {
            members.extend(holder.children(&format!("{busy_base}/{child}")).await.unwrap_or_default());
        }
        if !members.is_empty() {
            failed.push(format!("abandoned double barrier members: {members:?}"));
        }
        drop(world);
        stalled.close().await;
        held.release().await;
        free.close().await;
        fixtures::settle(&[&waiter, &free_fw, &holder]).await;
        let left = free_fw.ephemerals("/").await.unwrap();
        if !left.is_empty() {
            failed.push(format!("the free framework left ephemeral nodes: {left:?}"));
        }
        for fw in [free_fw, waiter, holder, follower_fw] {
            let _ = fw.shutdown(PROMPT).await;
        }
    });
    assert!(failed.is_empty(), "{} calls did not behave:\n{}", failed.len(), failed.join("\n"));
}

proptest! {
    #![proptest_config(Config { cases: 256, rng_seed: RngSeed::Fixed(SEED), failure_persistence: None, ..Config::default() })]

    /// The retry policies, a retry attempt and a deadline take any duration, count and draw:
    /// a pause is saturated, never an overflow.
    #[test]
    fn retry_policies_and_deadlines_take_any_duration(
        d in durations(),
        e in durations(),
        retries in any::<u32>(),
        draw in any::<u32>(),
    ) {
        let error = ZooKeeperError::ConnectionLoss;
        let attempt = RetryAttempt::new(retries, d, &error).with_remaining(e);
        prop_assert_eq!((attempt.elapsed(), attempt.remaining()), (d, e));
        let policies: Vec<Box<dyn RetryPolicy>> = vec![
            Box::new(ExponentialBackoff::new(d, retries)),
            Box::new(BoundedExponentialBackoff::new(d, e, retries)),
            Box::new(RetryNTimes::new(retries, d)),
            Box::new(zk_recipes::retry::RetryOneTime::new(d)),
            Box::new(zk_recipes::retry::RetryUntilElapsed::new(d, e)),
            Box::new(RetryForever::new(d)),
        ];
        for policy in &policies {
            let _ = policy.allow_retry(&attempt);
        }
        prop_assert!(BoundedExponentialBackoff::new(d, e, retries).sleep_for(retries, draw) <= e);
        let _ = ExponentialBackoff::new(d, retries).sleep_for(retries, draw);
        let deadline = Deadline::after(d);
        prop_assert!(deadline.remaining() <= d);
        prop_assert_eq!(deadline.timeout(), d);
        let _ = Deadline::from(d);
        let _ = DownInstancePolicy::new(d, retries);
    }
}
