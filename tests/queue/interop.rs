//! Curator 5.4 (in the peer) and our queues on the same paths, both ways, for every kind:
//! what one side puts, the other takes, whole and in the kind's order.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_recipes::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue, SimpleDistributedQueue,
};
use zk_recipes_testing::curator::CuratorQueueKind as Kind;
use zk_recipes_testing::fixtures::{self, eventually};

use crate::WAIT;

fn strings(items: Vec<Vec<u8>>) -> Vec<String> {
    items.into_iter().map(|i| String::from_utf8(i).unwrap()).collect()
}

fn epoch_in(delay: Duration) -> u64 {
    (SystemTime::now() + delay).duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

#[tokio::test]
async fn curator_producers_our_consumers() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let cid = "queue-producer";
    peer.connect(cid, &cs).await.unwrap();
    let fw = fixtures::framework(&cs).await;
    let root = format!("/{}", fixtures::unique("from-curator"));

    // simple: raw bytes, FIFO
    let path = format!("{root}/simple");
    peer.queue_put(cid, &path, &Kind::Simple, &[b"s1", b"s2"]).await.unwrap();
    let simple = SimpleDistributedQueue::new(&fw, &path).unwrap();
    assert_eq!(simple.take().await.unwrap(), b"s1");
    assert_eq!(simple.take().await.unwrap(), b"s2");

    // distributed: a multi-item node, then a single one
    let path = format!("{root}/fifo");
    peer.queue_put(cid, &path, &Kind::Distributed, &[b"m1", b"m2", b"m3"]).await.unwrap();
    peer.queue_put(cid, &path, &Kind::Distributed, &[b"single"]).await.unwrap();
    // Curator's nodes, byte for byte what ours write: `queue-<seq>`, the ItemSerializer framing
    let mut names = fw.children(&path).await.unwrap();
    names.sort();
    assert!(names.iter().all(|n| n.starts_with("queue-") && n.len() == 16), "{names:?}");
    let (single, _) = fw.get_data(&format!("{path}/{}", names[1])).await.unwrap();
    assert_eq!(single, [&[0, 1, 0, 1, 1, 0, 0, 0, 6][..], b"single", &[2]].concat());
    let fifo = DistributedQueue::new(&fw, &path).unwrap();
    let delivery = fifo.take_safe().await.unwrap();
    assert_eq!(strings(delivery.complete().await.unwrap()), ["m1", "m2", "m3"]);
    assert_eq!(fifo.take().await.unwrap(), b"single");

    // id: Curator's ids, removed by ours
    let path = format!("{root}/ids");
    for (item, id) in [(&b"i1"[..], "a/1"), (b"i2", "b"), (b"i3", "a/1")] {
        peer.queue_put(cid, &path, &Kind::Id(id.into()), &[item]).await.unwrap();
    }
    let names = fw.children(&path).await.unwrap();
    assert_eq!(names.iter().filter(|n| n.starts_with("queue-|a_1|")).count(), 2, "{names:?}");
    let ids = DistributedIdQueue::new(&fw, &path).unwrap();
    assert_eq!(ids.remove("a/1").await.unwrap(), 2);
    assert_eq!(ids.take().await.unwrap(), b"i2");

    // priority: Curator's negative priorities first, then lowest first
    let path = format!("{root}/prio");
    for (item, priority) in [(&b"p5"[..], 5), (b"p-2", -2), (b"p1", 1), (b"p0", 0), (b"p-9", -9)] {
        peer.queue_put(cid, &path, &Kind::Priority(priority), &[item]).await.unwrap();
    }
    let names = fw.children(&path).await.unwrap();
    for prefix in ["queue-100000005", "queue-0FFFFFFFE", "queue-100000000", "queue-0FFFFFFF7"] {
        assert!(names.iter().any(|n| n.starts_with(prefix)), "{prefix} in {names:?}");
    }
    let prio = DistributedPriorityQueue::new(&fw, &path).unwrap();
    let mut got = Vec::new();
    for _ in 0..5 {
        got.push(prio.take().await.unwrap());
    }
    assert_eq!(strings(got), ["p-9", "p-2", "p0", "p1", "p5"]);

    // delay: handed over at their time, earliest first
    let path = format!("{root}/delay");
    let start = Instant::now();
    peer.queue_put(cid, &path, &Kind::Delay(epoch_in(Duration::from_millis(900))), &[b"late"]).await.unwrap();
    peer.queue_put(cid, &path, &Kind::Delay(epoch_in(Duration::from_millis(400))), &[b"early"]).await.unwrap();
    let names = fw.children(&path).await.unwrap();
    assert!(names.iter().all(|n| n.starts_with("queue-|") && n.matches('|').count() == 2), "{names:?}");
    let delay = DistributedDelayQueue::new(&fw, &path).unwrap();
    assert_eq!(delay.take().await.unwrap(), b"early");
    assert!(start.elapsed() >= Duration::from_millis(350), "{:?}", start.elapsed());
    assert_eq!(delay.take().await.unwrap(), b"late");
    assert!(start.elapsed() >= Duration::from_millis(850), "{:?}", start.elapsed());
    peer.close(cid).await.unwrap();
}

