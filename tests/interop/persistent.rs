//! `PersistentNode` and `PersistentTtlNode` next to Curator 5.4's under one parent: each side
//! sees the other's node (data, owner) and data changes, also after each side's session was
//! expired by the server (ours through the kit's `expire_session`, Curator's through the peer's
//! `session.expire`, the same impostor-close): both nodes come back, owned by the new sessions.

use std::time::Duration;

use zk_recipes::{Framework, NodeMode, PersistentNode, PersistentTtlNode};
use zk_recipes_testing::curator::CuratorPeer;
use zk_recipes_testing::expire_session;
use zk_recipes_testing::fixtures::{self, eventually};

use crate::{cmd, hex};

const WAIT: Duration = Duration::from_secs(30);

/// What Curator reads at `path`: `(ephemeralOwner, data as hex)`, `None` when missing.
async fn curator_reads(peer: &CuratorPeer, cid: &str, path: &str) -> Option<(i64, String)> {
    let answer = cmd(peer, &["pnode.read", cid, path]).await;
    if answer == "none" {
        return None;
    }
    let words: Vec<&str> = answer.split(' ').collect();
    Some((words[0].parse().unwrap(), words[2].to_string()))
}

/// What we read at `path`: `(ephemeralOwner, data)`, `None` when missing.
async fn we_read(fw: &Framework, path: &str) -> Option<(i64, Vec<u8>)> {
    fw.get_data(path).await.ok().map(|(data, stat)| (stat.ephemeral_owner, data))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_nodes_are_seen_across_sides_and_come_back_after_session_losses() {
    let cs = fixtures::shared_server().await;
    fixtures::within(Duration::from_secs(120), async {
        let peer = crate::peer().await;
        let base = format!("/{}", fixtures::unique("interop-pnode"));
        let (java_path, rust_path) = (format!("{base}/java"), format!("{base}/rust"));
        let cid = fixtures::unique("pnode-java");
        let java_session = peer.connect_with_session_timeout(&cid, &cs, Duration::from_secs(4)).await.unwrap();
        let fw = fixtures::framework(&cs).await;
        let observer = fixtures::framework(&cs).await;

        cmd(&peer, &["pnode.start", &cid, "j", &java_path, "ephemeral", &hex(b"j")]).await;
        assert_eq!(cmd(&peer, &["pnode.await", &cid, "j", "10000"]).await, "true");
        let ours = PersistentNode::new(&fw, &rust_path, NodeMode::Ephemeral, "r").unwrap();
        ours.start().await.unwrap();
        ours.wait_for_initial_create(WAIT).await.unwrap();

        // each sees the other's
        assert_eq!(we_read(&observer, &java_path).await, Some((java_session, b"j".to_vec())), "we see Curator's");
        let our_session = fw.status().session_id;
        assert_eq!(curator_reads(&peer, &cid, &rust_path).await, Some((our_session, hex(b"r"))), "Curator sees ours");

        // our session is lost: our node comes back under the new session, Curator sees it
        expire_session(&fw).await.unwrap();
        eventually(WAIT, "Curator sees our node again", || async {
            let now = fw.status().session_id;
            now != our_session && curator_reads(&peer, &cid, &rust_path).await == Some((now, hex(b"r")))
        })
        .await;

        // Curator's session is lost: its node comes back under its new session, we see it
        let java_again: i64 = cmd(&peer, &["session.expire", &cid]).await.parse().unwrap();
        assert_ne!(java_again, java_session);
        eventually(WAIT, "we see Curator's node again", || async {
            we_read(&observer, &java_path).await == Some((java_again, b"j".to_vec()))
        })
        .await;

        // data changes, both ways
        cmd(&peer, &["pnode.set", &cid, "j", &hex(b"j2")]).await;
        eventually(WAIT, "we see Curator's new data", || async {
            we_read(&observer, &java_path).await.map(|(_, d)| d) == Some(b"j2".to_vec())
        })
        .await;
        ours.set_data("r2").unwrap();
        eventually(WAIT, "Curator sees our new data", || async {
            curator_reads(&peer, &cid, &rust_path).await.map(|(_, d)| d) == Some(hex(b"r2"))
        })
        .await;

        // closing removes each; the other side sees it go
        cmd(&peer, &["pnode.close", &cid, "j"]).await;
        eventually(WAIT, "Curator's node gone", || async { we_read(&observer, &java_path).await.is_none() }).await;
        ours.close().await.unwrap();
        eventually(WAIT, "Curator sees our node gone", || async {
            curator_reads(&peer, &cid, &rust_path).await.is_none()
        })
        .await;
        peer.close(&cid).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_nodes_are_seen_across_sides_and_stay_through_session_losses() {
    let cs = fixtures::shared_ttl_server().await;
    fixtures::within(Duration::from_secs(120), async {
        let peer = crate::peer().await;
        let base = format!("/{}", fixtures::unique("interop-ttlnode"));
        let (java_path, rust_path) = (format!("{base}/java"), format!("{base}/rust"));
        let ttl = Duration::from_millis(1500);
        let cid = fixtures::unique("ttlnode-java");
        peer.connect_with_session_timeout(&cid, &cs, Duration::from_secs(4)).await.unwrap();
        let fw = fixtures::framework(&cs).await;
        let observer = fixtures::framework(&cs).await;

        cmd(&peer, &["ttlnode.start", &cid, "j", &java_path, &ttl.as_millis().to_string(), &hex(b"j")]).await;
        assert_eq!(cmd(&peer, &["ttlnode.await", &cid, "j", "10000"]).await, "true");
        let ours = PersistentTtlNode::new(&fw, &rust_path, ttl, "r").unwrap();
        ours.start().await.unwrap();
        ours.wait_for_initial_create(WAIT).await.unwrap();

        // the same layout: the data on the path (a container), a `touch` child with the TTL
        let both_there = || async {
            let java = we_read(&observer, &java_path).await.map(|(_, d)| d);
            let java_touch = observer.exists(&format!("{java_path}/touch")).await.unwrap().is_some();
            let rust = curator_reads(&peer, &cid, &rust_path).await.map(|(_, d)| d);
            let rust_touch = curator_reads(&peer, &cid, &format!("{rust_path}/touch")).await.is_some();
            let seen = java == Some(b"j".to_vec()) && java_touch && rust == Some(hex(b"r")) && rust_touch;
            if !seen {
                println!("ttl nodes: Curator's {java:?} touch {java_touch}; ours {rust:?} touch {rust_touch}");
            }
            seen
        };
        // (Curator touches first a TTL / 2 after start, ours at once)
        eventually(WAIT, "each side sees the other's node and its touch child", both_there).await;

        // both sessions are lost; both nodes are still there three TTLs later (touched again)
        expire_session(&fw).await.unwrap();
        cmd(&peer, &["session.expire", &cid]).await;
        tokio::time::sleep(ttl * 3).await;
        assert!(both_there().await, "both TTL nodes outlive the session losses");

        // closing stops the touches: each side sees the other's node reaped after the TTL
        cmd(&peer, &["ttlnode.close", &cid, "j"]).await;
        ours.close().await.unwrap();
        eventually(WAIT, "Curator's TTL node reaped", || async { we_read(&observer, &java_path).await.is_none() })
            .await;
        eventually(WAIT, "our TTL node reaped, seen by Curator", || async {
            curator_reads(&peer, &cid, &rust_path).await.is_none()
        })
        .await;
        peer.close(&cid).await.unwrap();
    })
    .await;
}
