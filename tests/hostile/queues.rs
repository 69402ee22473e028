//! Queues beside lying items and foreign children. Rules: a child whose name does not start
//! with the queue's item name (`queue-`, simple queue `qn-`) is skipped; a child that does is
//! an item, taken exactly once — a `DistributedQueue` item whose data is not Curator's framing
//! (truncated, a lying length, a wrong version or opcode, 1 MB of junk) is consumed by the
//! consumer that took it, which gets [`Error::CorruptData`]; a simple queue's item is its bytes,
//! whatever they are.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zk_recipes::CreateMode;
use zk_recipes::{DistributedQueue, Error, SimpleDistributedQueue};

use crate::support::{self, junk_data, junk_name, live, plant};

/// Framings that lie: truncated, a length longer than the data, a negative or huge length, a
/// wrong version, an unknown opcode, no end.
const LYING: &[&[u8]] = &[
    &[0, 1, 0, 1, 1, 0, 0, 0, 10, b'a'],
    &[0, 1, 0, 1, 1, 0xFF, 0xFF, 0xFF, 0xFF],
    &[0, 1, 0, 1, 1, 0x7F, 0xFF, 0xFF, 0xFF, 0],
    &[0, 2, 0, 1, 1, 0, 0, 0, 1, b'x', 2],
    &[0, 1, 0, 1, 9],
    &[0, 1, 0, 1, 1, 0, 0, 0, 1, b'x'],
    &[0, 1, 0],
    &[],
];

/// Property: 3 producers put 10 items each into a queue beside lying items and foreign
/// children (the foreign ones re-created meanwhile); 3 consumers take every real item exactly
/// once within the bound, and each lying item surfaces as one `CorruptData`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_items_are_taken_exactly_once_beside_lying_items() {
    let mut rng = support::rng("queue");
    let path = support::base("queue");
    let fws = [support::framework().await, support::framework().await, support::framework().await];
    let mut lying = 0;
    for data in LYING {
        plant(&fws[0], &path, &format!("queue-{:010}", rng.u32(..1_000_000)), data, false).await;
        lying += 1;
    }
    plant(&fws[0], &path, "queue-", &[0xA5; 1_000_000], false).await;
    lying += 1;
    let mut foreign = Vec::new();
    for _ in 0..5 {
        let mut name = junk_name(&mut rng, "item-");
        if name.starts_with("queue-") {
            name.insert(0, 'x');
        }
        plant(&fws[0], &path, &name, &junk_data(&mut rng), false).await;
        foreign.push(name);
    }
    let churn = support::churn(&fws[1], &path, foreign.clone(), rng.u64(..));
    for (p, fw) in fws.iter().enumerate() {
        let q = DistributedQueue::new(fw, &path).unwrap();
        for i in 0..10 {
            q.put(&format!("p{p}-{i}").into_bytes()).await.unwrap();
        }
    }
    let got: Arc<Mutex<HashMap<Vec<u8>, usize>>> = Arc::default();
    let corrupt = Arc::new(Mutex::new(0usize));
    let mut consumers = Vec::new();
    for fw in &fws {
        let (fw, path, got, corrupt) = (fw.clone(), path.clone(), got.clone(), corrupt.clone());
        consumers.push(tokio::spawn(async move {
            let q = DistributedQueue::new(&fw, &path).unwrap();
            loop {
                match q.take_timeout(Duration::from_millis(300)).await {
                    Ok(item) => *got.lock().unwrap().entry(item).or_default() += 1,
                    Err(Error::CorruptData { .. }) => *corrupt.lock().unwrap() += 1,
                    Err(Error::Timeout { .. }) if got.lock().unwrap().len() >= 30 => return,
                    Err(Error::Timeout { .. }) => {}
                    Err(e) => panic!("a consumer failed: {e}"),
                }
            }
        }));
    }
    live("consumers", async {
        for c in consumers {
            c.await.unwrap();
        }
    })
    .await;
    support::stop_churn(churn).await;
    let got = got.lock().unwrap().clone();
    assert_eq!(got.len(), 30, "every real item taken: {got:?}");
    assert!(got.values().all(|n| *n == 1), "exactly once: {got:?}");
    assert_eq!(*corrupt.lock().unwrap(), lying, "each lying item surfaced once");
    let left = fws[0].children(&path).await.unwrap();
    assert!(left.iter().all(|c| foreign.contains(c)), "only foreign children are left: {left:?}");
    for fw in fws {
        fw.close();
    }
}

