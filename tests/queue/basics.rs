//! Each kind's order and API on the shared server: FIFO (simple and distributed, with
//! multi-item nodes), id (remove), priority, delay; waiting takes woken by a put; safe takes
//! handed back on drop and re-delivered after their consumer's session expired.

use assert_matches::assert_matches;
use std::time::{Duration, Instant};

use zk_recipes::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue, Error, LossReason,
    SimpleDistributedQueue,
};
use zk_recipes_testing::{expire_session, fixtures};

use crate::WAIT;

#[tokio::test]
async fn simple_queue_is_fifo_and_peeks_without_taking() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("simple"));
    let queue = SimpleDistributedQueue::new(&fw, &path).unwrap();
    assert_eq!(queue.peek().await.unwrap(), None);
    assert!(matches!(queue.element().await, Err(Error::NoSuchItem { .. })));
    for item in [&b"a"[..], b"b", b"c"] {
        let node = queue.offer(item).await.unwrap();
        assert!(node.starts_with(&format!("{path}/qn-")), "{node}");
    }
    assert_eq!(queue.size().await.unwrap(), 3);
    assert_eq!(queue.peek().await.unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(queue.element().await.unwrap(), b"a");
    assert_eq!(queue.take().await.unwrap(), b"a");
    assert_eq!(queue.take_timeout(WAIT).await.unwrap(), b"b");
    assert_eq!(queue.try_take().await.unwrap().as_deref(), Some(&b"c"[..]));
    assert_eq!(queue.try_take().await.unwrap(), None, "never waits");
    let short = Duration::from_millis(100);
    assert_matches!(queue.take_timeout(short).await, Err(Error::Timeout { timeout, step: zk_recipes::TimeoutStep::Waiting, .. }) if timeout == short);
    assert_eq!(queue.size().await.unwrap(), 0);
}

#[tokio::test]
async fn a_waiting_take_is_woken_by_a_put() {
    let cs = fixtures::shared_server().await;
    let (fw, producer_fw) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("wake"));
    let consumer = SimpleDistributedQueue::new(&fw, &path).unwrap();
    let taking = tokio::spawn(async move { consumer.take().await });
    tokio::time::sleep(Duration::from_millis(200)).await; // the take is waiting on its watch
    assert!(!taking.is_finished());
    SimpleDistributedQueue::new(&producer_fw, &path).unwrap().offer(b"late").await.unwrap();
    let got = tokio::time::timeout(WAIT, taking).await.expect("woken").unwrap().unwrap();
    assert_eq!(got, b"late");
}

#[tokio::test]
async fn distributed_queue_is_fifo_over_multi_item_nodes() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("fifo"));
    let queue = DistributedQueue::new(&fw, &path).unwrap();
    queue.put(&b"1".to_vec()).await.unwrap();
    queue.put_multi(&[b"2".to_vec(), b"3".to_vec(), b"4".to_vec()]).await.unwrap();
    queue.put_all(&[b"5".to_vec(), b"6".to_vec()]).await.unwrap();
    assert_eq!(queue.size().await.unwrap(), 4, "one node per put, put_multi and put_all item");
    let mut got = Vec::new();
    for _ in 0..6 {
        got.push(String::from_utf8(queue.take().await.unwrap()).unwrap());
    }
    assert_eq!(got, ["1", "2", "3", "4", "5", "6"]);
    assert!(!fixtures::in_time(queue.take_timeout(Duration::from_millis(50)).await));
    assert_eq!(queue.try_take().await.unwrap(), None);
    // the safe takes, bounded and not waiting
    assert!(queue.try_take_safe().await.unwrap().is_none());
    queue.put(&b"7".to_vec()).await.unwrap();
    queue.put(&b"8".to_vec()).await.unwrap();
    let delivery = queue.try_take_safe().await.unwrap().expect("an item is there");
    assert_eq!(delivery.complete().await.unwrap(), [b"7".to_vec()]);
    let delivery = queue.take_safe_timeout(WAIT).await.unwrap();
    assert_eq!(delivery.complete().await.unwrap(), [b"8".to_vec()]);
    assert!(matches!(queue.take_safe_timeout(Duration::from_millis(50)).await, Err(Error::Timeout { .. })));
    // the lock path is a sibling, not a child the consumers would see
    assert_eq!(queue.lock_path(), format!("{path}-locks"));
    assert!(fw.children(&path).await.unwrap().is_empty());
}

