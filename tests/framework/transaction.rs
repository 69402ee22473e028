//! `Framework::transaction()` against a real server: results per operation, all or nothing,
//! under a namespace with a creator-only ACL, typed errors, and exactly once when the reply
//! of the commit is lost.

use assert_matches::assert_matches;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use zk_recipes::ops::TxnResult;
use zk_recipes::Acl;
use zk_recipes::CreateMode;
use zk_recipes::{Error, Framework};
use zk_recipes_testing::{fixtures, ProxyMode, TcpProxy, TestingServer};

async fn owner(cs: &str, namespace: &str) -> Framework {
    fixtures::framework_with(cs, |b| {
        b.namespace(namespace).auth("digest", "txn:s3cret").default_acl(Acl::creator_all())
    })
    .await
}

/// No transaction marker left under the namespace (they are deleted in the background).
async fn no_marker_left(fw: &Framework) {
    fixtures::eventually(fixtures::SETTLE_TIMEOUT, "the markers are deleted", || async {
        fw.children("/zk-recipes-txn").await.map(|c| c.is_empty()).unwrap_or(true)
    })
    .await;
}

#[tokio::test]
async fn operations_apply_together_under_the_namespace_and_acl() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("txn");
    let fw = owner(&cs, &ns).await;
    fw.create("/acct/a", b"100", CreateMode::Persistent).await.unwrap();
    fw.create("/acct/gone", b"", CreateMode::Persistent).await.unwrap();
    let (_, a) = fw.get_data("/acct/a").await.unwrap();
    let results = fw
        .transaction()
        .check("/acct", 0)
        .set_data("/acct/a", b"90", Some(a.version))
        .create("/acct/b", b"10", CreateMode::Persistent)
        .create("/acct/log-", b"a->b", CreateMode::PersistentSequential)
        .delete("/acct/gone", None)
        .commit()
        .await
        .unwrap();
    assert_eq!(results.len(), 5);
    assert_eq!(results[0], TxnResult::Check);
    assert!(matches!(&results[1], TxnResult::SetData { stat: Some(s) } if s.version == a.version + 1));
    assert!(matches!(&results[2], TxnResult::Create { path, stat: Some(_) } if path == "/acct/b"));
    let TxnResult::Create { path: log, .. } = &results[3] else { panic!("{results:?}") };
    assert!(log.starts_with("/acct/log-") && log.len() == "/acct/log-".len() + 10, "{log}");
    assert_eq!(results[4], TxnResult::Delete);
    assert_eq!(fw.get_data("/acct/a").await.unwrap().0, b"90");
    assert_eq!(fw.get_data("/acct/b").await.unwrap().0, b"10");
    assert_eq!(fw.exists("/acct/gone").await.unwrap(), None);
    // under the namespace, with our ACL: a stranger sees the nodes and cannot write them
    let stranger = fixtures::framework(&cs).await;
    assert_matches!(
        stranger.get_data(&format!("/{ns}/acct/b")).await.unwrap_err(),
        Error::ZooKeeper(ZooKeeperError::NoAuth)
    );
    let theirs = stranger.transaction().set_data(&format!("/{ns}/acct/a"), b"0", None).commit().await;
    assert!(matches!(theirs, Err(Error::Transaction { index: 0, source: ZooKeeperError::NoAuth, .. })), "{theirs:?}");
    no_marker_left(&fw).await;
}

#[tokio::test]
async fn a_refused_operation_applies_nothing() {
    let cs = fixtures::shared_server().await;
    let fw = owner(&cs, &fixtures::unique("txn")).await;
    fw.create("/v", b"1", CreateMode::Persistent).await.unwrap();
    let refused = fw
        .transaction()
        .create("/created-first", b"", CreateMode::Persistent)
        .set_data("/v", b"2", Some(7))
        .commit()
        .await;
    assert!(
        matches!(&refused, Err(Error::Transaction { index: 1, path, source: ZooKeeperError::BadVersion, .. }) if path == "/v"),
        "{refused:?}"
    );
    assert_eq!(fw.exists("/created-first").await.unwrap(), None, "all or nothing");
    assert_eq!(fw.get_data("/v").await.unwrap().0, b"1");
    let missing = fw.transaction().check("/nowhere", 0).commit().await;
    assert!(matches!(missing, Err(Error::Transaction { index: 0, source: ZooKeeperError::NoNode, .. })), "{missing:?}");
    no_marker_left(&fw).await;
}

