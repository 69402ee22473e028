//! Bad input gets typed errors and writes nothing; a bounded queue makes producers wait (or
//! fail at their deadline) until a consumer makes room.

use assert_matches::assert_matches;
use std::time::Duration;

use zk_recipes::queue::QueueBuilder;
use zk_recipes::queue::MAX_ITEM_BYTES;
use zk_recipes::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue, Error,
    SimpleDistributedQueue,
};
use zk_recipes_testing::fixtures;

use crate::WAIT;

#[tokio::test]
async fn bad_input_gets_typed_errors_and_writes_nothing() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = format!("/{}", fixtures::unique("bad"));
    let simple = SimpleDistributedQueue::new(&fw, &format!("{root}/simple")).unwrap();
    let fifo = DistributedQueue::new(&fw, &format!("{root}/fifo")).unwrap();
    let ids = DistributedIdQueue::new(&fw, &format!("{root}/ids")).unwrap();
    let prio = DistributedPriorityQueue::new(&fw, &format!("{root}/prio")).unwrap();
    let delay = DistributedDelayQueue::new(&fw, &format!("{root}/delay")).unwrap();
    let too_big = vec![1u8; MAX_ITEM_BYTES + 1];
    // empty items
    assert!(matches!(simple.offer(b"").await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(fifo.put(&Vec::new()).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(fifo.put_multi(&[b"x".to_vec(), Vec::new()]).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(fifo.put_multi(&[]).await, Err(Error::InvalidArgument { .. })));
    // oversize items (and a multi-item node over the limit in total)
    let oversize = |r: zk_recipes::Result<_>| matches!(r, Err(Error::TooLarge { limit: MAX_ITEM_BYTES, .. }));
    assert!(oversize(simple.offer(&too_big).await.map(drop)));
    assert!(oversize(fifo.put(&too_big).await.map(drop)));
    let halves = vec![vec![2u8; MAX_ITEM_BYTES / 2 + 1], vec![3u8; MAX_ITEM_BYTES / 2 + 1]];
    assert!(oversize(fifo.put_multi(&halves).await.map(drop)));
    // (several nodes in one transaction: the framework measures the request as a whole)
    let request = |r: zk_recipes::Result<_>| {
        matches!(r, Err(Error::TooLarge { limit: zk_recipes::DEFAULT_MAX_REQUEST_SIZE, .. }))
    };
    let request_halves = vec![vec![4u8; zk_recipes::DEFAULT_MAX_REQUEST_SIZE / 2 + 1]; 2];
    assert!(request(fifo.put_all(&request_halves).await.map(drop)));
    // a negative priority, an empty id, an unknown id, a time at the epoch
    assert!(matches!(prio.put(&b"x".to_vec(), -1).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(ids.put(&b"x".to_vec(), "").await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(ids.remove("").await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(ids.remove("nobody").await, Err(Error::NoSuchItem { .. })));
    assert!(matches!(delay.put_at(&b"x".to_vec(), std::time::UNIX_EPOCH).await, Err(Error::InvalidArgument { .. })));
    // bad paths and options
    assert!(matches!(SimpleDistributedQueue::new(&fw, "relative"), Err(Error::InvalidPath { .. })));
    assert!(matches!(DistributedQueue::new(&fw, "/"), Err(Error::InvalidPath { .. })));
    let inside = QueueBuilder::new(&fw, "/q").lock_path("/q/locks").build::<zk_recipes::queue::Fifo>();
    assert!(matches!(inside, Err(Error::InvalidArgument { .. })));
    assert!(matches!(
        QueueBuilder::new(&fw, "/q").max_items(0).build::<zk_recipes::queue::Fifo>(),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(simple.clone().with_max_items(0), Err(Error::InvalidArgument { .. })));
    // nothing was written: no queue has an item
    for child in fw.children(&root).await.unwrap_or_default() {
        assert_eq!(fw.children(&format!("{root}/{child}")).await.unwrap(), Vec::<String>::new(), "{child}");
    }
    // the largest item that fits goes through and comes back whole
    let biggest = vec![9u8; MAX_ITEM_BYTES - 10];
    fifo.put(&biggest).await.unwrap();
    assert_eq!(fifo.take().await.unwrap(), biggest);
}

#[tokio::test]
async fn a_bounded_queue_makes_puts_wait_or_fail() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("bounded"));
    let queue: DistributedQueue = QueueBuilder::new(&fw, &path).max_items(2).build().unwrap();
    queue.put(&b"1".to_vec()).await.unwrap();
    queue.put(&b"2".to_vec()).await.unwrap();
    let full = queue.put_timeout(&b"3".to_vec(), Duration::from_millis(200)).await;
    assert_matches!(full, Err(Error::Timeout { timeout, step: zk_recipes::TimeoutStep::Waiting, .. }) if timeout == Duration::from_millis(200));
    assert_eq!(queue.size().await.unwrap(), 2);
    let producer = queue.clone();
    let waiting = tokio::spawn(async move { producer.put(&b"3".to_vec()).await });
    tokio::time::sleep(Duration::from_millis(200)).await; // the put is waiting on its watch
    assert!(!waiting.is_finished(), "a put into a full queue waits");
    assert_eq!(queue.take().await.unwrap(), b"1");
    tokio::time::timeout(WAIT, waiting).await.expect("room made").unwrap().unwrap();
    assert_eq!(queue.take().await.unwrap(), b"2");
    assert_eq!(queue.take().await.unwrap(), b"3");
    // every kind's put waits or fails alike
    let prio: zk_recipes::DistributedPriorityQueue =
        QueueBuilder::new(&fw, &format!("{path}-prio")).max_items(1).build().unwrap();
    prio.put(&b"a".to_vec(), 1).await.unwrap();
    let full = prio.put_timeout(&b"b".to_vec(), 0, Duration::from_millis(100)).await;
    assert_matches!(full, Err(Error::Timeout { timeout, step: zk_recipes::TimeoutStep::Waiting, .. }) if timeout == Duration::from_millis(100));
    // the simple queue's bound
    let simple = SimpleDistributedQueue::new(&fw, &format!("{path}-simple")).unwrap().with_max_items(1).unwrap();
    simple.offer(b"a").await.unwrap();
    let full = simple.offer_timeout(b"b", Duration::from_millis(100)).await;
    assert_matches!(full, Err(Error::Timeout { timeout, step: zk_recipes::TimeoutStep::Waiting, .. }) if timeout == Duration::from_millis(100));
}
