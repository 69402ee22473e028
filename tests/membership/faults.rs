//! Faults on servers of their own: a cut connection, an expired session and a restarted
//! server (one scenario, one server), and a killed leader of a 3-node ensemble. After each,
//! within the liveness bound: exactly one node per registration, owned by the current session;
//! throughout: never two nodes for one protected registration.

use std::time::Duration;

use zk_recipes::{Framework, NodeMode, PersistentNode};
use zk_recipes_testing::{expire_session, fixtures, TcpProxy, TestingCluster, TestingServer};

use crate::support::*;

/// An ephemeral, a protected and a persistent node under a fresh root.
async fn registrations(fw: &Framework) -> (String, Vec<PersistentNode>) {
    let root = unique_root();
    let nodes = vec![
        started(fw, &format!("{root}/eph"), NodeMode::Ephemeral, b"e").await,
        started(fw, &format!("{root}/member-"), NodeMode::ProtectedEphemeralSequential, b"p").await,
        started(fw, &format!("{root}/per"), NodeMode::Persistent, b"s").await,
    ];
    (root, nodes)
}

/// Waits until every node holds the invariant and says how long that took.
async fn all_ours(what: &str, observer: &Framework, fw: &Framework, nodes: &[PersistentNode]) {
    let start = tokio::time::Instant::now();
    for node in nodes {
        let path = exactly_one_ours(observer, fw, node).await;
        fixtures::eventually(LIVENESS, format!("{what}: the node's data"), || async {
            observer.get_data(&path).await.is_ok_and(|(data, _)| data == node.data())
        })
        .await;
    }
    eprintln!("{what}: every node ours again within {:?}", start.elapsed());
}

#[tokio::test]
async fn a_cut_connection_an_expired_session_a_restarted_server() {
    let server = TestingServer::start().await.unwrap();
    let proxy = TcpProxy::start(server.connect_string()).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let observer = fixtures::framework(server.connect_string()).await;
    let (root, nodes) = registrations(&fw).await;
    let sampler = Sampler::start(&observer, &root, &protection_prefix(&nodes[1].actual_path().unwrap()));
    let czxid = |n: &PersistentNode| n.status().node().unwrap().1;
    let before: Vec<i64> = nodes.iter().map(czxid).collect();

    proxy.cut();
    all_ours("cut connection", &observer, &fw, &nodes).await;
    assert_eq!(fw.status().losses, 0);

    let session = fw.status().session_id;
    expire_session(&fw).await.unwrap();
    all_ours("expired session", &observer, &fw, &nodes).await;
    assert_ne!(fw.status().session_id, session);
    let after: Vec<i64> = nodes.iter().map(czxid).collect();
    assert!(after[0] > before[0] && after[1] > before[1], "the ephemeral nodes were created again");
    assert_eq!(after[2], before[2], "the persistent node stayed");

    nodes[0].set_data("while down").unwrap();
    server.restart().await.unwrap();
    all_ours("restarted server", &observer, &fw, &nodes).await;
    sampler.never_two().await;
    for node in &nodes {
        node.close().await.unwrap();
    }
    assert_eq!(fixtures::ephemerals(&observer, &root).await.unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn a_killed_ensemble_leader() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let fw = fixtures::framework(cluster.connect_string()).await;
    let observer = fixtures::framework(cluster.connect_string()).await;
    let (root, nodes) = registrations(&fw).await;
    let sampler = Sampler::start(&observer, &root, &protection_prefix(&nodes[1].actual_path().unwrap()));
    let leader = cluster.leader().await.unwrap().expect("a leader");
    cluster.kill(leader).unwrap();
    cluster.wait_for_leader(Duration::from_secs(30)).await.unwrap();
    all_ours("killed leader", &observer, &fw, &nodes).await;
    cluster.restart(leader).await.unwrap();
    all_ours("leader back", &observer, &fw, &nodes).await;
    sampler.never_two().await;
    for node in &nodes {
        node.close().await.unwrap();
    }
}