#[tokio::test]
async fn our_producers_curator_consumers() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let cid = "queue-consumer";
    peer.connect(cid, &cs).await.unwrap();
    let fw = fixtures::framework(&cs).await;
    let root = format!("/{}", fixtures::unique("to-curator"));

    // simple
    let path = format!("{root}/simple");
    let simple = SimpleDistributedQueue::new(&fw, &path).unwrap();
    simple.offer(b"s1").await.unwrap();
    simple.offer_all(&[b"s2".to_vec(), b"s3".to_vec()]).await.unwrap();
    for want in ["s1", "s2", "s3"] {
        let got = peer.queue_simple_poll(cid, &path, WAIT).await.unwrap();
        assert_eq!(got.as_deref(), Some(want.as_bytes()));
    }

    // every other kind: put everything first, then start Curator's (lock-safe) consumer
    let consumed = |hid: &'static str, want: Vec<&'static str>| {
        let peer = peer.clone();
        async move {
            eventually(WAIT, format!("Curator consumed {want:?}"), || async {
                strings(peer.queue_consumed(cid, hid).await.unwrap()).len() >= want.len()
            })
            .await;
            assert_eq!(strings(peer.queue_consumed(cid, hid).await.unwrap()), want);
            peer.queue_consume_close(cid, hid).await.unwrap();
        }
    };

    let path = format!("{root}/fifo");
    let fifo = DistributedQueue::new(&fw, &path).unwrap();
    fifo.put_multi(&[b"m1".to_vec(), b"m2".to_vec()]).await.unwrap();
    fifo.put(&b"m3".to_vec()).await.unwrap();
    peer.queue_consume_start(cid, "fifo", &path, &Kind::Distributed, Some(fifo.lock_path())).await.unwrap();
    consumed("fifo", vec!["m1", "m2", "m3"]).await;
    assert_eq!(fifo.size().await.unwrap(), 0);

    let path = format!("{root}/ids");
    let ids = DistributedIdQueue::new(&fw, &path).unwrap();
    ids.put(&b"i1".to_vec(), "x").await.unwrap();
    ids.put(&b"i2".to_vec(), "y").await.unwrap();
    ids.put(&b"i3".to_vec(), "x").await.unwrap();
    assert_eq!(peer.queue_remove(cid, &path, "x").await.unwrap(), 2, "Curator removes our ids");
    peer.queue_consume_start(cid, "ids", &path, &Kind::Id(String::new()), Some(ids.lock_path())).await.unwrap();
    consumed("ids", vec!["i2"]).await;

    let path = format!("{root}/prio");
    let prio = DistributedPriorityQueue::new(&fw, &path).unwrap();
    for (item, priority) in [("p5", 5), ("p1", 1), ("p0", 0), ("p300", 300)] {
        prio.put(&item.as_bytes().to_vec(), priority).await.unwrap();
    }
    peer.queue_consume_start(cid, "prio", &path, &Kind::Priority(0), Some(prio.lock_path())).await.unwrap();
    consumed("prio", vec!["p0", "p1", "p5", "p300"]).await;

    let path = format!("{root}/delay");
    let delay = DistributedDelayQueue::new(&fw, &path).unwrap();
    let start = Instant::now();
    delay.put_after(&b"late".to_vec(), Duration::from_millis(900)).await.unwrap();
    delay.put_after(&b"early".to_vec(), Duration::from_millis(400)).await.unwrap();
    peer.queue_consume_start(cid, "delay", &path, &Kind::Delay(0), Some(delay.lock_path())).await.unwrap();
    eventually(WAIT, "Curator consumed the early item", || async {
        !peer.queue_consumed(cid, "delay").await.unwrap().is_empty()
    })
    .await;
    assert!(start.elapsed() >= Duration::from_millis(350), "not before its time: {:?}", start.elapsed());
    consumed("delay", vec!["early", "late"]).await;
    assert!(start.elapsed() >= Duration::from_millis(850), "{:?}", start.elapsed());
    peer.close(cid).await.unwrap();
}

#[tokio::test]
async fn curator_lock_safe_consumers_and_ours_share_a_queue_each_item_once() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let cid = "queue-shared";
    peer.connect(cid, &cs).await.unwrap();
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("shared-queue"));
    let queue = DistributedQueue::new(&fw, &path).unwrap();
    let all = crate::items("job", 60);
    queue.put_all(&all).await.unwrap();
    peer.queue_consume_start(cid, "shared", &path, &Kind::Distributed, Some(queue.lock_path())).await.unwrap();
    let mut ours = Vec::new();
    while let Some(item) = fixtures::before_deadline(queue.take_timeout(Duration::from_millis(300)).await).unwrap() {
        ours.push(item);
    }
    eventually(WAIT, "the queue is drained", || async { queue.size().await.unwrap() == 0 }).await;
    let theirs = peer.queue_consumed(cid, "shared").await.unwrap();
    peer.queue_consume_close(cid, "shared").await.unwrap();
    let mut got: Vec<Vec<u8>> = ours.into_iter().chain(theirs).collect();
    got.sort();
    let mut want = all;
    want.sort();
    assert_eq!(got, want, "each item once, by one side or the other");
    peer.close(cid).await.unwrap();
}