/// Property: the simple queue beside foreign children and junk items: every item (junk
/// ones too, they are items by name) is taken exactly once by 3 consumers within the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_queue_items_are_taken_exactly_once_beside_junk() {
    let mut rng = support::rng("simple-queue");
    let path = support::base("simple-queue");
    let fws = [support::framework().await, support::framework().await, support::framework().await];
    let mut junk_items = std::collections::HashSet::new();
    for _ in 0..4 {
        let mut data = junk_data(&mut rng);
        data.insert(0, b'!');
        let name = format!("qn-{}", junk_name(&mut rng, "x"));
        plant(&fws[0], &path, &name, &data, false).await;
        junk_items.insert(name);
    }
    let mut foreign = Vec::new();
    for _ in 0..4 {
        let name = format!("x{}", junk_name(&mut rng, "qn-"));
        plant(&fws[0], &path, &name, &junk_data(&mut rng), false).await;
        foreign.push(name);
    }
    let churn = support::churn(&fws[1], &path, foreign.clone(), rng.u64(..));
    for (p, fw) in fws.iter().enumerate() {
        let q = SimpleDistributedQueue::new(fw, &path).unwrap();
        for i in 0..10 {
            q.offer(format!("p{p}-{i}").as_bytes()).await.unwrap();
        }
    }
    let got: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let mut consumers = Vec::new();
    for fw in &fws {
        let (fw, path, got) = (fw.clone(), path.clone(), got.clone());
        consumers.push(tokio::spawn(async move {
            let q = SimpleDistributedQueue::new(&fw, &path).unwrap();
            while let Some(item) = q.try_take().await.unwrap() {
                got.lock().unwrap().push(item);
            }
        }));
    }
    live("simple consumers", async {
        for c in consumers {
            c.await.unwrap();
        }
    })
    .await;
    support::stop_churn(churn).await;
    let got = got.lock().unwrap().clone();
    let real: Vec<&Vec<u8>> = got.iter().filter(|i| i.first() == Some(&b'p')).collect();
    assert_eq!(real.len(), 30, "every real item once");
    let mut unique = real.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 30, "no real item twice");
    assert_eq!(got.len() - real.len(), junk_items.len(), "each junk item once: {junk_items:?}");
    for fw in fws {
        fw.close();
    }
}

/// Regression: a node squatting on a sequence name the queue has not reached yet
/// (`queue-0000000003` planted in a fresh queue) made the put that reached it fail with
/// `NodeExists` — and every put after it, forever: a failed create does not advance the
/// parent's sequence counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_squatting_on_a_future_sequence_stops_no_producer() {
    let fw = support::framework().await;
    for (i, item) in ["queue-", "qn-"].into_iter().enumerate() {
        let path = support::base(&format!("squat-{i}"));
        // the queue's node, then squatters on the next sequences
        fw.create(&path, b"", CreateMode::Persistent).await.unwrap();
        for seq in [2, 3, 5] {
            plant(&fw, &path, &format!("{item}{seq:010}"), &[0, 1, 0, 1, 2], false).await;
        }
        for n in 0..6 {
            let put = match item {
                "queue-" => DistributedQueue::new(&fw, &path).unwrap().put(&format!("item {n}").into_bytes()).await,
                _ => SimpleDistributedQueue::new(&fw, &path).unwrap().offer(format!("item {n}").as_bytes()).await,
            };
            let node = live("a put beside squatters", async { put }).await.unwrap_or_else(|e| panic!("put {n}: {e}"));
            assert!(node.starts_with(&format!("{path}/{item}")), "{node}");
        }
        assert_eq!(fw.children(&path).await.unwrap().len(), 9, "3 squatters and 6 items");
    }
    fw.close();
}

/// A persistent node at an item's lock name (`<lock path>/<item>`; consumers' locks are
/// ephemeral) does not stop the consumers from taking the other items; the item itself stays
/// held by it (the rule: an item whose lock node exists is being processed, Curator's too)
/// until someone deletes the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_lock_node_on_an_item_stops_no_consumer() {
    let fw = support::framework().await;
    let path = support::base("locked-queue");
    let locks = format!("{path}-locks");
    let queue: DistributedQueue = DistributedQueue::builder(&fw, &path).lock_path(&locks).build().unwrap();
    let first = queue.put(&b"first".to_vec()).await.unwrap();
    for n in 0..3 {
        queue.put(&format!("item {n}").into_bytes()).await.unwrap();
    }
    plant(&fw, &locks, first.rsplit('/').next().unwrap(), b"by hand", false).await;
    for n in 0..3 {
        let got = live("a take beside a persistent lock node", queue.take()).await.unwrap();
        assert_eq!(got, format!("item {n}").into_bytes());
    }
    let taken = queue.take_timeout(Duration::from_millis(500)).await;
    assert!(matches!(taken, Err(Error::Timeout { .. })), "{taken:?}");
    fw.delete(&format!("{locks}/{}", first.rsplit('/').next().unwrap())).await.unwrap();
    assert_eq!(live("the item once its lock node is gone", queue.take()).await.unwrap(), b"first");
    fw.close();
}
