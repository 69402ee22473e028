//! Lock revocation across Curator 5.4 and ours (`__REVOKE__` written to the holder's node):
//! Curator's `Revoker.attemptRevoke` makes our revocable holder release, and our
//! `request_revoke` makes a Curator holder (`makeRevocable`) release; the waiter on the other
//! side then holds.

use std::time::Duration;

use zk_recipes::{Framework, InterProcessMutex};
use zk_recipes_testing::fixtures::{self, eventually};

use crate::cmd;

const WAIT: Duration = Duration::from_secs(20);

async fn children(fw: &Framework, path: &str) -> Vec<String> {
    fw.children(path).await.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_requests_make_holders_release_both_ways() {
    let cs = fixtures::shared_server().await;
    fixtures::within(Duration::from_secs(90), async {
        let peer = crate::peer().await;
        let base = format!("/{}", fixtures::unique("interop-revoke"));
        let (ours_path, theirs_path) = (format!("{base}/ours"), format!("{base}/theirs"));
        let cid = fixtures::unique("revoke-java");
        peer.connect(&cid, &cs).await.unwrap();
        let fw = fixtures::framework(&cs).await;

        // 1. our revocable holder; Curator queues behind it, then asks it to release
        let mutex = InterProcessMutex::new(&fw, &ours_path).unwrap().revocable();
        let guard = mutex.acquire().await.unwrap();
        let node = guard.path().to_string();
        assert_eq!(fw.get_data(&node).await.unwrap().0, b"", "a revocable holder's node is empty, as Curator's");
        let holder = tokio::spawn(async move {
            guard.revoked().await;
            guard.release().await.unwrap();
        });
        let theirs = tokio::spawn({
            let (peer, cid, path) = (peer.clone(), cid.clone(), ours_path.clone());
            async move { cmd(&peer, &["mutex.acquire", &cid, "w", &path, "30000"]).await }
        });
        eventually(WAIT, "Curator queued", || async { children(&fw, &ours_path).await.len() == 2 }).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!holder.is_finished() && !theirs.is_finished(), "nobody asked yet: ours holds");
        cmd(&peer, &["revoke.attempt", &cid, &node]).await;
        tokio::time::timeout(WAIT, holder).await.expect("ours released on Curator's request").unwrap();
        assert_eq!(tokio::time::timeout(WAIT, theirs).await.expect("Curator holds").unwrap(), "true");
        assert!(fw.exists(&node).await.unwrap().is_none(), "our node is gone");
        assert_eq!(cmd(&peer, &["mutex.release", &cid, "w"]).await, "0");

        // 2. Curator's revocable holder; ours queues behind it and asks it to release
        assert_eq!(cmd(&peer, &["revmutex.acquire", &cid, "r", &theirs_path, "10000"]).await, "true");
        let held = children(&fw, &theirs_path).await;
        assert_eq!(held.len(), 1, "{held:?}");
        let java_node = format!("{theirs_path}/{}", held[0]);
        assert_eq!(fw.get_data(&java_node).await.unwrap().0, b"", "Curator's revocable node is empty too");
        let ours = InterProcessMutex::new(&fw, &theirs_path).unwrap();
        let waiter = tokio::spawn(async move { ours.acquire().await.unwrap() });
        eventually(WAIT, "ours queued", || async { children(&fw, &theirs_path).await.len() == 2 }).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished());
        assert_eq!(cmd(&peer, &["revmutex.state", &cid, "r"]).await, "true 0", "held, not asked yet");
        InterProcessMutex::request_revoke(&fw, &java_node).await.unwrap();
        let guard = tokio::time::timeout(WAIT, waiter).await.expect("ours holds once Curator released").unwrap();
        // (the listener's release deletes the node before it marks the holder free)
        eventually(WAIT, "Curator's listener released", || async {
            cmd(&peer, &["revmutex.state", &cid, "r"]).await == "false 1"
        })
        .await;
        assert!(fw.exists(&java_node).await.unwrap().is_none());
        guard.release().await.unwrap();

        assert_eq!(cmd(&peer, &["revmutex.release", &cid, "r"]).await, "false");
        peer.close(&cid).await.unwrap();
        for p in [&ours_path, &theirs_path] {
            eventually(WAIT, format!("{p} empty"), || async { children(&fw, p).await.is_empty() }).await;
        }
    })
    .await;
}
