//! A Curator 5.4 `InterProcessMultiLock` (in the peer) and ours over overlapping path sets:
//! all or nothing both ways. A multi-lock blocked on the shared path holds none of its other
//! paths once it gives up (each side takes its free path first, then waits on the shared one,
//! so a rollback is needed and checked), and the blocked side gets every path once the other
//! releases.

use std::time::Duration;

use zk_recipes::{Error, Framework, InterProcessMultiLock, InterProcessMutex};
use zk_recipes_testing::fixtures::{self, eventually};

use crate::cmd;

const WAIT: Duration = Duration::from_secs(20);
const SHORT: Duration = Duration::from_millis(800);

/// The contenders under `path` (none when it is gone).
async fn nodes(fw: &Framework, path: &str) -> usize {
    fw.children(path).await.map_or(0, |c| c.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_our_multi_locks_are_all_or_nothing_against_each_other() {
    let cs = fixtures::shared_server().await;
    fixtures::within(Duration::from_secs(90), async {
        let peer = crate::peer().await;
        let base = format!("/{}", fixtures::unique("interop-multilock"));
        let (a, b, c) = (format!("{base}/a"), format!("{base}/b"), format!("{base}/c"));
        let cid = fixtures::unique("multilock-java");
        peer.connect(&cid, &cs).await.unwrap();
        let fw = fixtures::framework(&cs).await;
        let java_bc = format!("{c},{b}"); // Curator takes c (free), then waits on b

        // 1. Curator holds {b, c}
        assert_eq!(cmd(&peer, &["multilock.acquire", &cid, "j", &format!("{b},{c}"), "5000"]).await, "true");
        assert_eq!((nodes(&fw, &b).await, nodes(&fw, &c).await), (1, 1), "Curator holds b and c");
        // ours on {a, b} takes a (sorted first, free), then waits on b: gives up holding nothing
        let ours = InterProcessMultiLock::from_paths(&fw, [&b, &a]).unwrap();
        match ours.acquire_timeout(SHORT).await {
            Err(Error::Timeout { .. }) => {}
            other => panic!("ours must time out while Curator holds b: {:?}", other.map(drop)),
        }
        eventually(WAIT, "ours rolled back a", || async { nodes(&fw, &a).await == 0 }).await;
        assert_eq!(nodes(&fw, &b).await, 1, "only Curator's node on b");
        // a is free for anyone (Curator's plain mutex takes it at once)
        assert_eq!(cmd(&peer, &["mutex.acquire", &cid, "probe", &a, "2000"]).await, "true");
        assert_eq!(cmd(&peer, &["mutex.release", &cid, "probe"]).await, "0");

        // ours waits, gets both once Curator releases
        let waiter = tokio::spawn({
            let ours = ours.clone();
            async move { ours.acquire().await.unwrap() }
        });
        eventually(WAIT, "ours queued on b", || async { nodes(&fw, &b).await == 2 }).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished(), "ours waits while Curator holds b");
        assert_eq!(cmd(&peer, &["multilock.release", &cid, "j"]).await, "released");
        let guard = tokio::time::timeout(WAIT, waiter).await.expect("ours holds after the release").unwrap();
        assert_eq!(guard.nodes().count(), 2);
        assert_eq!((nodes(&fw, &a).await, nodes(&fw, &b).await, nodes(&fw, &c).await), (1, 1, 0));

        // 2. ours holds {a, b}; Curator's on [c, b] takes c, waits on b, gives up holding nothing
        assert_eq!(
            cmd(&peer, &["multilock.acquire", &cid, "j", &java_bc, &SHORT.as_millis().to_string()]).await,
            "false"
        );
        eventually(WAIT, "Curator rolled back c", || async { nodes(&fw, &c).await == 0 }).await;
        assert_eq!(nodes(&fw, &b).await, 1, "only our node on b");
        let probe = InterProcessMutex::new(&fw, &c).unwrap();
        probe.acquire_timeout(Duration::from_secs(5)).await.expect("c is free").release().await.unwrap();
        // Curator waits, gets both once ours releases
        let theirs = tokio::spawn({
            let (peer, cid, java_bc) = (peer.clone(), cid.clone(), java_bc.clone());
            async move { cmd(&peer, &["multilock.acquire", &cid, "j", &java_bc, "30000"]).await }
        });
        eventually(WAIT, "Curator queued on b", || async { nodes(&fw, &b).await == 2 }).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!theirs.is_finished(), "Curator waits while ours holds b");
        assert_eq!(nodes(&fw, &c).await, 1, "Curator holds c while it waits on b (its order)");
        guard.release().await.unwrap();
        let got = tokio::time::timeout(WAIT, theirs).await.expect("Curator holds after our release").unwrap();
        assert_eq!(got, "true");
        assert_eq!((nodes(&fw, &a).await, nodes(&fw, &b).await, nodes(&fw, &c).await), (0, 1, 1));
        // and ours, over {a, b} again, is refused without keeping a
        assert!(matches!(ours.acquire_timeout(SHORT).await, Err(Error::Timeout { .. })));
        eventually(WAIT, "ours rolled back a again", || async { nodes(&fw, &a).await == 0 }).await;

        assert_eq!(cmd(&peer, &["multilock.release", &cid, "j"]).await, "released");
        peer.close(&cid).await.unwrap();
        for p in [&a, &b, &c] {
            eventually(WAIT, format!("{p} empty"), || async { nodes(&fw, p).await == 0 }).await;
        }
    })
    .await;
}
