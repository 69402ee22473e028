//! Locks with a server TTL (`InterProcessMutex::with_server_ttl`, and the same for the
//! read-write lock, whose wedged writer's node is reaped for Curator's reader): the contender nodes
//! are TTL nodes under Curator's names. A renewing holder keeps the lock and a waiting one its
//! place; once the holder stops touching its node (its process wedged or gone, its session
//! alive) the server reaps the node after the TTL and the waiters — ours and Curator's — take
//! the lock in queue order. On a server without TTL nodes: `ServerUnsupported(TtlNodes)`, nothing left.

use std::time::{Duration, Instant};

use zk_recipes::{Error, InterProcessMutex, InterProcessReadWriteLock, TimedHold};
use zk_recipes_testing::fixtures::{self, eventually};

/// The TTL of these tests' lock nodes.
const TTL: Duration = Duration::from_millis(1500);
/// Within how long after the TTL a reaped node's waiter must hold (the kit's servers reap
/// every 100 ms; the rest is a loaded machine's slack).
const SLACK: Duration = Duration::from_secs(3);
/// How long anything else may take.
const LIVE: Duration = Duration::from_secs(10);

#[tokio::test]
async fn ttl_lock_nodes_are_kept_while_renewed_and_reaped_after_for_our_and_curators_waiters() {
    let cs = fixtures::shared_ttl_server().await;
    let peer = super::peer().await;
    let (holder_fw, waiter_fw, observer) =
        (fixtures::framework(&cs).await, fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("ttl-lock"));
    let java = fixtures::unique("java-ttl");
    peer.connect(&java, &cs).await.unwrap();
    let mutex = |fw| InterProcessMutex::new(fw, &path).unwrap().with_server_ttl(TTL).unwrap();

    // 1. a renewing holder keeps the lock for several TTLs; the waiters keep their places
    let held = TimedHold::acquire(&mutex(&holder_fw), TTL).await.unwrap();
    assert_eq!(held.server_ttl(), Some(TTL));
    let stat = observer.exists(held.path()).await.unwrap().expect("our node");
    assert_eq!(stat.ephemeral_owner, 0, "a TTL node is persistent: it has no ephemeral owner");
    assert!(held.path().rsplit('/').next().unwrap().starts_with("_c_"), "Curator's protected name");
    let ours = tokio::spawn({
        let m = mutex(&waiter_fw);
        async move { m.acquire().await.unwrap() }
    });
    eventually(LIVE, "our waiter queued", || async { observer.children(&path).await.unwrap().len() == 2 }).await;
    let theirs = tokio::spawn({
        let (peer, java, path) = (peer.clone(), java.clone(), path.clone());
        async move { peer.mutex_acquire(&java, "h", &path, Duration::from_secs(60)).await.unwrap() }
    });
    eventually(LIVE, "Curator's waiter queued", || async { observer.children(&path).await.unwrap().len() == 3 }).await;
    let started = Instant::now();
    while started.elapsed() < TTL * 3 {
        tokio::time::sleep(TTL / 3).await;
        held.renew(TTL).unwrap();
    }
    assert!(!held.is_lost() && !ours.is_finished() && !theirs.is_finished(), "still held after 3 TTLs");
    assert_eq!(observer.children(&path).await.unwrap().len(), 3, "the waiting TTL node is touched too");
    assert!(observer.exists(held.path()).await.unwrap().is_some());
    held.release().await.unwrap();

    // 2. our waiter holds; its process wedges (the guard is never released, the session lives)
    let wedged = tokio::time::timeout(SLACK, ours).await.expect("our waiter holds after the release").unwrap();
    assert!(!theirs.is_finished(), "one holder at a time");
    let wedged_path = wedged.path().to_string();
    wedged.touch().await.unwrap(); // its last sign of life (a waiter's last touch may be older)
    let last_touch = Instant::now();
    std::mem::forget(wedged);
    // the server reaps the node after the TTL; then Curator's waiter holds
    let java_held = tokio::time::timeout(TTL + SLACK, theirs).await.expect("Curator's waiter holds").unwrap();
    let freed_after = last_touch.elapsed();
    assert!(java_held, "Curator's acquire succeeded");
    // (the server stamps the touch before its reply reaches us: a few ms of leeway)
    assert!(freed_after + Duration::from_millis(100) >= TTL, "reaped only after the TTL ({freed_after:?})");
    assert!(observer.exists(&wedged_path).await.unwrap().is_none(), "the wedged holder's node was reaped");
    assert!(!waiter_fw.status().closed, "the wedged holder's session is still alive");
    println!("a wedged TTL lock freed {freed_after:?} after its last touch (TTL {TTL:?})");
    peer.mutex_release(&java, "h").await.unwrap();
    peer.close(&java).await.unwrap();
    eventually(LIVE, "no node left", || async { observer.children(&path).await.map_or(true, |c| c.is_empty()) }).await;
}