#[tokio::test]
async fn bad_input_is_a_typed_error_and_sends_nothing() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    assert!(matches!(fw.transaction().commit().await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(
        fw.transaction().create("relative", b"", CreateMode::Persistent).commit().await,
        Err(Error::InvalidPath { .. })
    ));
    let root = format!("/{}", fixtures::unique("txn-ttl"));
    for (mode, ttl) in [(CreateMode::Persistent, Duration::ZERO), (CreateMode::Ephemeral, Duration::from_secs(5))] {
        let refused = fw.transaction().create_with_ttl(&root, b"", mode, ttl).commit().await;
        assert!(matches!(refused, Err(Error::InvalidArgument { .. })), "{mode:?} {ttl:?}: {refused:?}");
    }
    // the shared server runs without extended types
    let refused =
        fw.transaction().create_with_ttl(&root, b"", CreateMode::Persistent, Duration::from_secs(5)).commit().await;
    assert!(matches!(refused, Err(Error::ServerUnsupported(zk_recipes::ServerFeature::TtlNodes))), "{refused:?}");
    assert_eq!(fw.exists(&root).await.unwrap(), None);
}

#[tokio::test]
async fn ttl_nodes_where_the_server_has_them() {
    let server = TestingServer::builder().config("extendedTypesEnabled", "true").start().await.unwrap();
    let fw = fixtures::framework(server.connect_string()).await;
    let results = fw
        .transaction()
        .create_with_ttl("/ttl", b"t", CreateMode::Persistent, Duration::from_secs(60))
        .commit()
        .await
        .unwrap();
    assert!(matches!(&results[0], TxnResult::Create { path, .. } if path == "/ttl"));
    assert_eq!(fw.get_data("/ttl").await.unwrap().0, b"t");
}

/// The commit reaches the server and is applied; its reply is dropped by the proxy; the
/// client reconnects and must report it applied, with the sequential node it created, and
/// not apply it again.
#[tokio::test]
async fn a_commit_whose_reply_is_lost_is_applied_once() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let ns = fixtures::unique("txn-lost");
    let fw = owner(proxy.connect_string(), &ns).await;
    let direct = owner(&cs, &ns).await;
    fw.create("/v", b"0", CreateMode::Persistent).await.unwrap();
    fw.create("/log", b"", CreateMode::Persistent).await.unwrap();
    // a first transaction makes the markers' parent: each commit below is one request
    fw.transaction().check("/v", 0).commit().await.unwrap();
    for round in 1..=4 {
        let version = fw.exists("/v").await.unwrap().unwrap().version;
        proxy.set_mode(ProxyMode::DropReplies);
        let pending = tokio::spawn({
            let fw = fw.clone();
            async move {
                fw.transaction()
                    .set_data("/v", round.to_string().as_bytes(), Some(version))
                    .create("/log/entry-", b"", CreateMode::PersistentSequential)
                    .commit()
                    .await
            }
        });
        fixtures::eventually(Duration::from_secs(10), "the commit reached the server", || async {
            direct.get_data("/v").await.unwrap().0 == round.to_string().as_bytes()
        })
        .await;
        proxy.set_mode(ProxyMode::Pass);
        proxy.cut();
        let results = pending.await.unwrap().unwrap_or_else(|e| panic!("round {round}: {e}"));
        let entries = direct.children("/log").await.unwrap();
        assert_eq!(entries.len(), round, "round {round}: one entry per commit, none twice: {entries:?}");
        let (_, stat) = direct.get_data("/v").await.unwrap();
        assert_eq!(stat.version, version + 1, "round {round}: set once");
        let TxnResult::Create { path, stat: Some(_) } = &results[1] else { panic!("round {round}: {results:?}") };
        assert!(entries.iter().any(|e| format!("/log/{e}") == *path), "round {round}: the created entry is named");
    }
    no_marker_left(&direct).await;
}

/// The stat of the markers' parent `root` once no marker is left under it.
async fn settled_root(fw: &Framework, root: &str) -> zk_recipes::Stat {
    fixtures::eventually(fixtures::SETTLE_TIMEOUT, "the markers are deleted", || async {
        fw.exists(root).await.unwrap().is_some_and(|s| s.num_children == 0)
    })
    .await;
    fw.exists(root).await.unwrap().expect("the markers' parent")
}

