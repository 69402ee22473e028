//! Registrations against real ZooKeeper: `PersistentNode` in every mode (created, re-created
//! after a delete, data written while disconnected, conflicts with another session, close,
//! no task left), a node of our dead session replaced (never adopted), bad input; fault tests
//! on their own servers (`faults.rs`): a cut connection, an expired session, a restarted
//! server, a killed ensemble leader.

mod discovery;
mod discovery_paths;
mod faults;
mod group;
mod support;
mod ttl;

use assert_matches::assert_matches;
use std::time::Duration;

use support::*;

use zk_recipes::CreateMode;
use zk_recipes::{Error, LossReason, NodeMode, NodeStatus, PersistentNode};
use zk_recipes_testing::fixtures::{self, eventually};
use zk_recipes_testing::{ProxyMode, TcpProxy};

#[tokio::test]
async fn every_mode_creates_its_kind_of_node() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = unique_root();
    let eph = started(&fw, &format!("{root}/eph"), NodeMode::Ephemeral, b"e").await;
    let per = started(&fw, &format!("{root}/per"), NodeMode::Persistent, b"p").await;
    let con = started(&fw, &format!("{root}/con"), NodeMode::Container, b"c").await;
    let pro = started(&fw, &format!("{root}/dir/member-"), NodeMode::ProtectedEphemeralSequential, b"s").await;
    let session = fw.status().session_id;
    let stat = |p: String| {
        let fw = fw.clone();
        async move { fw.get_data(&p).await.unwrap() }
    };
    let (data, s) = stat(format!("{root}/eph")).await;
    assert_eq!((data.as_slice(), s.ephemeral_owner), (&b"e"[..], session));
    let (data, s) = stat(format!("{root}/per")).await;
    assert_eq!((data.as_slice(), s.ephemeral_owner), (&b"p"[..], 0));
    let (data, s) = stat(format!("{root}/con")).await;
    assert_eq!((data.as_slice(), s.ephemeral_owner), (&b"c"[..], 0));
    // a container: reaped once its last child is gone, then created again
    let mut events = Events::of(&con);
    fw.create(&format!("{root}/con/child"), b"", CreateMode::Persistent).await.unwrap();
    fw.delete(&format!("{root}/con/child")).await.unwrap();
    events.until(|s| *s == NodeStatus::Lost { reason: LossReason::NodeDeleted }).await;
    let (_, czxid) = events.until_there().await;
    assert!(czxid > s.czxid);
    // the protected node: <parent>/_c_<uuid>-member-<10 digits>, ephemeral of our session
    let path = pro.actual_path().unwrap();
    let name = path.rsplit('/').next().unwrap();
    assert!(path.starts_with(&format!("{root}/dir/_c_")), "{path}");
    assert_eq!(name.len(), 40 + "member-".len() + 10, "{name}");
    assert_eq!(&name[39..47], "-member-");
    assert!(name[47..].chars().all(|c| c.is_ascii_digit()));
    let (data, s) = stat(path.clone()).await;
    assert_eq!((data.as_slice(), s.ephemeral_owner), (&b"s"[..], session));
    for node in [&eph, &per, &pro] {
        assert!(matches!(node.status(), NodeStatus::Created { .. }), "{:?}", node.status());
    }
    for node in [&eph, &per, &con, &pro] {
        node.close().await.unwrap();
        assert_eq!(node.status(), NodeStatus::Closed);
    }
    for p in ["eph", "per", "con"] {
        assert_eq!(fw.exists(&format!("{root}/{p}")).await.unwrap(), None, "{p} deleted on close");
    }
    assert_eq!(fw.exists(&path).await.unwrap(), None);
}

#[tokio::test]
async fn deleted_by_someone_it_comes_back_at_once() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let root = unique_root();
    for mode in [NodeMode::Ephemeral, NodeMode::Persistent, NodeMode::ProtectedEphemeralSequential] {
        let node = started(&fw, &format!("{root}/{mode:?}"), mode, b"x").await;
        let mut events = Events::of(&node);
        let (first, czxid) = events.until_there().await;
        // at one path there is one node at most; protected nodes are counted by their prefix
        let sampler = (mode == NodeMode::ProtectedEphemeralSequential)
            .then(|| Sampler::start(&other, &root, &protection_prefix(&first)));
        for round in 0..3 {
            let (path, _) = node.status().node().map(|(p, c)| (p.to_string(), c)).unwrap();
            other.delete(&path).await.unwrap();
            let lost = events.until(|s| matches!(s, NodeStatus::Lost { .. })).await;
            assert_eq!(lost, NodeStatus::Lost { reason: LossReason::NodeDeleted }, "{mode:?} round {round}");
            let (again, new_czxid) = events.until_there().await;
            assert!(matches!(events.seen.last(), Some(NodeStatus::Recreated { .. })));
            assert!(new_czxid > czxid, "a new node");
            if mode == NodeMode::ProtectedEphemeralSequential {
                assert_ne!(again, first, "a new sequence number");
                assert_eq!(protection_prefix(&again), protection_prefix(&first), "the same protection prefix");
            } else {
                assert_eq!(again, first);
            }
            let (data, _) = other.get_data(&again).await.unwrap();
            assert_eq!(data, b"x");
            exactly_one_ours(&other, &fw, &node).await;
        }
        if let Some(sampler) = sampler {
            sampler.never_two().await;
        }
        node.close().await.unwrap();
    }
}

