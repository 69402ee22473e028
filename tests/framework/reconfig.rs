//! A reconfigured ensemble: a session that the framework re-creates uses the servers in
//! `/zookeeper/config`, not the connect string it was built with.

use std::time::{Duration, Instant};
use zk_recipes::ZooKeeperError;

use assert_matches::assert_matches;
use zk_recipes::ops::{ReconfigChange, ServerRole};
use zk_recipes::{ConnectionState, CreateMode, Error};
use zk_recipes_testing::{fixtures, Backend, TestingCluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_re_created_after_a_reconfig_uses_the_new_servers() {
    let started = Instant::now();
    // (the kit reconfigures clusters of the local backend only: also in the Docker subset)
    let builder = TestingCluster::builder().backend(Backend::Local).reconfig_enabled(true);
    let mut cluster = builder.start().await.expect("cluster");
    // the framework knows server 0 only: without following the reconfig, a session re-created
    // after server 0 left could not connect anywhere
    let first = cluster.server_connect_string(0).expect("server 0").to_owned();
    let fw = fixtures::framework(&first).await;
    assert_eq!(fw.ensemble_connect_string(), first, "no reconfig yet");

    // server 3 joins, server 0 leaves: the ensemble is servers 1, 2, 3
    let joined = cluster.add_server().await.expect("a fourth server");
    let config = cluster.reconfigure(&[joined], &[0]).await.expect("reconfig");
    let new_servers: Vec<String> =
        [1, 2, joined].iter().map(|&i| cluster.server_connect_string(i).expect("server").to_owned()).collect();
    for server in &new_servers {
        assert!(config.contains(server.as_str()), "{server} in {config}");
    }
    assert!(!config.contains(first.as_str()), "{first} left: {config}");
    fixtures::eventually(Duration::from_secs(20), "the framework follows /zookeeper/config", || async {
        fw.ensemble_connect_string() == new_servers.join(",")
    })
    .await;

    // server 0 goes; the session is lost; the framework builds the next one on the new servers
    let id = fw.status().session_id;
    cluster.kill(0).expect("kill server 0");
    let mut status = fw.status_watch();
    fixtures::within(Duration::from_secs(20), status.wait_for(|s| s.losses > 0 || s.state == ConnectionState::Lost))
        .await
        .expect("the session on server 0 is lost");
    let now = fixtures::within(Duration::from_secs(20), status.wait_for(|s| s.state == ConnectionState::Reconnected))
        .await
        .expect("a new session")
        .to_owned();
    assert_ne!(now.session_id, id);
    let path = fixtures::unique("/reconfig");
    fw.create(&path, b"", CreateMode::Ephemeral).await.expect("create on the new ensemble");
    let server = fixtures::server_of_session(&cluster, now.session_id).await;
    assert!(server.is_some_and(|i| i != 0), "the new session lives on server {server:?}");
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}

/// On an ensemble whose `/zookeeper/config` names client addresses the framework follows it on
/// a task of its own; `close()` must still end the session on the server at once (its
/// ephemeral nodes go with it), not when the session times out. The task used to keep a
/// clone of the session's client while it waited for a configuration change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_the_session_while_the_ensemble_is_followed() {
    const SESSION_TIMEOUT: Duration = Duration::from_secs(30);
    let cluster =
        TestingCluster::builder().backend(Backend::Local).reconfig_enabled(true).start().await.expect("cluster");
    // (the configuration of a reconfigurable cluster names each server's client address)
    let cs = cluster.connect_string().to_owned();
    let observer = fixtures::framework(&cs).await;
    for round in 0..2 {
        let fw = fixtures::framework_with(&cs, |b| b.session_timeout(SESSION_TIMEOUT)).await;
        let path = fixtures::unique("/closing");
        fw.create(&path, b"", CreateMode::Ephemeral).await.expect("create");
        let closed = Instant::now();
        fw.close();
        fixtures::eventually(
            Duration::from_secs(5),
            format!("round {round}: the ephemeral goes with close()"),
            || async { observer.exists(&path).await.expect("exists").is_none() },
        )
        .await;
        assert!(closed.elapsed() < SESSION_TIMEOUT / 2, "gone only after {:?}", closed.elapsed());
    }
    observer.close();
}

/// `config()` and `reconfig()` on a 3-node ensemble with reconfiguration enabled: a server
/// leaves by id and joins again, a change at a stale version is refused and changes nothing,
/// and operations keep working throughout. One ensemble for the whole story (JVMs are slow
/// to start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_and_reconfig_from_the_framework() {
    let cluster =
        TestingCluster::builder().backend(Backend::Local).reconfig_enabled(true).start().await.expect("cluster");
    let fw = fixtures::framework(cluster.connect_string()).await;

    let initial = fw.config().await.expect("config");
    assert_eq!(initial.servers.len(), 3, "{}", initial.raw);
    let v0 = initial.version.expect("a dynamic configuration has a version");
    assert!(initial.servers.iter().all(|s| s.client_address.is_some()), "{}", initial.raw);

    // the last server leaves, at the version just read
    let leaving = initial.servers.last().expect("a server").clone();
    // (when the session lives on the leaving server, the server drops it once the change is
    // applied: the framework then reads the configuration to answer)
    let removed = fw.reconfig(&ReconfigChange::remove([leaving.id]), Some(v0)).await.expect("remove");
    assert_eq!(removed.servers.len(), 2, "{}", removed.raw);
    assert!(removed.server(leaving.id).is_none(), "{}", removed.raw);
    let v1 = removed.version.expect("a version");
    assert!(v1 > v0, "{v1:#x} after {v0:#x}");
    fw.sync("/").await.expect("sync");
    let read = fw.config().await.expect("config after the removal");
    assert_eq!((read.servers.len(), read.version), (2, Some(v1)), "{}", read.raw);
    let path = fixtures::unique("/reconfig-ops");
    fw.create(&path, b"still working", CreateMode::Persistent).await.expect("create after the removal");

    // a change at the stale version is refused, and nothing changed
    let stale = fw.reconfig(&ReconfigChange::add([leaving.spec()]), Some(v0)).await.unwrap_err();
    assert!(stale.is_conflict(), "{stale:?}");
    assert_matches!(stale, Error::ZooKeeper(ZooKeeperError::BadVersion));
    let unchanged = fw.config().await.expect("config after the refusal");
    assert_eq!((unchanged.servers.len(), unchanged.version), (2, Some(v1)), "{}", unchanged.raw);

    // it joins again
    let back = fw.reconfig(&ReconfigChange::add([leaving.spec()]), Some(v1)).await.expect("add back");
    assert_eq!(back.servers.len(), 3, "{}", back.raw);
    let rejoined = back.server(leaving.id).expect("the server is back");
    assert_eq!((rejoined.role, rejoined.quorum_port), (ServerRole::Participant, leaving.quorum_port));
    assert!(back.version > Some(v1));
    let (data, _) = fw.get_data(&path).await.expect("read after the join");
    assert_eq!(data, b"still working");
    fw.delete(&path).await.expect("delete");
}

/// A server without dynamic reconfiguration (the shared standalone server) refuses it with
/// an error that `is_unsupported()`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconfig_without_reconfig_enabled_is_unsupported() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let err = fw.reconfig(&ReconfigChange::remove([1]), None).await.unwrap_err();
    assert!(err.is_unsupported(), "{err:?}");
    assert_matches!(err, Error::ZooKeeper(ZooKeeperError::ReconfigDisabled | ZooKeeperError::Unimplemented));
}
