//! Combined counter updates against real ZooKeeper: many callers on one framework share
//! writes, yet every caller gets its own exact before/after values, exactly once — also when
//! a combined write's reply is lost and when callers are cancelled mid-flight.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use zk_recipes::{DistributedAtomicLong, Framework};
use zk_recipes_testing::{fixtures, ProxyMode, TcpProxy};

/// What one caller asked and got: (delta, before, after).
type Calls = Arc<Mutex<Vec<(i64, i64, i64)>>>;

/// `tasks` tasks on `fw` each making `per_task` additions of `delta(task, i)`; the handles are
/// clones of one (`fresh_handles`: a handle of its own per task, shared through the
/// framework's registry).
fn spawn_adders(
    fw: &Framework,
    path: &str,
    tasks: usize,
    per_task: usize,
    fresh_handles: bool,
    delta: fn(usize, usize) -> i64,
    calls: &Calls,
) -> Vec<tokio::task::JoinHandle<()>> {
    let shared = DistributedAtomicLong::new(fw, path).unwrap();
    (0..tasks)
        .map(|t| {
            let counter = if fresh_handles { DistributedAtomicLong::new(fw, path).unwrap() } else { shared.clone() };
            let calls = calls.clone();
            tokio::spawn(async move {
                for i in 0..per_task {
                    let d = delta(t, i);
                    let r = if d >= 0 { counter.add(d).await } else { counter.subtract(-d).await }.unwrap();
                    assert!(r.succeeded, "{r:?}");
                    calls.lock().unwrap().push((d, r.pre_value, r.post_value));
                }
            })
        })
        .collect()
}

/// Increments of 1: the befores are exactly 0..n, each once, and after = before + 1.
fn assert_every_number_once(calls: &[(i64, i64, i64)], n: i64) {
    assert_eq!(calls.len() as i64, n);
    let mut befores: Vec<i64> = calls
        .iter()
        .map(|&(d, b, a)| {
            assert_eq!((d, a), (1, b + 1), "a caller's after is its before plus its delta");
            b
        })
        .collect();
    befores.sort_unstable();
    assert_eq!(befores, (0..n).collect::<Vec<_>>(), "no number given twice, none skipped");
}

/// Any deltas: each after = before + delta, and the changes chain into one walk from 0 to
/// `last` using every change once (what any order of single writes would give): at every
/// value as many changes leave as arrive, except one more leaving 0 and one more arriving at
/// `last`. A change counted twice or lost breaks the balance or the sum.
fn assert_changes_chain(calls: &[(i64, i64, i64)], last: i64) {
    let mut balance: HashMap<i64, i64> = HashMap::new();
    for &(d, b, a) in calls {
        assert_eq!(a, b.wrapping_add(d), "a caller's after is its before plus its delta");
        *balance.entry(b).or_default() += 1;
        *balance.entry(a).or_default() -= 1;
    }
    *balance.entry(0).or_default() -= 1;
    *balance.entry(last).or_default() += 1;
    balance.retain(|_, n| *n != 0);
    assert!(balance.is_empty(), "the changes do not chain from 0 to {last}: {balance:?}");
    assert_eq!(calls.iter().map(|c| c.0).sum::<i64>(), last, "the value is the sum of the deltas");
}

async fn data_version(fw: &Framework, path: &str) -> i32 {
    fw.get_data(path).await.unwrap().1.version
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_tasks_on_one_framework_each_get_their_own_numbers() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}/counter", fixtures::unique("combined"));
    let calls = Calls::default();
    const N: usize = 10;
    for t in spawn_adders(&fw, &path, 64, N, false, |_, _| 1, &calls) {
        t.await.unwrap();
    }
    let counter = DistributedAtomicLong::new(&fw, &path).unwrap();
    assert_eq!(counter.get().await.unwrap(), 64 * N as i64);
    assert_every_number_once(&calls.lock().unwrap(), 64 * N as i64);
    // combined: fewer writes than increments (each write bumps the data version once)
    let writes = data_version(&fw, &path).await;
    assert!(writes < (64 * N / 2) as i32, "{writes} writes for {} increments: not combined", 64 * N);
    counter.close().await.unwrap();
    let left = fw.children(&path).await.unwrap();
    assert!(left.iter().all(|c| c == "_lock_" || c == "_gate_"), "markers left: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_additions_and_subtractions_chain_exactly() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("combined-mixed"));
    let calls = Calls::default();
    // deltas from -5 to 6, some tasks with handles of their own (shared by path)
    let delta = |t: usize, i: usize| ((t * 7 + i * 13) % 12) as i64 - 5;
    let mut tasks = spawn_adders(&fw, &path, 32, 8, false, delta, &calls);
    tasks.extend(spawn_adders(&fw, &path, 32, 8, true, delta, &calls));
    for t in tasks {
        t.await.unwrap();
    }
    let value = DistributedAtomicLong::new(&fw, &path).unwrap().get().await.unwrap();
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 64 * 8);
    assert_changes_chain(&calls, value);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_of_thirty_two_tasks_share_one_sequence() {
    let cs = fixtures::shared_server().await;
    let (a, b) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("combined-two"));
    let calls = Calls::default();
    const N: usize = 8;
    // on `b`, every task has a handle of its own: the framework's registry combines them
    let mut tasks = spawn_adders(&a, &path, 32, N, false, |_, _| 1, &calls);
    tasks.extend(spawn_adders(&b, &path, 32, N, true, |_, _| 1, &calls));
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(DistributedAtomicLong::new(&a, &path).unwrap().get().await.unwrap(), 64 * N as i64);
    assert_every_number_once(&calls.lock().unwrap(), 64 * N as i64);
}