#[tokio::test]
async fn set_data_while_disconnected_is_written_on_reconnect_last_write_wins() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let observer = fixtures::framework(&cs).await;
    let root = unique_root();
    let eph = started(&fw, &format!("{root}/eph"), NodeMode::Ephemeral, b"v0").await;
    let pro = started(&fw, &format!("{root}/p-"), NodeMode::ProtectedEphemeralSequential, b"v0").await;
    // connected: written at once
    eph.set_data("v1").unwrap();
    eventually(LIVENESS, "v1 written", || async {
        observer.get_data(&format!("{root}/eph")).await.unwrap().0 == b"v1"
    })
    .await;
    proxy.set_mode(ProxyMode::Blackhole);
    for node in [&eph, &pro] {
        for v in ["v2", "v3", "v4"] {
            node.set_data(v).unwrap();
        }
        assert_eq!(node.data(), b"v4");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(observer.get_data(&format!("{root}/eph")).await.unwrap().0, b"v1", "not written while cut off");
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    for node in [&eph, &pro] {
        eventually(LIVENESS, "the last data written", || async {
            let Some(path) = node.actual_path() else { return false };
            observer.get_data(&path).await.is_ok_and(|(d, _)| d == b"v4")
        })
        .await;
        exactly_one_ours(&observer, &fw, node).await;
    }
    assert_eq!(fw.status().losses, 0, "one session all along");
    eph.close().await.unwrap();
    pro.close().await.unwrap();
}

#[tokio::test]
async fn another_sessions_node_is_a_conflict_never_taken() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let path = format!("{}/taken", unique_root());
    other.create(&path, b"theirs", CreateMode::Ephemeral).await.unwrap();
    let theirs = other.status().session_id;
    let node = PersistentNode::new(&fw, &path, NodeMode::Ephemeral, "ours").unwrap();
    node.start().await.unwrap();
    let err = node.wait_for_initial_create(LIVENESS).await.unwrap_err();
    assert_matches!(err, Error::NodeHeldByOther { path: p, owner, .. } if p == path && owner == theirs);
    assert_eq!(node.status(), NodeStatus::Conflict { path: path.clone(), owner: theirs });
    let mut status = node.watch();
    assert_eq!(*status.borrow_and_update(), node.status(), "the receiver holds the current status");
    let (data, stat) = fw.get_data(&path).await.unwrap();
    assert_eq!((data.as_slice(), stat.ephemeral_owner), (&b"theirs"[..], theirs), "not taken over");
    // the other session goes: ours follows, through the watch
    let mut events = Events::of(&node);
    other.close();
    events.until(|s| matches!(s, NodeStatus::Created { .. })).await;
    fixtures::within(LIVENESS, status.wait_for(|s| matches!(s, NodeStatus::Created { .. }))).await.unwrap();
    exactly_one_ours(&fw, &fw, &node).await;
    assert_eq!(fw.get_data(&path).await.unwrap().0, b"ours");
    node.close().await.unwrap();
    // a persistent node is not ours to take while an ephemeral one is there either
    let holder = fixtures::framework(&cs).await;
    holder.create(&path, b"", CreateMode::Ephemeral).await.unwrap();
    let node = PersistentNode::new(&fw, &path, NodeMode::Persistent, "").unwrap();
    node.start().await.unwrap();
    assert!(matches!(node.wait_for_initial_create(LIVENESS).await, Err(Error::NodeHeldByOther { .. })));
    drop(node);
    holder.close();
}

