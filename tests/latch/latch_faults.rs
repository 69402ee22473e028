//! The latch through partitions, lost replies and session expiries: 16 participants, each on
//! its own session behind its own TCP proxy, count down while their links are cut, their
//! sessions expire or they crash; the latch
//! opens exactly once, and not before the last count-down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::latch::CountDown;
use zk_recipes::{DistributedCountDownLatch, Framework};
use zk_recipes_testing::fixtures;
use zk_recipes_testing::{expire_session, ProxyMode, TcpProxy, TestingServer};

const PARTICIPANTS: usize = 16;
const WAIT: Duration = Duration::from_secs(20);
/// How long a link stays partitioned.
const PARTITION: Duration = Duration::from_millis(400);

/// A participant or waiter: its session goes through its own proxy.
struct Peer {
    proxy: TcpProxy,
    fw: Framework,
}

async fn peer(server: &TestingServer) -> Peer {
    let proxy = TcpProxy::start(server.connect_string()).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    Peer { proxy, fw }
}

/// Counts `id` down through the fault `i % 4` picks: a crash right after it, a partition, an expired
/// session, or none (and a replay). Returns what the (first) count-down reported.
async fn count_down_through_fault(i: usize, p: &Peer, observer: &Framework, path: &str) -> CountDown {
    let id = format!("participant-{i:02}");
    let latch = DistributedCountDownLatch::new(&p.fw, path).unwrap();
    let node = format!("{path}/gen-0000000001/{id}");
    let outcome = match i % 4 {
        0 => {
            // the participant crashes right after its count-down (its session closes with
            // it); restarted on a new session, it counts down again: counted once
            let crashed = fixtures::framework(p.proxy.connect_string()).await;
            let outcome = DistributedCountDownLatch::new(&crashed, path).unwrap().count_down(&id).await.unwrap();
            drop(crashed);
            assert!(observer.exists(&node).await.unwrap().is_some(), "the count-down outlives its session");
            outcome
        }
        1 => {
            // a partition while counting down
            p.proxy.set_mode(ProxyMode::Blackhole);
            let pending = tokio::spawn({
                let latch = latch.clone();
                async move { latch.count_down(&id).await }
            });
            tokio::time::sleep(PARTITION).await;
            p.proxy.set_mode(ProxyMode::Pass);
            p.proxy.cut();
            fixtures::within(WAIT, pending).await.unwrap().unwrap()
        }
        2 => {
            // a session expired before, and after: the count-down is no session's
            expire_session(&p.fw).await.unwrap();
            let outcome = latch.count_down(&id).await.unwrap();
            expire_session(&p.fw).await.unwrap();
            outcome
        }
        _ => latch.count_down(&id).await.unwrap(),
    };
    // a replay counts nothing
    let replayed = latch.count_down(&format!("participant-{i:02}")).await.unwrap();
    assert!(matches!(replayed, CountDown::AlreadyCounted { generation: 1, .. }), "{i}: {replayed:?}");
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_participants_through_partitions_and_expiries_open_it_once() {
    let started = tokio::time::Instant::now();
    let server = TestingServer::start().await.unwrap();
    let observer = fixtures::framework(server.connect_string()).await;
    let path = format!("/{}/latch", fixtures::unique("latch-faults"));
    let latch = DistributedCountDownLatch::new(&observer, &path).unwrap();
    assert!(latch.try_set_count(PARTICIPANTS as u64).await.unwrap());

    // waiters on their own links, which are partitioned and expired while they wait
    let last_started = Arc::new(AtomicBool::new(false));
    let mut waiters = Vec::new();
    let mut waiter_peers = Vec::new();
    for _ in 0..3 {
        let p = peer(&server).await;
        let (fw, path, last_started) = (p.fw.clone(), path.clone(), last_started.clone());
        waiters.push(tokio::spawn(async move {
            DistributedCountDownLatch::new(&fw, &path).unwrap().wait().await.unwrap();
            assert!(last_started.load(Ordering::SeqCst), "a waiter was released before the last count-down");
        }));
        waiter_peers.push(p);
    }

    let mut peers = Vec::new();
    for _ in 0..PARTICIPANTS {
        peers.push(peer(&server).await);
    }
    let (first, last) = peers.split_at(PARTICIPANTS - 1);
    let counted = futures_util::future::join_all(
        first.iter().enumerate().map(|(i, p)| count_down_through_fault(i, p, &observer, &path)),
    )
    .await;
    for (i, outcome) in counted.iter().enumerate() {
        assert!(matches!(outcome, CountDown::Counted { generation: 1, .. }), "{i}: {outcome:?}");
    }
    // faults on the waiters' links while one count-down is missing
    waiter_peers[0].proxy.set_mode(ProxyMode::Blackhole);
    expire_session(&waiter_peers[1].fw).await.unwrap();
    waiter_peers[2].proxy.cut();
    assert_eq!(latch.count().await.unwrap(), 1);
    assert!(!fixtures::in_time(latch.wait_timeout(PARTITION).await), "open with one count-down missing");
    waiter_peers[0].proxy.set_mode(ProxyMode::Pass);
    waiter_peers[0].proxy.cut();
    assert!(waiters.iter().all(|w| !w.is_finished()), "a waiter left before the last count-down");

    last_started.store(true, Ordering::SeqCst);
    let outcome = count_down_through_fault(PARTICIPANTS - 1, &last[0], &observer, &path).await;
    assert_eq!(outcome, CountDown::Counted { generation: 1, remaining: 0 });
    for w in waiters {
        fixtures::within(WAIT, w).await.unwrap();
    }
    // opened once: exactly one node per participant, the count stays zero, still generation 1
    let counted = observer.children(&format!("{path}/gen-0000000001")).await.unwrap();
    assert_eq!(counted.len(), PARTICIPANTS, "{counted:?}");
    assert_eq!(latch.count().await.unwrap(), 0);
    assert_eq!(latch.generation().await.unwrap(), Some(1));
    for p in peers.iter().chain(&waiter_peers) {
        p.fw.close();
    }
    observer.close();
    let took = started.elapsed();
    println!("16 participants through faults: {took:?}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
}
