//! The cache and its persistent watcher against real ZooKeeper servers: the initial load, the
//! events (forward only, replayable into the tree), the three modes and their options, bad
//! input, the end of the task, and resyncs after a cut connection, an expired session and a
//! server restart (`faults.rs`).

#[macro_use]
mod support;
mod faults;
mod load;
mod modes;

use assert_matches::assert_matches;
use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use support::*;
use zk_recipes::cache::ResetReason;
use zk_recipes::cache::WatchEvent;
use zk_recipes::cache::WatchMode;
use zk_recipes::{Cache, CacheEvent, Error, PersistentWatcher};
use zk_recipes_testing::{fixtures, refusing, RefusingProxy};

both_modes! {
async fn initial_load_then_initialized_once(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    mk(&fw, &root, b"root").await;
    for p in ["/a", "/a/b", "/a/b/c", "/d"] {
        mk(&fw, &format!("{root}{p}"), p.as_bytes()).await;
    }
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    let tree = read_tree(&fw, &root, None).await;
    assert_eq!(tree.len(), 5);
    assert_eq!(replay.view(), tree, "Created for every node, root included, before Initialized");
    assert_eq!(view_of(&cache.snapshot()), tree);
    let created: Vec<_> = replay.seen.iter().filter_map(|e| e.node().map(|n| n.path.clone())).collect();
    let mut sorted = created.clone();
    sorted.sort();
    assert_eq!(created, sorted, "parents before children");
    assert_eq!(cache.get(&format!("{root}/a/b")).unwrap().data.as_deref(), Some(&b"/a/b"[..]));
    assert_eq!(cache.child_names(&root), vec!["a".to_string(), "d".to_string()]);
    assert!(cache.is_initialized());
    // more changes: never a second Initialized
    mk(&fw, &format!("{root}/e"), b"").await;
    replay.until_view(&read_tree(&fw, &root, None).await).await;
    assert_eq!(replay.seen.iter().filter(|e| **e == CacheEvent::Initialized).count(), 1);
    // a late subscriber gets the content, then Initialized
    let mut late = Replay::new(Box::pin(cache.events()));
    late.until(|e| *e == CacheEvent::Initialized).await;
    assert_eq!(late.view(), view_of(&cache.snapshot()));
}
}

both_modes! {
async fn changes_are_reported_forward_and_replay_into_the_tree(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let writer = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    mk(&fw, &root, b"").await;
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    let mut version = cache.version();
    let before = *version.borrow_and_update();
    let a = format!("{root}/a");
    mk(&writer, &a, b"1").await;
    for i in 2..=5 {
        writer.set_data(&a, format!("{i}").as_bytes(), None).await.unwrap();
    }
    mk(&writer, &format!("{a}/x"), b"").await;
    // The cache reads a node when it hears of it; a node deleted before that read is never
    // reported (its stat is gone with it; Curator's caches neither). Deleted once cached, it
    // must be reported in both modes.
    let x = format!("{a}/x");
    fixtures::eventually(Duration::from_secs(10), "a/x cached", || async { cache.get(&x).is_some() }).await;
    mk(&writer, &format!("{root}/b"), b"").await;
    writer.delete(&x).await.unwrap();
    writer.set_data(&root, b"root!", None).await.unwrap();
    let want = read_tree(&writer, &root, None).await;
    replay.until_view(&want).await;
    // per path, every reported node is newer than the last one
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    for event in &replay.seen {
        if let Some(node) = event.node() {
            if !matches!(event, CacheEvent::Deleted(_)) {
                let prev = last.insert(node.path.clone(), node.stat.mzxid);
                assert!(prev.is_none_or(|p| p < node.stat.mzxid), "backwards at {}", node.path);
            }
        }
    }
    assert_eq!(cache.get(&a).unwrap().data.as_deref(), Some(&b"5"[..]));
    assert!(replay.seen.iter().any(|e| matches!(e, CacheEvent::Deleted(n) if n.path.ends_with("/a/x"))));
    assert!(*version.borrow_and_update() > before, "version bumped");
    assert_eq!(converged(&cache, &writer, &root, None).await, replay.view());
}
}

