//! Resyncs: while the cache cannot hear the server, another client deletes and re-creates a
//! node with the same data (version 0 again), deletes a subtree, creates another and writes a
//! node; then the connection is cut, the session expired, or the server restarted. The cache
//! must report every one of those changes, then `Resynced`, and equal the tree — in both watch
//! modes.

use futures_util::Stream;
use zk_recipes::cache::WatchMode;
use zk_recipes::CreateMode;

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
    // as this subscriber last saw it (the cache itself may have resynced already)
    let old_same = replay.map.get(&format!("{root}/same")).unwrap().clone();
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

/// The tests that own servers (an expiry, a restart, a killed leader) run both watch modes side
/// by side in one scenario: a cache in each mode, each on its own session through the proxy
/// (one-shot and persistent watches on the same path of one session interfere, ZOOKEEPER-4466).
const MODES: [WatchMode; 2] = [WatchMode::Persistent, WatchMode::OneShot];

#[tokio::test]
async fn after_an_expired_session() {
    let server = TestingServer::start().await.unwrap();
    let proxy = TcpProxy::start(server.connect_string()).await.unwrap();
    let writer = fixtures::framework(server.connect_string()).await;
    let root = before(&writer).await;
    let mut caches = Vec::new();
    for (i, mode) in MODES.into_iter().enumerate() {
        let fw = fixtures::framework(proxy.connect_string()).await;
        let ephemeral = format!("{root}/eph{i}");
        fw.create(&ephemeral, b"", CreateMode::Ephemeral).await.unwrap();
        let (cache, replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
        caches.push((mode, fw, cache, replay));
    }
    // every cache has seen both ephemerals before it is cut off: a cache started first learns
    // of the later one by a watch, which may still be on its way
    let tree = read_tree(&writer, &root, None).await;
    for (_, _, _, replay) in &mut caches {
        replay.until_view(&tree).await;
    }
    proxy.set_mode(ProxyMode::Blackhole);
    change_while_cut_off(&writer, &root).await;
    // the sessions are closed on the server by impostors that have their ids and passwords
    for (_, fw, _, _) in &caches {
        let impostor = zk_recipes::zk::Client::connector()
            .with_session(fw.session_info().unwrap())
            .with_session_timeout(fixtures::SESSION_TIMEOUT)
            .connect(server.connect_string())
            .await
            .unwrap();
        drop(impostor);
    }
    fixtures::eventually(WAIT, "the sessions are gone", || async {
        writer.children(&root).await.unwrap().iter().all(|c| !c.starts_with("eph"))
    })
    .await;
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    for (mode, fw, cache, mut replay) in caches {
        every_change_then_resynced(&cache, &mut replay, &writer, &root).await;
        for i in 0..MODES.len() {
            let ephemeral = format!("{root}/eph{i}");
            assert!(replay.seen.iter().any(|e| matches!(e, CacheEvent::Deleted(n) if n.path == ephemeral)));
        }
        assert!(fw.status().losses >= 1, "a new session");
        assert_eq!(cache.watch_mode(), Some(mode));
    }
}

#[tokio::test]
async fn after_a_server_restart() {
    let server = TestingServer::start().await.unwrap();
    let proxy = TcpProxy::start(server.connect_string()).await.unwrap();
    let writer = fixtures::framework(server.connect_string()).await;
    let root = before(&writer).await;
    let mut caches = Vec::new();
    for mode in MODES {
        let fw = fixtures::framework(proxy.connect_string()).await;
        caches.push(started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await);
    }
    proxy.set_mode(ProxyMode::Blackhole);
    change_while_cut_off(&writer, &root).await;
    server.restart().await.unwrap();
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    for (cache, mut replay) in caches {
        every_change_then_resynced(&cache, &mut replay, &writer, &root).await;
    }
}

/// A 3-node ensemble loses its leader while another client changes the tree: the caches
/// (their server dropped clients in the election) resync and end equal to the tree.
#[tokio::test]
async fn after_the_ensemble_leader_is_killed() {
    use zk_recipes_testing::TestingCluster;
    let cluster = TestingCluster::start(3).await.unwrap();
    let writer = fixtures::framework(cluster.connect_string()).await;
    let root = before(&writer).await;
    let mut caches = Vec::new();
    for mode in MODES {
        let fw = fixtures::framework(cluster.connect_string()).await;
        caches.push(started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await);
    }
    let leader = cluster.leader().await.unwrap().expect("a leader");
    cluster.kill(leader).unwrap();
    change_while_cut_off(&writer, &root).await;
    for (cache, mut replay) in caches {
        let want = converged(&cache, &writer, &root, None).await;
        replay.until_view(&want).await;
        if !replay.seen.contains(&CacheEvent::Resynced { dropped: 0 }) {
            replay.until(|e| *e == CacheEvent::Resynced { dropped: 0 }).await;
        }
        assert_eq!(view_of(&cache.snapshot()), read_tree(&writer, &root, None).await);
    }
}

/// The paths the server holds watches on for `session` (the `wchc` four-letter word), each
/// once.
async fn watched_by(cs: &str, session: i64) -> std::collections::BTreeSet<String> {
    let out = zk_recipes_testing::four_letter_word(cs, "wchc").await.unwrap();
    let id = format!("0x{session:x}");
    let mut paths = std::collections::BTreeSet::new();
    let mut ours = false;
    for line in out.lines() {
        if line.starts_with("0x") {
            ours = line.trim() == id;
        } else if ours && !line.trim().is_empty() {
            paths.insert(line.trim().to_string());
        }
    }
    paths
}

both_modes! {
/// A root that never appears (CURATOR-240/312) costs one watch on the server and nothing that
/// grows: after twelve connection cuts, each a reset that sets the watch again, the session
/// watches the root and nothing else, the runtime has no more tasks than after the first
/// reset, and when the root finally comes it is reported once.
async fn a_root_that_never_appears_leaks_nothing(mode: WatchMode) {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let root = unique_root();
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    let session = fw.session_info().unwrap().id().0;
    let tasks = || tokio::runtime::Handle::current().metrics().num_alive_tasks();
    let mut after_first = None;
    for cut in 0..12 {
        proxy.cut();
        replay.until(|e| *e == CacheEvent::Resynced { dropped: 0 }).await;
        fixtures::eventually(WAIT, "the root is watched again", || async {
            watched_by(&cs, session).await == [root.clone()].into()
        })
        .await;
        let now = tasks();
        let first = *after_first.get_or_insert(now);
        assert!(now <= first, "cut {cut}: {now} tasks alive, {first} after the first cut");
    }
    assert!(cache.is_empty());
    assert_eq!(fw.status().losses, 0, "the same session throughout");
    mk(&fw, &root, b"r").await;
    replay.until(|e| matches!(e, CacheEvent::Created(n) if n.path == root)).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    while let Some(Some(event)) = futures_util::FutureExt::now_or_never(futures_util::StreamExt::next(&mut replay.events)) {
        replay.seen.push(event);
    }
    let created = replay.seen.iter().filter(|e| matches!(e, CacheEvent::Created(n) if n.path == root)).count();
    assert_eq!(created, 1, "the root is reported once, not once per watch set");
    drop(cache);
    fixtures::eventually(WAIT, "no watch is left", || async { watched_by(&cs, session).await.is_empty() }).await;
}
}
