//! The rest of ZooKeeper's API through the framework, each call under a namespace with digest
//! auth and a creator-only ACL: multi_read, sync, ACLs, TTL nodes, ephemerals, descendant
//! counts, whoami, one-shot watches; ServerUnsupported on a server made to look older.

use assert_matches::assert_matches;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use zk_recipes::cache::{ResetReason, WatchEvent};
use zk_recipes::ops::{ReadOp, ReadResult};

use zk_recipes::CreateMode;
use zk_recipes::{Acl, Permissions};
use zk_recipes::{Error, Framework};
use zk_recipes_testing::{fixtures, refusing, RefusingProxy};

const WAIT: Duration = Duration::from_secs(10);

async fn owner(cs: &str, namespace: &str) -> Framework {
    Framework::builder()
        .connect_string(cs)
        .namespace(namespace)
        .auth("digest", "api:s3cret")
        .default_acl(Acl::creator_all())
        .connect()
        .await
        .unwrap()
}

#[tokio::test]
async fn reads_acls_ephemerals_and_whoami_under_a_namespace() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("api");
    let fw = owner(&cs, &ns).await;
    fw.create("/a/x", b"1", CreateMode::Persistent).await.unwrap();
    fw.create("/a/y/z", b"2", CreateMode::Persistent).await.unwrap();
    fw.create("/a/e1", b"", CreateMode::Ephemeral).await.unwrap();
    fw.create("/a/y/e2", b"", CreateMode::Ephemeral).await.unwrap();

    let answers =
        fw.multi_read(&[ReadOp::Data("/a/x"), ReadOp::Children("/a"), ReadOp::Data("/a/none")]).await.unwrap();
    assert!(matches!(&answers[0], ReadResult::Data(d, s) if d == b"1" && s.version == 0), "{answers:?}");
    let ReadResult::Children(mut names) = answers[1].clone() else { panic!("{answers:?}") };
    names.sort();
    assert_eq!(names, ["e1", "x", "y"]);
    assert_eq!(answers[2], ReadResult::Failed(ZooKeeperError::NoNode));

    fw.sync("/a").await.unwrap();
    assert_eq!(fw.descendants_count("/a").await.unwrap(), 5);
    let mut ephemerals = fw.ephemerals("/a").await.unwrap();
    ephemerals.sort();
    assert_eq!(ephemerals, ["/a/e1", "/a/y/e2"], "namespace-relative");

    let me = fw.whoami().await.unwrap();
    assert!(me.iter().any(|u| u.scheme() == "digest" && u.user() == "api"), "{me:?}");

    // creator-only: a stranger cannot read; after set_acl anyone may
    let stranger = fixtures::framework(&cs).await;
    let full = format!("/{ns}/a/x");
    assert_matches!(stranger.get_data(&full).await.unwrap_err(), Error::ZooKeeper(ZooKeeperError::NoAuth));
    let (acl, stat) = fw.get_acl("/a/x").await.unwrap();
    assert_eq!(acl.len(), 1);
    assert_eq!(acl[0].scheme(), "digest");
    assert_eq!(acl[0].permissions(), Permissions::ALL);
    let mut opened: Vec<Acl> = acl.clone();
    opened.extend(Acl::anyone_read());
    fw.set_acl("/a/x", &opened, Some(stat.aversion)).await.unwrap();
    assert_eq!(stranger.get_data(&full).await.unwrap().0, b"1");
    assert_matches!(
        fw.set_acl("/a/x", &opened, Some(stat.aversion)).await.unwrap_err(),
        Error::ZooKeeper(ZooKeeperError::BadVersion),
        "the ACL version moved"
    );
}

#[tokio::test]
async fn one_shot_watches_fire_once_and_can_be_removed() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("api-watch");
    let fw = owner(&cs, &ns).await;
    fw.create("/w", b"0", CreateMode::Persistent).await.unwrap();

    let (data, _, watch) = fw.watch_data("/w").await.unwrap();
    assert_eq!(data, b"0");
    fw.set_data("/w", b"1", None).await.unwrap();
    let event = tokio::time::timeout(WAIT, watch.changed()).await.unwrap();
    assert_matches!(event, WatchEvent::DataChanged { path, .. } if path == "/w");

    let (stat, watch) = fw.watch_exists("/w/c").await.unwrap();
    assert_eq!(stat, None);
    let (children, child_watch) = fw.watch_children("/w").await.unwrap();
    assert!(children.is_empty());
    fw.create("/w/c", b"", CreateMode::Persistent).await.unwrap();
    let event = tokio::time::timeout(WAIT, watch.changed()).await.unwrap();
    assert_matches!(event, WatchEvent::Created { path, .. } if path == "/w/c");
    let event = tokio::time::timeout(WAIT, child_watch.changed()).await.unwrap();
    assert_matches!(event, WatchEvent::ChildrenChanged { path, .. } if path == "/w");

    // removed: the server no longer holds it
    let full = format!("/{ns}/w/c");
    let (_, _, watch) = fw.watch_data("/w/c").await.unwrap();
    let held = || async { zk_recipes_testing::four_letter_word(&cs, "wchp").await.unwrap().lines().any(|l| l == full) };
    assert!(held().await);
    watch.remove();
    fixtures::eventually(WAIT, "the watch is removed from the server", || async { !held().await }).await;
    assert!(matches!(fw.watch_data("/none").await, Err(Error::ZooKeeper(ZooKeeperError::NoNode))));
}

