//! `SharedValue` and `DistributedAtomicValue` shared with Curator 5.4 on the same paths: the
//! same raw bytes on the node, and compare-and-set across sides (a write based on a stale read
//! is refused once the other side wrote).

use std::time::Duration;

use zk_recipes::{AtomicOptions, DistributedAtomicValue, SharedValue};
use zk_recipes_testing::fixtures::{self, eventually};

use crate::{cmd, hex};

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_value_bytes_and_stale_writes_are_refused_across_sides() {
    let cs = fixtures::shared_server().await;
    fixtures::within(Duration::from_secs(60), async {
        let peer = crate::peer().await;
        let path = format!("/{}/value", fixtures::unique("interop-sharedvalue"));
        let cid = fixtures::unique("sv-java");
        peer.connect(&cid, &cs).await.unwrap();
        let fw = fixtures::framework(&cs).await;
        let ours = SharedValue::new(&fw, &path, b"seed".to_vec()).unwrap();
        ours.start().await.unwrap();
        cmd(&peer, &["sharedvalue.start", &cid, "j", &path, &hex(b"other seed")]).await;
        let read = || async { cmd(&peer, &["sharedvalue.read", &cid, "j"]).await };
        // our seed won (created first); Curator's start kept it
        assert_eq!(read().await, format!("0 {}", hex(b"seed")));

        // raw bytes, both ways
        let binary = [0u8, 0xff, b'r', 0x80, 0];
        ours.set(&binary).await.unwrap();
        assert_eq!(fw.get_data(&path).await.unwrap().0, binary, "the node holds the raw bytes");
        let want = format!("1 {}", hex(&binary));
        eventually(WAIT, "Curator sees our bytes", || async { read().await == want }).await;

        // ours read at version 1; Curator writes on its read of version 1; ours is stale now
        let stale = ours.get().await.unwrap();
        assert_eq!(stale.version, 1);
        assert_eq!(cmd(&peer, &["sharedvalue.tryset", &cid, "j", &hex(b"java")]).await, "true");
        assert!(!ours.try_set(&stale, b"late").await.unwrap(), "our stale write is refused");
        let now = ours.get().await.unwrap();
        assert_eq!((now.version, now.value.as_slice()), (2, &b"java"[..]));

        // Curator reads version 2; ours writes; Curator's write on its stale read is refused
        eventually(WAIT, "Curator sees its own write", || async { read().await == format!("2 {}", hex(b"java")) })
            .await;
        assert!(ours.try_set(&now, b"rust").await.unwrap());
        assert_eq!(cmd(&peer, &["sharedvalue.tryset", &cid, "j", &hex(b"late")]).await, "false");
        let want = format!("3 {}", hex(b"rust"));
        eventually(WAIT, "Curator sees our write", || async { read().await == want }).await;
        assert_eq!(fw.get_data(&path).await.unwrap().0, b"rust");

        // an empty value both ways
        cmd(&peer, &["sharedvalue.set", &cid, "j", "-"]).await;
        assert_eq!(ours.get().await.unwrap().value, b"");

        cmd(&peer, &["sharedvalue.close", &cid, "j"]).await;
        peer.close(&cid).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_value_compare_and_set_across_sides() {
    let cs = fixtures::shared_server().await;
    fixtures::within(Duration::from_secs(60), async {
        let peer = crate::peer().await;
        let path = format!("/{}/value", fixtures::unique("interop-atomicvalue"));
        let cid = fixtures::unique("av-java");
        peer.connect(&cid, &cs).await.unwrap();
        let fw = fixtures::framework(&cs).await;
        let ours = DistributedAtomicValue::new(&fw, &path, AtomicOptions::default()).unwrap();
        let java = |words: &'static [&'static str]| {
            let (peer, cid, path) = (peer.clone(), cid.clone(), path.clone());
            async move {
                let mut all = vec![words[0], cid.as_str(), path.as_str()];
                all.extend_from_slice(&words[1..]);
                cmd(&peer, &all).await
            }
        };
        // a missing node reads as empty on both sides
        assert_eq!(ours.get().await.unwrap(), b"");
        // (Curator's get of a missing node answers no bytes at all: `?`)
        let missing = java(&["atomicvalue.get"]).await;
        assert!(missing == "true ? ?" || missing == "true - -", "Curator reads nothing too: {missing}");

        assert!(ours.initialize(b"one").await.unwrap());
        assert_eq!(fw.get_data(&path).await.unwrap().0, b"one", "raw bytes on the node");
        let (one, two, three, four) = (hex(b"one"), hex(b"two"), hex(b"three"), hex(b"four"));
        assert_eq!(java(&["atomicvalue.get"]).await, format!("true {one} {one}"));

        // Curator swaps one -> two; ours, still expecting one, is refused and told two
        let swapped = peer.call(&format!("atomicvalue.cas {cid} {path} {one} {two}")).await.unwrap();
        assert_eq!(swapped, format!("true {one} {two}"));
        let refused = ours.compare_and_set(b"one", b"three").await.unwrap();
        assert!(!refused.succeeded, "our stale compare-and-set is refused");
        assert_eq!(refused.pre_value, b"two");
        assert_eq!(fw.get_data(&path).await.unwrap().0, b"two");

        // ours swaps two -> four; Curator, expecting two, is refused
        let ok = ours.compare_and_set(b"two", b"four").await.unwrap();
        assert!(ok.succeeded && ok.pre_value == b"two" && ok.post_value == b"four");
        let refused = peer.call(&format!("atomicvalue.cas {cid} {path} {two} {three}")).await.unwrap();
        assert!(refused.starts_with("false "), "Curator's stale compare-and-set is refused: {refused}");
        assert_eq!(java(&["atomicvalue.get"]).await, format!("true {four} {four}"));

        // unconditional writes read back on the other side
        peer.call(&format!("atomicvalue.tryset {cid} {path} {three}")).await.unwrap();
        assert_eq!(ours.get().await.unwrap(), b"three");
        ours.force_set(&[0, 1, 2]).await.unwrap();
        assert_eq!(java(&["atomicvalue.get"]).await, "true 000102 000102");

        ours.close().await.unwrap();
        peer.close(&cid).await.unwrap();
    })
    .await;
}
