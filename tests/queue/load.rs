//! A 65,536-item queue drains: filled by batched transactions (1,024 items each, several in
//! flight), emptied by concurrent consumers, each item taken once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use zk_recipes::SimpleDistributedQueue;
use zk_recipes_testing::fixtures;

const ITEMS: usize = 65_536;
const BATCH: usize = 1_024;
const CONSUMERS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_65536_item_queue_drains() {
    let cs = fixtures::shared_server().await;
    let fws = [fixtures::framework(&cs).await, fixtures::framework(&cs).await];
    let path = format!("/{}", fixtures::unique("drain"));
    let queue = SimpleDistributedQueue::new(&fws[0], &path).unwrap();
    let start = Instant::now();
    let items: Vec<Vec<u8>> = (0..ITEMS as u32).map(|i| i.to_be_bytes().to_vec()).collect();
    for wave in items.chunks(BATCH * 8) {
        try_join_all(wave.chunks(BATCH).map(|batch| queue.offer_all(batch))).await.unwrap();
    }
    let filled = start.elapsed();
    assert_eq!(queue.size().await.unwrap(), ITEMS);
    let taken = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Vec<AtomicUsize>> = Arc::new((0..ITEMS).map(|_| AtomicUsize::new(0)).collect());
    let consumers = (0..CONSUMERS).map(|i| {
        let queue = SimpleDistributedQueue::new(&fws[i % 2], &path).unwrap();
        let (taken, seen) = (taken.clone(), seen.clone());
        tokio::spawn(async move {
            while taken.load(Ordering::SeqCst) < ITEMS {
                let Some(item) =
                    fixtures::before_deadline(queue.take_timeout(Duration::from_millis(500)).await).unwrap()
                else {
                    continue;
                };
                let i = u32::from_be_bytes(item.try_into().unwrap()) as usize;
                seen[i].fetch_add(1, Ordering::SeqCst);
                taken.fetch_add(1, Ordering::SeqCst);
            }
        })
    });
    fixtures::within(Duration::from_secs(300), try_join_all(consumers)).await.unwrap();
    let drained = start.elapsed() - filled;
    assert!(seen.iter().all(|n| n.load(Ordering::SeqCst) == 1), "each item taken exactly once");
    assert_eq!(queue.size().await.unwrap(), 0);
    println!("{ITEMS} items: filled in {filled:?}, drained by {CONSUMERS} consumers in {drained:?}");
}