#[tokio::test]
async fn markers_go_under_the_configured_root() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("txn-root");
    let fw = fixtures::framework_with(&cs, |b| b.namespace(&ns).transaction_marker_root("/internal/txn")).await;
    fw.create("/v", b"0", CreateMode::Persistent).await.unwrap();
    fw.transaction().set_data("/v", b"1", Some(0)).commit().await.unwrap();
    // one marker was created under the configured root and deleted again: 2 child changes
    let before = settled_root(&fw, "/internal/txn").await;
    assert!(before.cversion >= 2, "{before:?}");
    assert_eq!(before.ephemeral_owner, 0, "the root is persistent");
    fw.transaction().set_data("/v", b"2", Some(1)).commit().await.unwrap();
    assert_eq!(settled_root(&fw, "/internal/txn").await.cversion, before.cversion + 2, "one marker per commit");
    assert_eq!(fw.exists("/zk-recipes-txn").await.unwrap(), None, "nothing at the default root");
    // under the namespace, not at the server's root
    let plain = fixtures::framework(&cs).await;
    assert!(plain.exists(&format!("/{ns}/internal/txn")).await.unwrap().is_some());
}

#[tokio::test]
async fn a_commit_without_marker_writes_none() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("txn-nomark");
    let fw = fixtures::framework_with(&cs, |b| b.namespace(&ns)).await;
    fw.create("/v", b"0", CreateMode::Persistent).await.unwrap();
    let results = fw.transaction().set_data("/v", b"1", Some(0)).without_marker().commit().await.unwrap();
    assert!(matches!(&results[0], TxnResult::SetData { stat: Some(s) } if s.version == 1), "{results:?}");
    assert_eq!(fw.exists("/zk-recipes-txn").await.unwrap(), None, "no marker, not even its parent");
    // with markers in use, an unmarked commit leaves the markers' parent untouched
    fw.transaction().check("/v", 1).commit().await.unwrap();
    let before = settled_root(&fw, "/zk-recipes-txn").await;
    let refused = fw.transaction().set_data("/v", b"x", Some(0)).without_marker().commit().await;
    assert!(
        matches!(refused, Err(Error::Transaction { index: 0, source: ZooKeeperError::BadVersion, .. })),
        "{refused:?}"
    );
    fw.transaction().set_data("/v", b"2", Some(1)).without_marker().commit().await.unwrap();
    assert_eq!(fw.exists("/zk-recipes-txn").await.unwrap().unwrap().cversion, before.cversion, "no marker written");
    assert_eq!(fw.get_data("/v").await.unwrap().0, b"2");
}

#[tokio::test]
async fn a_bad_marker_root_is_refused_before_connecting() {
    for root in ["relative", "/", "/trailing/", ""] {
        let built = Framework::builder()
            .connect_string("127.0.0.1:1")
            .connection_timeout(Duration::from_secs(30))
            .transaction_marker_root(root)
            .connect();
        let refused = tokio::time::timeout(Duration::from_secs(5), built).await.expect("refused at once");
        assert!(matches!(refused, Err(Error::InvalidPath { .. })), "{root:?}: {refused:?}");
    }
}

/// Without a marker the commit is sent at most once: its reply lost, it answers
/// `OutcomeUnknown` (here it was applied: once, not again).
#[tokio::test]
async fn an_unmarked_commit_whose_reply_is_lost_is_unknown_and_not_sent_again() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let ns = fixtures::unique("txn-lost-nomark");
    let fw = owner(proxy.connect_string(), &ns).await;
    let direct = owner(&cs, &ns).await;
    fw.create("/v", b"0", CreateMode::Persistent).await.unwrap();
    fw.create("/log", b"", CreateMode::Persistent).await.unwrap();
    proxy.set_mode(ProxyMode::DropReplies);
    let pending = tokio::spawn({
        let fw = fw.clone();
        async move {
            fw.transaction()
                .set_data("/v", b"1", Some(0))
                .create("/log/entry-", b"", CreateMode::PersistentSequential)
                .without_marker()
                .commit()
                .await
        }
    });
    fixtures::eventually(Duration::from_secs(10), "the commit reached the server", || async {
        direct.get_data("/v").await.unwrap().0 == b"1"
    })
    .await;
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    let outcome = fixtures::within(Duration::from_secs(20), pending).await.unwrap();
    assert_matches!(outcome, Err(Error::OutcomeUnknown { path, .. }) if path == "/v");
    // give a resend the time to arrive: there is none
    fw.sync("/log").await.unwrap();
    assert_eq!(direct.children("/log").await.unwrap().len(), 1, "applied once");
    assert_eq!(direct.exists("/zk-recipes-txn").await.unwrap(), None);
}
