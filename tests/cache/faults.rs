//! Resyncs: while the cache cannot hear the server, another client deletes and re-creates a
//! node with the same data (version 0 again), deletes a subtree, creates another and writes a
//! node; then the connection is cut, the session expired, or the server restarted. The cache
//! must report every one of those changes, then `Resynced`, and equal the tree.

use futures_util::Stream;
use zk_recipes::zk::CreateMode;
use zk_recipes::{Cache, CacheEvent, Framework};
use zk_recipes_testing::{fixtures, ProxyMode, TcpProxy, TestingServer};

use crate::support::*;

/// The tree before: `root{/same, /sub{/x,/y}, /keep}`.
async fn before(writer: &Framework) -> String {
    let root = unique_root();
    mk(writer, &root, b"").await;
    for p in ["/same", "/sub", "/sub/x", "/sub/y", "/keep"] {
        mk(writer, &format!("{root}{p}"), b"s").await;
    }
    root
}

/// The changes made while the cache is cut off.
async fn change_while_cut_off(writer: &Framework, root: &str) {
    let same = format!("{root}/same");
    writer.delete(&same).await.unwrap();
    mk(writer, &same, b"s").await;
    rm_rf(writer, &format!("{root}/sub")).await;
    mk(writer, &format!("{root}/other"), b"o").await;
    mk(writer, &format!("{root}/other/z"), b"z").await;
    writer.set_data(&format!("{root}/keep"), b"k", None).await.unwrap();
}

/// Every change reported, then `Resynced`, and the cache equals the tree.
async fn every_change_then_resynced<S: Stream<Item = CacheEvent> + Unpin>(
    cache: &Cache,
    replay: &mut Replay<S>,
    writer: &Framework,
    root: &str,
) {
    let old_same = cache.get(&format!("{root}/same")).unwrap();
    let from = replay.seen.len();
    replay.until(|e| *e == CacheEvent::Resynced { dropped: 0 }).await;
    let tree = read_tree(writer, root, None).await;
    assert_eq!(replay.view(), tree, "the replayed events equal the tree");
    assert_eq!(view_of(&cache.snapshot()), tree);
    let events = &replay.seen[from..];
    let deleted =
        |p: &str| events.iter().any(|e| matches!(e, CacheEvent::Deleted(n) if n.path == format!("{root}{p}")));
    let created =
        |p: &str| events.iter().any(|e| matches!(e, CacheEvent::Created(n) if n.path == format!("{root}{p}")));
    assert!(events.contains(&CacheEvent::Deleted(old_same.clone())), "re-created node: old one deleted");
    let new_same = cache.get(&format!("{root}/same")).unwrap();
    assert!(new_same.stat.czxid > old_same.stat.czxid);
    assert_eq!((new_same.stat.version, new_same.data.as_deref()), (0, Some(&b"s"[..])), "same data, version 0");
    assert!(created("/same"));
    for p in ["/sub/x", "/sub/y", "/sub"] {
        assert!(deleted(p), "{p} deleted");
    }
    assert!(created("/other") && created("/other/z"));
    assert!(events.iter().any(|e| matches!(e, CacheEvent::Changed { new, .. } if new.path.ends_with("/keep"))));
}

both_modes! {
async fn after_a_cut_connection(mode: WatchMode) {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let writer = fixtures::framework(&cs).await;
    let root = before(&writer).await;
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    proxy.set_mode(ProxyMode::Blackhole);
    change_while_cut_off(&writer, &root).await;
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    every_change_then_resynced(&cache, &mut replay, &writer, &root).await;
    assert_eq!(fw.status().losses, 0, "the same session");
}
}

both_modes! {
async fn after_an_expired_session(mode: WatchMode) {
    let server = TestingServer::start().await.unwrap();
    let proxy = TcpProxy::start(server.connect_string()).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let writer = fixtures::framework(server.connect_string()).await;
    let root = before(&writer).await;
    let ephemeral = format!("{root}/eph");
    fw.create(&ephemeral, b"", CreateMode::Ephemeral).await.unwrap();
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    proxy.set_mode(ProxyMode::Blackhole);
    change_while_cut_off(&writer, &root).await;
    // the session is closed on the server by an impostor that has its id and password
    let impostor = zk_recipes::zk::Client::connector()
        .with_session(fw.session_info().unwrap())
        .with_session_timeout(fixtures::SESSION_TIMEOUT)
        .connect(server.connect_string())
        .await
        .unwrap();
    drop(impostor);
    fixtures::eventually(WAIT, "the session is gone", || async { writer.exists(&ephemeral).await.unwrap().is_none() })
        .await;
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    every_change_then_resynced(&cache, &mut replay, &writer, &root).await;
    assert!(replay.seen.iter().any(|e| matches!(e, CacheEvent::Deleted(n) if n.path == ephemeral)));
    assert!(fw.status().losses >= 1, "a new session");
}
}

both_modes! {
async fn after_a_server_restart(mode: WatchMode) {
    let server = TestingServer::start().await.unwrap();
    let proxy = TcpProxy::start(server.connect_string()).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let writer = fixtures::framework(server.connect_string()).await;
    let root = before(&writer).await;
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    proxy.set_mode(ProxyMode::Blackhole);
    change_while_cut_off(&writer, &root).await;
    server.restart().await.unwrap();
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    every_change_then_resynced(&cache, &mut replay, &writer, &root).await;
}
}

both_modes! {
/// A 3-node ensemble loses its leader while another client changes the tree: the cache
/// (its server dropped clients in the election) resyncs and ends equal to the tree.
async fn after_the_ensemble_leader_is_killed(mode: WatchMode) {
    use zk_recipes_testing::TestingCluster;
    let cluster = TestingCluster::start(3).await.unwrap();
    let fw = fixtures::framework(cluster.connect_string()).await;
    let writer = fixtures::framework(cluster.connect_string()).await;
    let root = before(&writer).await;
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    let leader = cluster.leader().await.unwrap().expect("a leader");
    cluster.kill(leader).unwrap();
    change_while_cut_off(&writer, &root).await;
    let want = converged(&cache, &writer, &root, None).await;
    replay.until_view(&want).await;
    if !replay.seen.contains(&CacheEvent::Resynced { dropped: 0 }) {
        replay.until(|e| *e == CacheEvent::Resynced { dropped: 0 }).await;
    }
    assert_eq!(view_of(&cache.snapshot()), read_tree(&writer, &root, None).await);
}
}
