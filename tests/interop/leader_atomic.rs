//! A real Curator 5.4 (in one JVM) and this crate on the same paths: leader latches elect
//! exactly one leader; atomic counters add up.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::{DistributedAtomicInteger, DistributedAtomicLong, LeaderLatch};
use zk_recipes_testing::curator::CuratorPeer;
use zk_recipes_testing::fixtures;

#[tokio::test]
async fn curator_and_our_latches_elect_exactly_one_leader() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let path = format!("/{}", fixtures::unique("interop-latch"));
    peer.connect("latch-java", &cs).await.unwrap();
    peer.latch_start("latch-java", "j1", &path, "java-1").await.unwrap();
    assert!(peer.latch_await("latch-java", "j1", Duration::from_secs(10)).await.unwrap(), "Curator leads first");
    let fw = fixtures::framework(&cs).await;
    let ours = LeaderLatch::new(&fw, &path, "rust-1").unwrap();
    ours.start().await.unwrap();
    // Curator leads; ours waits and agrees on who leads
    assert!(!fixtures::in_time(ours.await_leadership_timeout(Duration::from_millis(500)).await));
    assert_eq!(ours.leader().await.unwrap().unwrap().id, "java-1");
    assert_eq!(peer.latch_leader("latch-java", "j1").await.unwrap(), "java-1");
    let participants = ours.participants().await.unwrap();
    assert_eq!(participants.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), ["java-1", "rust-1"]);
    // Curator leaves: ours leads, Curator's second participant waits behind it
    peer.latch_start("latch-java", "j2", &path, "java-2").await.unwrap();
    peer.latch_close("latch-java", "j1").await.unwrap();
    assert!(fixtures::in_time(ours.await_leadership_timeout(Duration::from_secs(10)).await));
    assert!(!peer.latch_has("latch-java", "j2").await.unwrap());
    assert_eq!(peer.latch_leader("latch-java", "j2").await.unwrap(), "rust-1");
    // ours leaves: Curator's leads
    ours.close().await.unwrap();
    assert!(peer.latch_await("latch-java", "j2", Duration::from_secs(10)).await.unwrap());
    assert!(!ours.has_leadership());
    peer.latch_close("latch-java", "j2").await.unwrap();
    peer.close("latch-java").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_our_atomic_increments_add_up() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let path = format!("/{}/long", fixtures::unique("interop-atomic"));
    let int_path = format!("{path}-int");
    let ours_ok = Arc::new(AtomicI64::new(0));
    let theirs_ok = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for c in 0..2 {
        let (peer, cs, path, int_path, theirs_ok) =
            (peer.clone(), cs.clone(), path.clone(), int_path.clone(), theirs_ok.clone());
        tasks.push(tokio::spawn(async move {
            let cid = format!("atomic-java-{c}");
            peer.connect(&cid, &cs).await.unwrap();
            for _ in 0..40 {
                if peer.atomic_long_add(&cid, &path, 1).await.unwrap().succeeded {
                    theirs_ok.fetch_add(1, Ordering::SeqCst);
                }
                assert!(peer.atomic_int_add(&cid, &int_path, 1).await.unwrap().succeeded);
            }
            peer.close(&cid).await.unwrap();
        }));
    }
    for _ in 0..2 {
        let (cs, path, int_path, ours_ok) = (cs.clone(), path.clone(), int_path.clone(), ours_ok.clone());
        tasks.push(tokio::spawn(async move {
            let fw = fixtures::framework(&cs).await;
            let long = DistributedAtomicLong::new(&fw, &path).unwrap();
            let int = DistributedAtomicInteger::new(&fw, &int_path).unwrap();
            for _ in 0..40 {
                match long.increment().await {
                    Ok(_) => {
                        ours_ok.fetch_add(1, Ordering::SeqCst);
                    }
                    // the tries ran out: not applied, not counted
                    Err(zk_recipes::Error::Contended { .. }) => {}
                    Err(e) => panic!("increment: {e}"),
                }
                int.increment().await.unwrap();
            }
            long.close().await.unwrap();
            int.close().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let total = ours_ok.load(Ordering::SeqCst) + theirs_ok.load(Ordering::SeqCst);
    let fw = fixtures::framework(&cs).await;
    assert_eq!(DistributedAtomicLong::new(&fw, &path).unwrap().get().await.unwrap(), total);
    assert_eq!(ours_ok.load(Ordering::SeqCst), 80, "ours never gives up under contention");
    // both sides read the same value
    assert_eq!(peer_read(&peer, &cs, &path).await, Some(total), "Curator reads the same value");
    assert_eq!(DistributedAtomicInteger::new(&fw, &int_path).unwrap().get().await.unwrap(), 160);
}

async fn peer_read(peer: &CuratorPeer, cs: &str, path: &str) -> Option<i64> {
    peer.connect("reader", cs).await.ok()?;
    let v = peer.atomic_long_get("reader", path).await.ok().map(|r| r.post_value);
    peer.close("reader").await.ok()?;
    v
}
