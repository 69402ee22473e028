//! `inspect` recognises every recipe and orders holders and waiters.

use std::time::Duration;

use zk_recipes::inspect::{inspect, Inspection, RecipeKind, QUEUE_ITEMS_SHOWN};
use zk_recipes::{
    DistributedAtomicLong, DistributedCountDownLatch, Framework, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreV2, LeaderLatch, SimpleDistributedQueue,
};
use zk_recipes_testing::fixtures;

/// Inspects until `done` holds (the queue settles asynchronously).
async fn inspect_until(fw: &Framework, path: &str, done: impl Fn(&Inspection) -> bool) -> Inspection {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let found = inspect(fw, path).await.unwrap();
        if done(&found) {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "inspection never settled: {found:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn recognises_locks_with_holders_then_waiters() {
    let cs = fixtures::shared_server().await;
    let a = fixtures::framework(&cs).await;
    let b = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("inspect"));
    assert_eq!(inspect(&a, &format!("{base}/nothing")).await.unwrap().kind, RecipeKind::Missing);

    // mutex: holder a, waiter b
    let path = format!("{base}/mutex");
    let before_acquire = std::time::Instant::now();
    let held = InterProcessMutex::new(&a, &path).unwrap().acquire().await.unwrap();
    let m = InterProcessMutex::new(&b, &path).unwrap();
    let waiter = tokio::spawn(async move { m.acquire_timeout(Duration::from_secs(20)).await.is_ok() });
    let found = inspect_until(&a, &path, |i| i.waiters.len() == 1).await;
    assert_eq!(found.kind, RecipeKind::Mutex);
    assert_eq!(found.holders.len(), 1);
    assert_eq!(format!("{path}/{}", found.holders[0].name), held.path());
    assert_eq!(found.holders[0].session_id, a.status().session_id);
    assert_eq!(found.holders[0].fencing_token, held.fencing_token());
    // the age is the holder node's, made during this test (server and test share a clock;
    // 100 ms for the millisecond roundings)
    let age_bound = before_acquire.elapsed().as_millis() as i64 + 100;
    assert!(
        (0..=age_bound).contains(&found.holders[0].age_ms),
        "age {} ms, at most {age_bound}",
        found.holders[0].age_ms
    );
    assert_eq!(found.waiters[0].session_id, b.status().session_id);
    held.release().await.unwrap();
    assert!(waiter.await.unwrap());

    // read-write lock: two readers hold, a writer waits
    let path = format!("{base}/rw");
    let r1 = InterProcessReadWriteLock::new(&a, &path).unwrap().read().await.unwrap();
    let r2 = InterProcessReadWriteLock::new(&b, &path).unwrap().read().await.unwrap();
    let w = InterProcessReadWriteLock::new(&fixtures::framework(&cs).await, &path).unwrap();
    let writer = tokio::spawn(async move { w.write_timeout(Duration::from_secs(20)).await.is_ok() });
    let found = inspect_until(&a, &path, |i| i.waiters.len() == 1).await;
    assert_eq!(found.kind, RecipeKind::ReadWriteLock);
    assert_eq!(found.holders.len(), 2);
    assert!(found.waiters[0].name.contains("__WRIT__"));
    drop((r1, r2));
    assert!(writer.await.unwrap());

    // semaphore: leases hold
    let path = format!("{base}/sem");
    let leases = InterProcessSemaphoreV2::new(&a, &path, 2).unwrap().acquire_many(2).await.unwrap();
    let found = inspect(&a, &path).await.unwrap();
    assert_eq!(found.kind, RecipeKind::Semaphore);
    assert_eq!(found.holders.len(), 2);
    zk_recipes::InterProcessSemaphoreV2::return_all(leases).await.unwrap();

    // latch: the leader holds, with its id as data
    let path = format!("{base}/latch");
    let l1 = LeaderLatch::new(&a, &path, "first").unwrap();
    l1.start().await.unwrap();
    l1.await_leadership().await.unwrap();
    let l2 = LeaderLatch::new(&b, &path, "second").unwrap();
    l2.start().await.unwrap();
    let found = inspect_until(&a, &path, |i| i.waiters.len() == 1).await;
    assert_eq!(found.kind, RecipeKind::LeaderLatch);
    assert_eq!(found.holders[0].data, "first");
    assert_eq!(found.waiters[0].data, "second");

    // counter
    let path = format!("{base}/counter");
    let counter = DistributedAtomicLong::new(&a, &path).unwrap();
    counter.add(41).await.unwrap();
    counter.increment().await.unwrap();
    let found = inspect(&a, &path).await.unwrap();
    assert_eq!(found.kind, RecipeKind::Counter);
    assert_eq!(found.value.as_deref(), Some("42"));
}

#[tokio::test]
async fn recognises_a_countdown_latch_and_a_queue() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("inspect-more"));

    // count-down latch: the participants of the current generation hold, the value counts them
    let path = format!("{base}/latch");
    let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
    assert!(latch.try_set_count(3).await.unwrap());
    latch.count_down("a").await.unwrap();
    latch.count_down("b").await.unwrap();
    let found = inspect(&fw, &path).await.unwrap();
    assert_eq!(found.kind, RecipeKind::CountDownLatch);
    let names: Vec<&str> = found.holders.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(found.value.as_deref(), Some("generation 1: 2 of 3 counted down, closed"));
    latch.count_down("c").await.unwrap();
    let found = inspect(&fw, &path).await.unwrap();
    assert_eq!(found.value.as_deref(), Some("generation 1: 3 of 3 counted down, open"));
    // a new generation: only its own count-downs
    assert!(latch.try_set_count(1).await.unwrap());
    let found = inspect(&fw, &path).await.unwrap();
    assert_eq!(found.kind, RecipeKind::CountDownLatch);
    assert!(found.holders.is_empty(), "{found:?}");
    assert_eq!(found.value.as_deref(), Some("generation 2: 0 of 1 counted down, closed"));

    // queue: the items wait in order, with their data; a long queue shows its first items
    let path = format!("{base}/queue");
    let queue = SimpleDistributedQueue::new(&fw, &path).unwrap();
    queue.offer(b"first").await.unwrap();
    queue.offer(b"second").await.unwrap();
    let found = inspect(&fw, &path).await.unwrap();
    assert_eq!(found.kind, RecipeKind::Queue);
    assert!(found.holders.is_empty());
    let data: Vec<&str> = found.waiters.iter().map(|n| n.data.as_str()).collect();
    assert_eq!(data, ["first", "second"]);
    assert_eq!(found.value.as_deref(), Some("2 items"));
    let more: Vec<Vec<u8>> = (0..QUEUE_ITEMS_SHOWN).map(|i| format!("item {i}").into_bytes()).collect();
    queue.offer_all(&more).await.unwrap();
    let found = inspect(&fw, &path).await.unwrap();
    assert_eq!(found.waiters.len(), QUEUE_ITEMS_SHOWN);
    assert_eq!(found.waiters[0].data, "first");
    assert_eq!(found.value, Some(format!("{} items (the first {QUEUE_ITEMS_SHOWN} shown)", QUEUE_ITEMS_SHOWN + 2)));
}
