//! Consumed exactly once under faults: 8 consumers (half at most once, half safe) drain a
//! queue on a 3-node ensemble while every consumer's session is expired and the leader is
//! killed and restarted; every item is consumed once, none is lost.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::try_join_all;
use zk_recipes::{DistributedQueue, Framework, RetryNTimes};
use zk_recipes_testing::fixtures::{self, eventually};
use zk_recipes_testing::{expire_session_at, TestingCluster};

const CONSUMERS: usize = 8;
const ITEMS: usize = 900;

/// A framework that retries for 15 s: longer than a leader election.
async fn patient(cs: &str) -> Framework {
    fixtures::framework_with(cs, |b| b.retry_policy(RetryNTimes::new(150, Duration::from_millis(100)))).await
}

type Consumed = Arc<Mutex<Vec<Vec<u8>>>>;

/// What went wrong for the consumers (the faults reached them), for the report.
#[derive(Default)]
struct Trouble {
    /// Safe deliveries whose `complete` failed (lock lost: handed to another consumer).
    lost_deliveries: AtomicUsize,
    /// Takes that failed (connection trouble, session changes).
    failed_takes: AtomicUsize,
}

/// Consumer `i` takes until `stop`, "processing" each item 5-25 ms: even ones safe (process,
/// then complete), odd ones at most once (take, then process); what was consumed goes to
/// `consumed`.
async fn consume(i: usize, queue: DistributedQueue, consumed: Consumed, trouble: Arc<Trouble>, stop: Arc<AtomicBool>) {
    let process = || tokio::time::sleep(Duration::from_millis(fastrand::u64(5..25)));
    while !stop.load(Ordering::SeqCst) {
        let poll = Duration::from_millis(200);
        let taken = if i.is_multiple_of(2) {
            match fixtures::before_deadline(queue.take_safe_timeout(poll).await) {
                Ok(Some(delivery)) => {
                    process().await;
                    // only a completed delivery is consumed; a lost one goes to another consumer
                    match delivery.complete().await {
                        Ok(items) => Ok(items),
                        Err(_) => {
                            trouble.lost_deliveries.fetch_add(1, Ordering::SeqCst);
                            Ok(Vec::new())
                        }
                    }
                }
                other => other.map(|_| Vec::new()),
            }
        } else {
            fixtures::before_deadline(queue.take_timeout(poll).await).map(|item| item.into_iter().collect())
        };
        match taken {
            Ok(items) if !items.is_empty() => {
                consumed.lock().unwrap().extend(items);
                if !i.is_multiple_of(2) {
                    process().await;
                }
            }
            Ok(_) => {}
            Err(_) => {
                trouble.failed_takes.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
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
    let trouble = Arc::new(Trouble::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut frameworks = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..CONSUMERS {
        let fw = patient(&cs).await;
        frameworks.push(fw.clone());
        let queue = DistributedQueue::new(&fw, path).unwrap();
        tasks.push(tokio::spawn(consume(i, queue, consumed.clone(), trouble.clone(), stop.clone())));
    }
    let count = || consumed.lock().unwrap().len();
    // the producer puts 10 items every 30 ms throughout, so that every fault hits a live stream
    let mut all = crate::items("item", ITEMS);
    // (at most 100 items ahead of the consumers, and the last 100 only once every fault came,
    // so that the stream is still live when the faults come, however fast this machine
    // consumes and however long an expiry takes)
    let faults_done = Arc::new(AtomicBool::new(false));
    let feed = {
        let (producer, all, consumed, done) = (producer.clone(), all.clone(), consumed.clone(), faults_done.clone());
        tokio::spawn(async move {
            for (i, chunk) in all.chunks(10).enumerate() {
                let ahead = |consumed: Consumed| async move { i * 10 <= consumed.lock().unwrap().len() + 100 };
                eventually(Duration::from_secs(60), "the consumers catch up", || ahead(consumed.clone())).await;
                if i * 10 + 100 >= all.len() {
                    let done = || async { done.load(Ordering::SeqCst) };
                    eventually(Duration::from_secs(180), "every fault came", done).await;
                }
                producer.put_all(chunk).await.unwrap();
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
        })
    };
    let wait = Duration::from_secs(40);

    // half the consumers' sessions expire, then the other half's
    let server = cluster.server_connect_string(0).unwrap();
    for (half, at) in [(0..CONSUMERS / 2, ITEMS / 10), (CONSUMERS / 2..CONSUMERS, ITEMS / 4)] {
        eventually(wait, format!("{at} consumed"), || async { count() >= at }).await;
        assert!(!feed.is_finished(), "the faults hit a live stream");
        try_join_all(frameworks[half].iter().map(|fw| expire_session_at(fw, server))).await.unwrap();
    }
    // the leader is killed, then comes back
    eventually(wait, "half consumed", || async { count() >= ITEMS / 2 }).await;
    assert!(!feed.is_finished(), "the faults hit a live stream");
    let leader = cluster.leader().await.unwrap().expect("a leader");
    cluster.kill(leader).unwrap();
    cluster.wait_for_leader(Duration::from_secs(30)).await.unwrap();
    cluster.restart(leader).await.unwrap();
    faults_done.store(true, Ordering::SeqCst);
    feed.await.unwrap();
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
    let (lost, failed) = (trouble.lost_deliveries.load(Ordering::SeqCst), trouble.failed_takes.load(Ordering::SeqCst));
    println!(
        "{} items, {CONSUMERS} consumers, {lost} deliveries lost to the faults (re-delivered), {failed} failed takes: {:?}",
        all.len(),
        started.elapsed()
    );
}