#[tokio::test]
async fn priority_queue_takes_lowest_first_then_fifo() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let queue = DistributedPriorityQueue::new(&fw, &format!("/{}", fixtures::unique("prio"))).unwrap();
    for (item, priority) in [("p5", 5), ("p1-a", 1), ("p300", 300), ("p0", 0), ("p1-b", 1)] {
        queue.put(&item.as_bytes().to_vec(), priority).await.unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..5 {
        got.push(String::from_utf8(queue.take().await.unwrap()).unwrap());
    }
    assert_eq!(got, ["p0", "p1-a", "p1-b", "p5", "p300"]);
}

#[tokio::test]
async fn id_queue_removes_by_id() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let queue = DistributedIdQueue::new(&fw, &format!("/{}", fixtures::unique("ids"))).unwrap();
    for (item, id) in [("a", "job/1"), ("b", "job-2"), ("c", "job/1"), ("d", "job-3")] {
        let node = queue.put(&item.as_bytes().to_vec(), id).await.unwrap();
        assert!(node.contains(&format!("/queue-|{}|", id.replace('/', "_"))), "{node}");
    }
    assert_eq!(queue.remove("job/1").await.unwrap(), 2);
    assert!(matches!(queue.remove("job/1").await, Err(Error::NoSuchItem { .. })));
    assert_eq!(queue.take().await.unwrap(), b"b");
    assert_eq!(queue.take().await.unwrap(), b"d");
}

#[tokio::test]
async fn delay_queue_hands_items_over_at_their_time_earliest_first() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let queue = DistributedDelayQueue::new(&fw, &format!("/{}", fixtures::unique("delay"))).unwrap();
    let start = Instant::now();
    queue.put_after(&b"late".to_vec(), Duration::from_millis(900)).await.unwrap();
    queue.put_after(&b"early".to_vec(), Duration::from_millis(400)).await.unwrap();
    assert!(!fixtures::in_time(queue.take_timeout(Duration::from_millis(100)).await), "nothing visible yet");
    assert_eq!(queue.take().await.unwrap(), b"early");
    assert!(start.elapsed() >= Duration::from_millis(390), "{:?}", start.elapsed());
    assert_eq!(queue.take().await.unwrap(), b"late");
    assert!(start.elapsed() >= Duration::from_millis(890), "{:?}", start.elapsed());
    // several items in one node, due together
    let at = std::time::SystemTime::now() + Duration::from_millis(200);
    queue.put_multi_at(&[b"m1".to_vec(), b"m2".to_vec()], at).await.unwrap();
    assert_eq!(queue.size().await.unwrap(), 1);
    assert_eq!((queue.take().await.unwrap(), queue.take().await.unwrap()), (b"m1".to_vec(), b"m2".to_vec()));
    assert!(start.elapsed() < WAIT);
}

#[tokio::test]
async fn a_safe_take_is_handed_back_unless_completed() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("safe"));
    let queue = DistributedQueue::new(&fw, &path).unwrap();
    queue.put(&b"job".to_vec()).await.unwrap();
    let delivery = queue.take_safe().await.unwrap();
    assert_eq!(delivery.items(), [b"job".to_vec()]);
    // held: an at-most-once consumer does not get it meanwhile
    let other = DistributedQueue::new(&fixtures::framework(&cs).await, &path).unwrap();
    assert!(!fixtures::in_time(other.take_timeout(Duration::from_millis(200)).await));
    delivery.abandon();
    let again = tokio::time::timeout(WAIT, other.take_safe()).await.expect("handed back").unwrap();
    assert_eq!(again.complete().await.unwrap(), [b"job".to_vec()]);
    assert_eq!(queue.size().await.unwrap(), 0);
    fixtures::eventually(WAIT, "the lock node is gone", || async {
        fw.children(&format!("{path}-locks")).await.unwrap().is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_safe_take_whose_session_expired_goes_to_another_consumer_once() {
    let cs = fixtures::shared_server().await;
    let (fw_a, fw_b) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("expired"));
    let (a, b) = (DistributedQueue::new(&fw_a, &path).unwrap(), DistributedQueue::new(&fw_b, &path).unwrap());
    a.put(&b"job".to_vec()).await.unwrap();
    let first = a.take_safe().await.unwrap();
    let waiting = tokio::spawn(async move { b.take_safe().await.map(|d| (d.items().to_vec(), d)) });
    expire_session(&fw_a).await.unwrap();
    let _: LossReason = tokio::time::timeout(WAIT, first.hold().lost()).await.expect("the hold is lost");
    let (items, second) = tokio::time::timeout(WAIT, waiting).await.expect("re-delivered").unwrap().unwrap();
    assert_eq!(items, [b"job".to_vec()]);
    // the first consumer cannot consume it any more: processed twice, consumed once
    assert!(matches!(first.complete().await, Err(Error::LockLost { .. })));
    second.complete().await.unwrap();
    assert_eq!(a.size().await.unwrap(), 0);
}