#[tokio::test]
async fn ttl_locks_refuse_bad_input_and_servers_without_ttl() {
    assert!(matches!(
        InterProcessMutex::new(&fixtures::framework(&fixtures::shared_ttl_server().await).await, "/x")
            .unwrap()
            .with_server_ttl(Duration::ZERO),
        Err(Error::InvalidArgument { .. })
    ));
    // a lease longer than the node's TTL: refused, and the hold it was given is released
    let fw = fixtures::framework(&fixtures::shared_ttl_server().await).await;
    let path = format!("/{}", fixtures::unique("ttl-lease"));
    let mutex = InterProcessMutex::new(&fw, &path).unwrap().with_server_ttl(TTL).unwrap();
    let refused = TimedHold::acquire(&mutex, TTL * 2).await;
    assert!(matches!(refused, Err(Error::InvalidArgument { .. })), "{refused:?}");
    eventually(LIVE, "the refused hold released", || async { fw.children(&path).await.map_or(true, |c| c.is_empty()) })
        .await;
    // touching a released hold's node: a typed error
    let held = mutex.acquire().await.unwrap();
    held.touch().await.unwrap();
    fw.delete(held.path()).await.unwrap();
    assert!(matches!(held.touch().await, Err(Error::LockLost { .. })));
    drop(held);

    // the binary's shared server runs without TTL nodes
    let plain = fixtures::framework(&fixtures::shared_server().await).await;
    let path = format!("/{}", fixtures::unique("ttl-off"));
    let mutex = InterProcessMutex::new(&plain, &path).unwrap().with_server_ttl(TTL).unwrap();
    assert!(matches!(mutex.acquire().await, Err(Error::ServerUnsupported(zk_recipes::ServerFeature::TtlNodes))));
    assert!(plain.exists(&path).await.unwrap().is_none(), "nothing made on the way");
}

#[tokio::test]
async fn a_wedged_ttl_write_lock_is_reaped_and_curators_reader_gets_in() {
    let cs = fixtures::shared_ttl_server().await;
    let peer = super::peer().await;
    let (fw, observer) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("ttl-rw"));
    let java = fixtures::unique("java-ttl-rw");
    peer.connect(&java, &cs).await.unwrap();
    let lock = InterProcessReadWriteLock::new(&fw, &path).unwrap().with_server_ttl(TTL).unwrap();
    let reader = |hid: &'static str| {
        let (peer, java, path) = (peer.clone(), java.clone(), path.clone());
        tokio::spawn(async move { peer.rw_read_acquire(&java, hid, &path, Duration::from_secs(60)).await.unwrap() })
    };
    // renewed: kept past the TTL while Curator's reader waits; released: the reader gets in
    let held = TimedHold::acquire(&lock.write_lock(), TTL).await.unwrap();
    assert_eq!(observer.exists(held.path()).await.unwrap().expect("our write node").ephemeral_owner, 0);
    let waiting = reader("r1");
    for _ in 0..6 {
        tokio::time::sleep(TTL / 3).await;
        held.renew(TTL).unwrap();
    }
    assert!(!waiting.is_finished() && !held.is_lost(), "still written after two TTLs");
    held.release().await.unwrap();
    assert!(tokio::time::timeout(SLACK, waiting).await.expect("the reader gets in after the release").unwrap());
    peer.rw_release(&java, "r1").await.unwrap();
    // wedged: a plain write hold whose process stops touching it while its session lives on:
    // the server reaps the write node after the TTL, and Curator's reader gets in
    let wedged = lock.write_lock().acquire().await.unwrap();
    let waiting = reader("r2");
    wedged.touch().await.unwrap();
    let last_touch = Instant::now();
    let wedged_path = wedged.path().to_string();
    std::mem::forget(wedged);
    assert!(tokio::time::timeout(TTL + SLACK, waiting).await.expect("Curator's reader gets in").unwrap());
    assert!(last_touch.elapsed() + Duration::from_millis(100) >= TTL, "not before the TTL");
    assert!(observer.exists(&wedged_path).await.unwrap().is_none(), "reaped by the server");
    assert!(!fw.status().closed);
    peer.rw_release(&java, "r2").await.unwrap();
    peer.close(&java).await.unwrap();
}