/// Our session is lost while a partition hides it from us, and the server still has it (an
/// impostor with its id and password keeps it alive there): our new session finds our old
/// ephemeral nodes. They are replaced — deleted and created again — never adopted, never a
/// `NodeExists`.
#[tokio::test]
async fn a_node_of_our_dead_session_is_replaced_not_adopted() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let observer = fixtures::framework(&cs).await;
    let root = unique_root();
    let eph = started(&fw, &format!("{root}/eph"), NodeMode::Ephemeral, b"e").await;
    let pro = started(&fw, &format!("{root}/p-"), NodeMode::ProtectedEphemeralSequential, b"p").await;
    let mut eph_events = Events::of(&eph);
    let mut pro_events = Events::of(&pro);
    let old_session = fw.status().session_id;
    let old_pro = pro.actual_path().unwrap();
    proxy.set_mode(ProxyMode::Blackhole);
    let cut_at = tokio::time::Instant::now();
    let impostor = zk_recipes::zk::Client::connector()
        .with_session(fw.session_info().unwrap())
        .with_session_timeout(fixtures::SESSION_TIMEOUT)
        .connect(&cs)
        .await
        .unwrap();
    eventually(LIVENESS, "our framework gives the session up", || async { fw.status().losses >= 1 }).await;
    // Our old client stops trying to get its session back 1.4 session timeouts after it last
    // heard from the server (zookeeper-client's rule); only then may the partition heal, or it
    // would take the session back and close it, removing the nodes by itself.
    tokio::time::sleep_until(cut_at + fixtures::SESSION_TIMEOUT * 2).await;
    assert!(observer.exists(&format!("{root}/eph")).await.unwrap().is_some_and(|s| s.ephemeral_owner == old_session));
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    for (events, old) in [(&mut eph_events, format!("{root}/eph")), (&mut pro_events, old_pro.clone())] {
        let stale = events.until(|s| matches!(s, NodeStatus::StaleReplaced { .. })).await;
        assert_eq!(stale, NodeStatus::StaleReplaced { path: old, owner: old_session });
        events.until(|s| matches!(s, NodeStatus::Recreated { .. })).await;
        assert!(!events.seen.iter().any(|s| matches!(s, NodeStatus::Conflict { .. } | NodeStatus::Failed(_))));
    }
    let new_session = fw.status().session_id;
    assert_ne!(new_session, old_session);
    exactly_one_ours(&observer, &fw, &eph).await;
    exactly_one_ours(&observer, &fw, &pro).await;
    assert_ne!(pro.actual_path().unwrap(), old_pro);
    drop(impostor);
    eph.close().await.unwrap();
    pro.close().await.unwrap();
}

#[tokio::test]
async fn close_and_drop_delete_and_leave_no_task() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = unique_root();
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let modes =
        [NodeMode::Ephemeral, NodeMode::Persistent, NodeMode::Container, NodeMode::ProtectedEphemeralSequential];
    let mut nodes = Vec::new();
    for i in 0..8 {
        nodes.push(started(&fw, &format!("{root}/n{i}"), modes[i % 4], b"").await);
    }
    assert_eq!(metrics.num_alive_tasks(), before + 8, "one task per node");
    let paths: Vec<String> = nodes.iter().map(|n| n.actual_path().unwrap()).collect();
    let dropped = nodes.split_off(4);
    drop(dropped);
    for node in &nodes {
        node.close().await.unwrap();
        node.close().await.unwrap(); // idempotent
        assert_matches!(node.set_data("late"), Err(Error::Closed));
        assert_matches!(node.start().await, Err(Error::Closed));
    }
    fixtures::settle(&[&fw]).await;
    eventually(LIVENESS, "no task left", || async { metrics.num_alive_tasks() == before }).await;
    for path in &paths {
        assert_eq!(fw.exists(path).await.unwrap(), None, "{path} deleted");
    }
    // a closed framework ends its nodes' tasks too
    let fw2 = fixtures::framework(&cs).await;
    let base = metrics.num_alive_tasks();
    let node = started(&fw2, &format!("{root}/last"), NodeMode::Ephemeral, b"").await;
    fw2.close();
    eventually(LIVENESS, "the task ended with the framework", || async { node.status() == NodeStatus::Closed }).await;
    drop(node);
    eventually(LIVENESS, "no task left", || async { metrics.num_alive_tasks() < base }).await;
}

#[tokio::test]
async fn bad_input_is_a_typed_error_and_leaves_nothing() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = unique_root();
    for path in ["", "relative", "/", "/a/", "/a//b", "/a/../b"] {
        let err = PersistentNode::new(&fw, path, NodeMode::Ephemeral, "").unwrap_err();
        assert!(matches!(err, Error::InvalidPath { .. }), "{path:?}: {err:?}");
    }
    for ttl in [Duration::ZERO, Duration::from_micros(999), Duration::from_secs(1 << 40)] {
        let err = PersistentNode::new(&fw, &format!("{root}/t"), NodeMode::PersistentWithTtl(ttl), "").unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{ttl:?}: {err:?}");
    }
    let node = PersistentNode::new(&fw, &format!("{root}/n"), NodeMode::Ephemeral, "").unwrap();
    assert!(matches!(node.wait_for_initial_create(Duration::from_secs(1)).await, Err(Error::InvalidState(_))));
    node.start().await.unwrap();
    assert!(matches!(node.start().await, Err(Error::InvalidState(_))));
    node.close().await.unwrap();
    // TTL on a server without extended types: ServerUnsupported, and no parent made
    let node =
        PersistentNode::new(&fw, &format!("{root}/a/b/ttl"), NodeMode::PersistentWithTtl(Duration::from_secs(5)), "")
            .unwrap();
    node.start().await.unwrap();
    let err = node.wait_for_initial_create(LIVENESS).await.unwrap_err();
    assert!(matches!(err, Error::ServerUnsupported(zk_recipes::ServerFeature::TtlNodes)), "{err:?}");
    assert!(matches!(node.status(), NodeStatus::Failed(Error::ServerUnsupported(zk_recipes::ServerFeature::TtlNodes))));
    node.close().await.unwrap();
    assert_eq!(fw.exists(&root).await.unwrap(), None, "nothing left behind");
}
