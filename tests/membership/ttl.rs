//! TTL nodes on a server that allows them (its own, shared by these tests): a
//! `PersistentTtlNode` stays while its owner runs and is reaped after it stops (closed or
//! dropped); a `PersistentNode` in the TTL mode is reaped when idle and created again; a server
//! without TTL support gives `ServerUnsupported(TtlNodes)` and nothing is left behind.

use std::time::Duration;

use zk_recipes::{Error, LossReason, NodeMode, NodeStatus, PersistentTtlNode};
use zk_recipes_testing::fixtures::{self, eventually};

use crate::support::*;

#[tokio::test]
async fn a_ttl_node_stays_while_its_owner_runs_and_goes_after() {
    let cs = fixtures::shared_ttl_server().await;
    let fw = fixtures::framework_with(&cs, |b| b.default_data(b"10.0.0.7".to_vec())).await;
    let observer = fixtures::framework(&cs).await;
    let root = unique_root();
    // 2 s, touched every 1 s: a touch late by up to a second (a loaded 2-core CI machine) must
    // not let the server reap a node whose owner runs (with 1 s the margin was half a second)
    let ttl = Duration::from_secs(2);
    let closed = PersistentTtlNode::new(&fw, &format!("{root}/closed"), ttl, "c").unwrap();
    let dropped = PersistentTtlNode::new(&fw, &format!("{root}/dropped"), ttl, "d").unwrap();
    for node in [&closed, &dropped] {
        node.start().await.unwrap();
        assert_eq!(node.wait_for_initial_create(LIVENESS).await.unwrap(), node.path());
    }
    // Curator's layout: the data on the node, the touch child holds the default data
    eventually(LIVENESS, "the node's data", || async {
        observer.get_data(closed.path()).await.is_ok_and(|(d, _)| d == b"c")
    })
    .await;
    let touch = observer.get_data(&format!("{}/touch", closed.path())).await.unwrap();
    assert_eq!(touch.0, b"10.0.0.7");
    // kept while the owner runs: three TTLs, looked at every 50 ms
    let until = tokio::time::Instant::now() + ttl * 3;
    while tokio::time::Instant::now() < until {
        for node in [&closed, &dropped] {
            assert!(observer.exists(node.path()).await.unwrap().is_some(), "{} kept", node.path());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let touched = observer.exists(&format!("{}/touch", closed.path())).await.unwrap().unwrap();
    assert!(touched.version >= 4, "touched every TTL / 2: version {}", touched.version);
    // the owner stops: closing does not delete (Curator's rule), the server reaps it
    let (closed_path, dropped_path) = (closed.path().to_string(), dropped.path().to_string());
    closed.close().await.unwrap();
    drop(dropped);
    let stopped = tokio::time::Instant::now();
    assert!(observer.exists(&closed_path).await.unwrap().is_some(), "not deleted by close");
    eventually(LIVENESS, "both reaped after their owners stopped", || async {
        observer.exists(&closed_path).await.unwrap().is_none()
            && observer.exists(&dropped_path).await.unwrap().is_none()
    })
    .await;
    eprintln!("TTL nodes reaped {:?} after their owners stopped (TTL {ttl:?})", stopped.elapsed());
}

#[tokio::test]
async fn an_idle_node_in_the_ttl_mode_is_reaped_then_created_again() {
    let cs = fixtures::shared_ttl_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("{}/ttl", unique_root());
    let node = started(&fw, &path, NodeMode::PersistentWithTtl(Duration::from_millis(300)), b"t").await;
    let mut events = Events::of(&node);
    let (_, first) = events.until_there().await;
    events.until(|s| *s == NodeStatus::Lost { reason: LossReason::NodeDeleted }).await;
    let (_, again) = events.until_there().await;
    assert!(again > first);
    node.close().await.unwrap();
    assert_eq!(fw.exists(&path).await.unwrap(), None);
}

#[tokio::test]
async fn ttl_bad_input_and_no_server_support() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = unique_root();
    for ttl in [Duration::ZERO, Duration::from_micros(10), Duration::from_secs(1 << 40)] {
        let err = PersistentTtlNode::new(&fw, &format!("{root}/t"), ttl, "").unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    }
    assert!(matches!(PersistentTtlNode::new(&fw, "/", Duration::from_secs(1), ""), Err(Error::InvalidPath { .. })));
    // the shared server runs without extended types
    let node = PersistentTtlNode::new(&fw, &format!("{root}/a/ttl"), Duration::from_secs(1), "").unwrap();
    assert!(matches!(node.wait_for_initial_create(LIVENESS).await, Err(Error::InvalidState(_))), "not started");
    node.start().await.unwrap();
    let err = node.wait_for_initial_create(LIVENESS).await.unwrap_err();
    assert!(matches!(err, Error::ServerUnsupported(zk_recipes::ServerFeature::TtlNodes)), "{err:?}");
    assert!(matches!(node.status(), NodeStatus::Failed(Error::ServerUnsupported(zk_recipes::ServerFeature::TtlNodes))));
    node.close().await.unwrap();
    assert_eq!(fw.exists(&root).await.unwrap(), None, "nothing left behind");
}