both_modes! {
async fn busy_tree_replays_equal_to_the_tree_after_quiescence(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    mk(&fw, &root, b"").await;
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (fw, root) = (fw.clone(), root.clone());
            tokio::spawn(async move {
                let dir = format!("{root}/w{w}");
                mk(&fw, &dir, b"").await;
                for i in 0..30 {
                    let node = format!("{dir}/n{}", i % 7);
                    match fw.exists(&node).await.unwrap() {
                        None => mk(&fw, &node, format!("{i}").as_bytes()).await,
                        Some(_) if i % 3 == 0 => fw.delete(&node).await.unwrap(),
                        Some(_) => drop(fw.set_data(&node, format!("{i}").as_bytes(), None).await.unwrap()),
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let want = converged(&cache, &fw, &root, None).await;
    replay.until_view(&want).await;
}
}

both_modes! {
async fn two_thousand_nodes_arrive(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    mk(&fw, &root, b"").await;
    for d in 0..4 {
        mk(&fw, &format!("{root}/d{d}"), b"").await;
        mk_many(&fw, &format!("{root}/d{d}"), 500).await;
    }
    let started_at = std::time::Instant::now();
    let (cache, replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    let loaded = started_at.elapsed();
    assert_eq!(cache.len(), 2005);
    assert_eq!(replay.map.len(), 2005);
    assert_eq!(view_of(&cache.snapshot()), read_tree(&fw, &root, None).await);
    // and 500 more while it runs
    mk_many(&fw, &format!("{root}/d0/n0"), 500).await;
    converged(&cache, &fw, &root, None).await;
    assert_eq!(cache.len(), 2505);
    eprintln!("2,005 nodes loaded in {loaded:?}");
}
}

both_modes! {
async fn missing_root_then_created_deleted_and_recreated(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    assert!(cache.is_empty());
    mk(&fw, &root, b"1").await;
    mk(&fw, &format!("{root}/c"), b"").await;
    replay.until_view(&read_tree(&fw, &root, None).await).await;
    let first = cache.get(&root).unwrap();
    rm_rf(&fw, &root).await;
    replay.until(|e| matches!(e, CacheEvent::Deleted(n) if n.path == root)).await;
    assert!(cache.is_empty());
    mk(&fw, &root, b"1").await;
    mk(&fw, &format!("{root}/c2"), b"").await;
    replay.until_view(&read_tree(&fw, &root, None).await).await;
    assert!(cache.get(&root).unwrap().stat.czxid > first.stat.czxid, "the new root is followed");
    assert_eq!(cache.child_names(&root), vec!["c2".to_string()]);
}
}

both_modes! {
async fn bad_input_is_a_typed_error(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    for path in ["relative", "", "/a/", "/a//b"] {
        assert!(matches!(Cache::tree(&fw, path).watch_mode(mode).build(), Err(Error::InvalidPath { .. })), "{path:?}");
        assert!(matches!(PersistentWatcher::new(&fw, path, true), Err(Error::InvalidPath { .. })), "{path:?}");
    }
    assert!(matches!(Cache::tree(&fw, "/a").watch_mode(mode).max_depth(0).build(), Err(Error::InvalidArgument { .. })));
    assert!(matches!(Cache::children(&fw, "/a").watch_mode(mode).max_depth(2).build(), Err(Error::InvalidArgument { .. })));
    assert!(matches!(
        Cache::node(&fw, "/a").watch_mode(mode).event_capacity(0).build(),
        Err(Error::InvalidArgument { .. })
    ));
    let cache = Cache::node(&fw, "/a").watch_mode(mode).build().unwrap();
    cache.start().await.unwrap();
    assert_matches!(cache.start().await, Err(Error::InvalidState("the cache is already started")));
    cache.close().await.unwrap();
    assert_matches!(cache.start().await, Err(Error::Closed));
    assert_matches!(cache.close().await, Ok(()), "closing twice is fine");
}
}

both_modes! {
async fn dropping_or_closing_the_cache_ends_its_task_and_streams(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    mk(&fw, &root, b"").await;
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    let ended = cache.terminated();
    drop(cache);
    fixtures::within(WAIT, ended).await;
    assert_eq!(fixtures::within(WAIT, replay.events.next()).await, None, "the stream ends");
    // close: the same, the content stays readable
    let (cache, _replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    cache.close().await.unwrap();
    let ended = futures_util::FutureExt::now_or_never(cache.terminated());
    assert!(ended.is_some(), "close resolves once the task has ended");
    assert!(cache.get(&root).is_some());
    // closing the framework ends it too
    let other = fixtures::framework(&fixtures::shared_server().await).await;
    let (cache, _replay) = started(Cache::tree(&other, &root).watch_mode(mode).build().unwrap()).await;
    other.close();
    fixtures::within(WAIT, cache.terminated()).await;
}
}

both_modes! {
async fn slow_subscriber_gets_an_announced_resync_not_a_silent_loss(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    mk(&fw, &root, b"").await;
    let cache = Cache::tree(&fw, &root).watch_mode(mode).event_capacity(8).build().unwrap();
    let mut slow = Box::pin(cache.events());
    cache.start().await.unwrap();
    mk_many(&fw, &root, 100).await;
    converged(&cache, &fw, &root, None).await;
    let mut dropped = 0;
    let mut after = Vec::new();
    while let Some(Some(event)) = futures_util::FutureExt::now_or_never(slow.next()) {
        match event {
            CacheEvent::Resynced { dropped: n } if n > 0 => {
                dropped += n;
                after.clear();
            }
            other => after.push(other),
        }
    }
    assert!(dropped > 0, "the overflow is announced");
    assert!(after.len() <= 8);
    assert_eq!(cache.len(), 101, "the cache itself lost nothing");
}
}

#[tokio::test]
async fn persistent_watcher_reports_node_events_after_a_reset() {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    let events = PersistentWatcher::new(&fw, &root, true).unwrap().events();
    let mut events = Box::pin(events);
    assert_eq!(
        fixtures::within(WAIT, events.next()).await.unwrap().unwrap(),
        WatchEvent::Reset(ResetReason::Registered)
    );
    mk(&fw, &root, b"").await;
    mk(&fw, &format!("{root}/a"), b"").await;
    fw.set_data(&format!("{root}/a"), b"x", None).await.unwrap();
    fw.delete(&format!("{root}/a")).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        let e = fixtures::within(WAIT, events.next()).await.unwrap().unwrap();
        got.push(match e {
            WatchEvent::Created { path, .. } => format!("created {path}"),
            WatchEvent::DataChanged { path, .. } => format!("changed {path}"),
            WatchEvent::Deleted { path, .. } => format!("deleted {path}"),
            other => format!("{other:?}"),
        });
    }
    let a = format!("{root}/a");
    assert_eq!(
        got,
        vec![format!("created {root}"), format!("created {a}"), format!("changed {a}"), format!("deleted {a}")]
    );
}

/// Whether the server holds a watch on `path` (the `wchp` four-letter word).
async fn server_watches(cs: &str, path: &str) -> bool {
    let out = zk_recipes_testing::four_letter_word(cs, "wchp").await.unwrap();
    out.lines().any(|l| l.trim() == path)
}

both_modes! {
async fn dropping_the_watcher_or_the_cache_removes_the_watch_from_the_server(mode: WatchMode) {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = unique_root();
    let mut events = Box::pin(PersistentWatcher::new(&fw, &root, true).unwrap().events());
    assert_eq!(
        fixtures::within(WAIT, events.next()).await.unwrap().unwrap(),
        WatchEvent::Reset(ResetReason::Registered)
    );
    assert!(server_watches(&cs, &root).await, "registered");
    drop(events);
    fixtures::eventually(WAIT, "the watch is removed", || async { !server_watches(&cs, &root).await }).await;

    let (cache, _replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    assert!(server_watches(&cs, &root).await, "registered");
    let ended = cache.terminated();
    drop(cache);
    fixtures::within(WAIT, ended).await;
    fixtures::eventually(WAIT, "the watch is removed", || async { !server_watches(&cs, &root).await }).await;
}
}

both_modes! {
/// The cache says which kind of watch it follows: the one asked for; `Auto` on a 3.6+ server is
/// the persistent one.
async fn the_watch_mode_in_use_is_reported(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    let cache = Cache::node(&fw, &root).watch_mode(mode).build().unwrap();
    assert_eq!(cache.watch_mode(), None, "not started");
    let (cache, _replay) = started(cache).await;
    assert_eq!(cache.watch_mode(), Some(mode));
    let (auto, _replay) = started(Cache::node(&fw, &root).build().unwrap()).await;
    assert_eq!(auto.watch_mode(), Some(zk_recipes::cache::WatchMode::Persistent));
}
}

/// A server that refuses `addWatch` (as ZooKeeper before 3.6 does): `Auto` goes on with
/// one-shot watches and works; `Persistent` fails with the refusal.
#[tokio::test]
async fn auto_falls_back_to_one_shot_watches_when_add_watch_is_refused() {
    let cs = fixtures::shared_server().await;
    let old = server_without_add_watch(&cs).await;
    let fw = fixtures::framework(old.connect_string()).await;
    let writer = fixtures::framework(&cs).await;
    let root = unique_root();
    mk(&writer, &root, b"").await;
    mk(&writer, &format!("{root}/a"), b"1").await;
    let (cache, mut replay) = started(Cache::tree(&fw, &root).build().unwrap()).await;
    assert_eq!(cache.watch_mode(), Some(WatchMode::OneShot));
    assert_matches!(cache.failure(), None);
    mk(&writer, &format!("{root}/b"), b"2").await;
    writer.set_data(&format!("{root}/a"), b"3", None).await.unwrap();
    replay.until_view(&read_tree(&writer, &root, None).await).await;
    assert_eq!(converged(&cache, &writer, &root, None).await, replay.view());

    let strict = Cache::tree(&fw, &root).watch_mode(WatchMode::Persistent).build().unwrap();
    strict.start().await.unwrap();
    fixtures::within(WAIT, strict.terminated()).await;
    assert_matches!(strict.failure(), Some(Error::ServerUnsupported(zk_recipes::ServerFeature::PersistentWatches)));
    assert!(!strict.is_initialized());
}

/// A server that has persistent watches but refuses `multiRead` (op code 22; some
/// ZooKeeper-compatible servers): the cache loads node by node instead, completely, and stays
/// on its persistent watch; a resync after a cut reads node by node again.
#[tokio::test]
async fn a_server_refusing_multi_read_is_read_node_by_node() {
    let cs = fixtures::shared_server().await;
    let refusing = RefusingProxy::start(&cs, &[refusing::MULTI_READ]).await.unwrap();
    let fw = fixtures::framework(refusing.connect_string()).await;
    let writer = fixtures::framework(&cs).await;
    let root = unique_root();
    mk(&writer, &root, b"r").await;
    for dir in 0..5 {
        let dir = format!("{root}/d{dir}");
        mk(&writer, &dir, b"d").await;
        mk_many(&writer, &dir, 40).await;
    }
    let (cache, mut replay) = started(Cache::tree(&fw, &root).build().unwrap()).await;
    assert_eq!(cache.watch_mode(), Some(WatchMode::Persistent));
    assert_matches!(cache.failure(), None);
    assert_eq!(cache.len(), 1 + 5 + 5 * 40);
    assert_eq!(replay.view(), read_tree(&writer, &root, None).await);
    mk(&writer, &format!("{root}/d0/late"), b"l").await;
    writer.set_data(&format!("{root}/d1"), b"x", None).await.unwrap();
    replay.until_view(&read_tree(&writer, &root, None).await).await;
}

/// `initialized()` returns once the first load is done: the cache equals the tree right after,
/// with nothing polled; before `start()` it is a typed error, and after a close that came
/// before any load it is `Closed`.
#[tokio::test]
async fn initialized_returns_with_the_whole_tree_loaded() {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    mk(&fw, &root, b"").await;
    mk_many(&fw, &root, 300).await;
    let cache = Cache::tree(&fw, &root).build().unwrap();
    assert!(matches!(cache.initialized().await, Err(Error::InvalidState(_))), "not started");
    cache.start().await.unwrap();
    cache.initialized_timeout(Duration::from_secs(20)).await.unwrap();
    assert!(cache.is_initialized());
    assert_eq!(view_of(&cache.snapshot()), read_tree(&fw, &root, None).await, "the cache equals the tree");
    cache.initialized().await.expect("at once when loaded already");
    cache.close().await.unwrap();
    cache.initialized().await.expect("a close after the first load leaves it loaded");

    let never = Cache::tree(&fw, &format!("{root}/x")).build().unwrap();
    never.start().await.unwrap();
    never.close().await.unwrap();
    let ended = never.initialized().await;
    assert!(ended.is_ok() || matches!(ended, Err(Error::Closed)), "loaded before the close, or Closed: {ended:?}");
}
