//! Consumed exactly once under faults: 8 consumers (half at most once, half safe) drain a
//! queue on a 3-node ensemble while every consumer's session is expired and the leader is
//! killed and restarted; every item is consumed once, none is lost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zk_recipes::{DistributedQueue, Framework, RetryNTimes};
use zk_recipes_testing::fixtures::{self, eventually};
use zk_recipes_testing::{expire_session_at, TestingCluster};

const CONSUMERS: usize = 8;
const BATCH: usize = 150;

/// A framework that retries for 15 s: longer than a leader election.
async fn patient(cs: &str) -> Framework {
    fixtures::framework_with(cs, |b| b.retry_policy(RetryNTimes::new(150, Duration::from_millis(100)))).await
}

type Consumed = Arc<Mutex<Vec<Vec<u8>>>>;

/// Consumer `i` takes until `stop`: even ones safe (complete after a short "processing"),
/// odd ones at most once; what was consumed goes to `consumed`.
async fn consume(i: usize, queue: DistributedQueue, consumed: Consumed, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        let poll = Duration::from_millis(200);
        if i.is_multiple_of(2) {
            match queue.poll_safe(poll).await {
                Ok(Some(delivery)) => {
                    tokio::time::sleep(Duration::from_millis(fastrand::u64(0..8))).await;
                    // only a completed delivery is consumed; a lost one goes to another consumer
                    if let Ok(items) = delivery.complete().await {
                        consumed.lock().unwrap().extend(items);
                    }
                }
                Ok(None) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        } else {
            match queue.poll(poll).await {
                Ok(Some(item)) => consumed.lock().unwrap().push(item),
                Ok(None) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_consumers_take_every_item_once_through_expiries_and_a_killed_leader() {
    let started = std::time::Instant::now();
    let cluster = TestingCluster::start(3).await.unwrap();
    let cs = cluster.connect_string().to_string();
    let path = "/faults/queue";
    let producer = DistributedQueue::new(&patient(&cs).await, path).unwrap();
    let consumed: Consumed = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut frameworks = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..CONSUMERS {
        let fw = patient(&cs).await;
        frameworks.push(fw.clone());
        let queue = DistributedQueue::new(&fw, path).unwrap();
        tasks.push(tokio::spawn(consume(i, queue, consumed.clone(), stop.clone())));
    }
    let count = || consumed.lock().unwrap().len();
    let mut all = Vec::new();
    let put = |phase: &'static str| {
        let producer = producer.clone();
        async move {
            let items = crate::items(phase, BATCH);
            for chunk in items.chunks(50) {
                producer.put_all(chunk).await.unwrap();
            }
            items
        }
    };
    let wait = Duration::from_secs(40);

    // phase 1: half the consumers' sessions expire mid-stream
    all.extend(put("one").await);
    eventually(wait, "a third of phase one consumed", || async { count() >= BATCH / 3 }).await;
    for fw in &frameworks[..CONSUMERS / 2] {
        expire_session_at(fw, cluster.server_connect_string(0).unwrap()).await.unwrap();
    }
    // phase 2: the leader is killed, then the other half's sessions expire
    all.extend(put("two").await);
    eventually(wait, "into phase two", || async { count() >= BATCH + BATCH / 3 }).await;
    let leader = cluster.leader().await.unwrap().expect("a leader");
    cluster.kill(leader).unwrap();
    cluster.wait_for_leader(Duration::from_secs(30)).await.unwrap();
    let live = (0..3).find(|&s| s != leader).unwrap();
    for fw in &frameworks[CONSUMERS / 2..] {
        expire_session_at(fw, cluster.server_connect_string(live).unwrap()).await.unwrap();
    }
    // phase 3: the server comes back
    all.extend(put("three").await);
    cluster.restart(leader).await.unwrap();
    eventually(wait, "every item consumed", || async { count() >= all.len() }).await;
    stop.store(true, Ordering::SeqCst);
    for task in tasks {
        task.await.unwrap();
    }
    let mut got = consumed.lock().unwrap().clone();
    got.sort();
    all.sort();
    let dups: Vec<_> = got.windows(2).filter(|w| w[0] == w[1]).map(|w| String::from_utf8_lossy(&w[0])).collect();
    assert!(dups.is_empty(), "consumed twice: {dups:?}");
    assert_eq!(got, all, "every item consumed once, none lost");
    assert_eq!(producer.size().await.unwrap(), 0);
    println!("{} items, {CONSUMERS} consumers, faults: {:?}", all.len(), started.elapsed());
}