/// Additions queued at once (one poll, on this test's one thread) go in one write, in call
/// order; an update that is not additive is written alone in its place.
#[tokio::test]
async fn batches_keep_call_order_around_updates_that_are_not_additive() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("combined-order"));
    let counter = DistributedAtomicLong::new(&fw, &path).unwrap();
    counter.force_set(0).await.unwrap();
    let version = data_version(&fw, &path).await;
    let c = &counter;
    let (adds, (cas, more)) = futures_util::future::join(
        join_all([c.add(1), c.add(2), c.add(-4)]),
        futures_util::future::join(c.compare_and_set(-1, 100), join_all([c.add(1), c.add(10)])),
    )
    .await;
    let pairs = |rs: Vec<zk_recipes::Result<zk_recipes::AtomicValue<i64>>>| {
        rs.into_iter().map(|r| r.map(|r| (r.pre_value, r.post_value)).unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(pairs(adds), [(0, 1), (1, 3), (3, -1)], "one batch, in call order");
    let cas = cas.unwrap();
    assert!(cas.succeeded && (cas.pre_value, cas.post_value) == (-1, 100), "the compare saw the batch: {cas:?}");
    assert_eq!(pairs(more), [(100, 101), (101, 111)], "the next batch came after the compare");
    // three writes: the first batch, the compare, the second batch
    assert_eq!(data_version(&fw, &path).await, version + 3);
    counter.close().await.unwrap();
}

/// A combined write whose reply is lost is applied once for every member (DropReplies: it
/// reached the server), and one that never arrived is sent again with the same members
/// (Blackhole). Runs on one thread so that the eight additions queue in one poll.
#[tokio::test]
async fn a_combined_write_whose_reply_is_lost_counts_once_for_every_member() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let direct = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("combined-lost"));
    let counter = DistributedAtomicLong::new(&fw, &path).unwrap();
    // one write first: afterwards the first request of a batch is its write
    assert!(counter.increment().await.unwrap().succeeded);
    let reader = DistributedAtomicLong::new(&direct, &path).unwrap();
    let mut expected = 1i64;
    for (round, mode) in [ProxyMode::DropReplies, ProxyMode::Blackhole, ProxyMode::DropReplies].into_iter().enumerate()
    {
        let version = data_version(&direct, &path).await;
        proxy.set_mode(mode);
        let deltas: Vec<i64> = (1..=8).map(|i| i * (round as i64 + 1)).collect();
        let batch = tokio::spawn({
            let (counter, deltas) = (counter.clone(), deltas.clone());
            async move { join_all(deltas.iter().map(|&d| counter.add(d))).await }
        });
        let sum: i64 = deltas.iter().sum();
        if mode == ProxyMode::DropReplies {
            fixtures::eventually(Duration::from_secs(10), "the combined write reached the server", || async {
                reader.get().await.unwrap() == expected + sum
            })
            .await;
        } else {
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(reader.get().await.unwrap(), expected, "round {round}: nothing arrived yet");
        }
        // the client loses the connection, reconnects, and must neither drop nor repeat it
        proxy.set_mode(ProxyMode::Pass);
        proxy.cut();
        let results = fixtures::within(Duration::from_secs(30), batch).await.unwrap();
        let mut before = expected;
        for (r, d) in results.into_iter().zip(&deltas) {
            let r = r.unwrap();
            assert!(r.succeeded, "round {round}: {r:?}");
            assert_eq!((r.pre_value, r.post_value), (before, before + d), "round {round}: in call order");
            before += d;
        }
        expected += sum;
        assert_eq!(reader.get().await.unwrap(), expected, "round {round}: counted exactly once");
        assert_eq!(data_version(&direct, &path).await, version + 1, "round {round}: one write for the eight");
    }
    counter.close().await.unwrap();
}