/// A one-shot watch whose session ends fires once with `Reset(SessionEnded)`, not a node event;
/// a watch set again on the framework's next session fires for the next change.
#[tokio::test]
async fn a_one_shot_watch_reports_the_end_of_its_session() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("api-watch-end");
    let fw = owner(&cs, &ns).await;
    fw.create("/w", b"0", CreateMode::Persistent).await.unwrap();
    let (_, _, watch) = fw.watch_data("/w").await.unwrap();
    zk_recipes_testing::expire_session(&fw).await.unwrap();
    let event = tokio::time::timeout(WAIT, watch.changed()).await.unwrap();
    assert_eq!(event, WatchEvent::Reset(ResetReason::SessionEnded));
    let (_, _, watch) = fw.watch_data("/w").await.unwrap();
    fw.set_data("/w", b"1", None).await.unwrap();
    let event = tokio::time::timeout(WAIT, watch.changed()).await.unwrap();
    assert_matches!(event, WatchEvent::DataChanged { path, .. } if path == "/w");
}

#[tokio::test]
async fn ttl_nodes_are_kept_by_touches_and_reaped_after() {
    let cs = fixtures::shared_ttl_server().await;
    let fw = owner(&cs, &fixtures::unique("ttl")).await;
    let ttl = Duration::from_millis(600);
    let created = fw.create_with_ttl("/t/n", b"keep", CreateMode::Persistent, ttl).await.unwrap();
    assert_eq!(created.path, "/t/n");
    // touched every third of the TTL for four TTLs: kept, data unchanged, version moving
    let mut version = created.stat.version;
    for _ in 0..12 {
        tokio::time::sleep(ttl / 3).await;
        let stat = fw.touch("/t/n").await.unwrap();
        assert!(stat.version > version, "a touch is a write");
        version = stat.version;
    }
    assert_eq!(fw.get_data("/t/n").await.unwrap().0, b"keep", "a touch keeps the data");
    fixtures::eventually(WAIT, "the TTL node is reaped", || async { fw.exists("/t/n").await.unwrap().is_none() }).await;
    assert!(matches!(fw.touch("/t/n").await, Err(Error::ZooKeeper(ZooKeeperError::NoNode))));
    assert!(matches!(fw.touch("t/n").await, Err(Error::InvalidPath { .. })));
}

#[tokio::test]
async fn bad_input_and_older_servers_are_typed_errors() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    assert!(matches!(fw.multi_read(&[]).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(fw.multi_read(&[ReadOp::Data("x")]).await, Err(Error::InvalidPath { .. })));
    assert!(matches!(fw.set_acl("/", &[], None).await, Err(Error::InvalidArgument { .. })));
    let path = format!("/{}", fixtures::unique("api-ttl"));
    for (mode, ttl) in [
        (CreateMode::Persistent, Duration::ZERO),
        (CreateMode::Persistent, Duration::from_millis(1 << 41)),
        (CreateMode::Ephemeral, Duration::from_secs(1)),
    ] {
        let refused = fw.create_with_ttl(&path, b"", mode, ttl).await;
        assert!(matches!(refused, Err(Error::InvalidArgument { .. })), "{mode:?} {ttl:?}: {refused:?}");
    }
    // the shared server has TTL nodes off
    let refused = fw.create_with_ttl(&path, b"", CreateMode::Persistent, Duration::from_secs(1)).await;
    assert!(matches!(refused, Err(Error::ServerUnsupported(zk_recipes::ServerFeature::TtlNodes))), "{refused:?}");
    assert_eq!(fw.exists(&path).await.unwrap(), None);

    let old =
        RefusingProxy::start(&cs, &[refusing::ADD_WATCH, refusing::MULTI_READ, refusing::WHO_AM_I]).await.unwrap();
    let fw = fixtures::framework(old.connect_string()).await;
    assert!(matches!(
        fw.multi_read(&[ReadOp::Data("/")]).await,
        Err(Error::ServerUnsupported(zk_recipes::ServerFeature::MultiRead))
    ));
    assert!(matches!(
        fw.ephemerals("/").await,
        Err(Error::ServerUnsupported(zk_recipes::ServerFeature::GetEphemerals))
    ));
    assert!(matches!(
        fw.descendants_count("/").await,
        Err(Error::ServerUnsupported(zk_recipes::ServerFeature::GetAllChildrenNumber))
    ));
    assert!(matches!(fw.whoami().await, Err(Error::ServerUnsupported(zk_recipes::ServerFeature::WhoAmI))));
    fw.sync("/").await.unwrap();
}