/// A caller dropped before its batch is written is left out; one dropped after its write was
/// sent is applied, once, and told nobody.
#[tokio::test]
async fn cancelled_callers_before_and_after_their_write_is_sent() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let direct = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("combined-cancel"));
    let counter = DistributedAtomicLong::new(&fw, &path).unwrap();
    // before: queued (one poll), then dropped before the driver runs
    {
        let (mut a, mut b, mut c) = (pin!(counter.add(1)), Box::pin(counter.add(10)), pin!(counter.add(100)));
        assert!(futures_util::poll!(&mut a).is_pending());
        assert!(futures_util::poll!(&mut b).is_pending());
        assert!(futures_util::poll!(&mut c).is_pending());
        drop(b);
        let (a, c) = futures_util::future::join(a, c).await;
        assert_eq!((a.unwrap().post_value, c.unwrap().pre_value), (1, 1), "the dropped caller was left out");
        assert_eq!(counter.get().await.unwrap(), 101);
    }
    // after: the write is sent (and applied; its reply dropped), then the caller goes
    proxy.set_mode(ProxyMode::DropReplies);
    let mut gone = Box::pin(counter.add(1000));
    assert!(futures_util::poll!(&mut gone).is_pending());
    let reader = DistributedAtomicLong::new(&direct, &path).unwrap();
    fixtures::eventually(Duration::from_secs(10), "the write reached the server", || async {
        tokio::task::yield_now().await;
        reader.get().await.unwrap() == 1101
    })
    .await;
    drop(gone);
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    let next = fixtures::within(Duration::from_secs(30), counter.increment()).await.unwrap();
    assert_eq!((next.pre_value, next.post_value), (1101, 1102), "the sent write counted once");
    counter.close().await.unwrap();
}

/// 64 tasks cancelled at random moments: the value is the Ok callers' deltas plus some of the
/// cancelled ones' (those whose write was sent), and the Ok callers' changes never overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randomly_cancelled_callers_leave_a_consistent_count() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("combined-abort"));
    let counter = DistributedAtomicLong::new(&fw, &path).unwrap();
    let ok = Calls::default();
    let cancelled = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for t in 0..64u64 {
        let (counter, ok, cancelled) = (counter.clone(), ok.clone(), cancelled.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(t);
            for _ in 0..8 {
                let d = rng.i64(1..=3);
                // half the calls get a deadline of up to 4 ms, about one write's time
                let limit = Duration::from_micros(if rng.bool() { rng.u64(0..4000) } else { 60_000_000 });
                match tokio::time::timeout(limit, counter.add(d)).await {
                    Ok(r) => {
                        let r = r.unwrap();
                        assert!(r.succeeded);
                        ok.lock().unwrap().push((d, r.pre_value, r.post_value));
                    }
                    Err(_) => cancelled.lock().unwrap().push(d),
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let value = counter.get().await.unwrap();
    let ok = ok.lock().unwrap().clone();
    let cancelled = cancelled.lock().unwrap().clone();
    let (ok_sum, cancelled_sum): (i64, i64) = (ok.iter().map(|c| c.0).sum(), cancelled.iter().sum());
    eprintln!(
        "{} ok, {} cancelled; {} of the cancelled deltas' {cancelled_sum} applied",
        ok.len(),
        cancelled.len(),
        value - ok_sum
    );
    assert!(!cancelled.is_empty(), "the deadlines cancelled nobody: the test tested nothing");
    assert!(
        (ok_sum..=ok_sum + cancelled_sum).contains(&value),
        "value {value} outside [{ok_sum}, {}]",
        ok_sum + cancelled_sum
    );
    // the Ok callers' changes are disjoint slices of 0..value
    let mut slices: Vec<(i64, i64)> = ok
        .iter()
        .map(|&(d, b, a)| {
            assert_eq!(a, b + d);
            (b, a)
        })
        .collect();
    slices.sort_unstable();
    for w in slices.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlapping changes {:?} and {:?}", w[0], w[1]);
    }
    assert!(slices.first().is_none_or(|s| s.0 >= 0) && slices.last().is_none_or(|s| s.1 <= value));
    // and the counter goes on from there
    let after = counter.increment().await.unwrap();
    assert_eq!((after.pre_value, after.post_value), (value, value + 1));
    counter.close().await.unwrap();
}

/// An update made after the framework's runtime is gone ends with an error, never hangs (the
/// combiner's driver could not run there).
#[tokio::test]
async fn an_update_after_the_frameworks_runtime_is_gone_fails() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("combined-no-runtime"));
    let (fw, counter) = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let fw = runtime.block_on(fixtures::framework(&cs));
        let counter = DistributedAtomicLong::new(&fw, &path).unwrap();
        assert_eq!(runtime.block_on(counter.increment()).unwrap().post_value, 1);
        drop(runtime);
        (fw, counter)
    })
    .join()
    .unwrap();
    let outcome = fixtures::within(Duration::from_secs(10), counter.increment()).await;
    assert!(outcome.is_err(), "{outcome:?}");
    drop((counter, fw));
}
