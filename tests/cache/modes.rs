//! The three modes and the options: children, node, max_depth, no data, filter, namespace, and
//! a lock working inside a cached tree.

use zk_recipes::{Cache, CacheEvent, InterProcessMutex};
use zk_recipes_testing::fixtures;

use crate::support::*;

/// A tree `root{/a{/a1{/a11}},/b}`.
async fn sample(fw: &zk_recipes::Framework) -> String {
    let root = unique_root();
    mk(fw, &root, b"r").await;
    for p in ["/a", "/a/a1", "/a/a1/a11", "/b"] {
        mk(fw, &format!("{root}{p}"), p.as_bytes()).await;
    }
    root
}

both_modes! {
async fn children_mode_keeps_depth_one(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = sample(&fw).await;
    let (cache, mut replay) = started(Cache::children(&fw, &root).watch_mode(mode).build().unwrap()).await;
    let paths: Vec<_> = cache.snapshot().into_keys().collect();
    assert_eq!(paths, vec![root.clone(), format!("{root}/a"), format!("{root}/b")]);
    // deeper changes are not reported, depth-1 changes are
    mk(&fw, &format!("{root}/a/a2"), b"").await;
    fw.set_data(&format!("{root}/a/a1"), b"x", None).await.unwrap();
    mk(&fw, &format!("{root}/c"), b"").await;
    let e = replay.until(|e| e.node().is_some()).await;
    assert_eq!(e.node().unwrap().path, format!("{root}/c"));
    assert_eq!(view_of(&cache.snapshot()), read_tree(&fw, &root, Some(1)).await);
}
}

both_modes! {
async fn node_mode_keeps_the_node_only(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = sample(&fw).await;
    let (cache, mut replay) = started(Cache::node(&fw, &root).watch_mode(mode).build().unwrap()).await;
    assert_eq!(cache.snapshot().into_keys().collect::<Vec<_>>(), vec![root.clone()]);
    mk(&fw, &format!("{root}/c"), b"").await;
    fw.set_data(&root, b"new", None).await.unwrap();
    let e = replay.until(|e| e.node().is_some()).await;
    assert!(matches!(&e, CacheEvent::Changed { new, .. } if new.data.as_deref() == Some(&b"new"[..])), "{e:?}");
    assert_eq!(cache.len(), 1);
    // deleted, then re-created
    rm_rf(&fw, &root).await;
    replay.until(|e| matches!(e, CacheEvent::Deleted(_))).await;
    mk(&fw, &root, b"again").await;
    let e = replay.until(|e| e.node().is_some()).await;
    assert!(matches!(&e, CacheEvent::Created(n) if n.path == root), "{e:?}");
}
}

both_modes! {
async fn max_depth_no_data_and_filter(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = sample(&fw).await;
    let (cache, _r) = started(Cache::tree(&fw, &root).watch_mode(mode).max_depth(2).build().unwrap()).await;
    assert_eq!(view_of(&cache.snapshot()), read_tree(&fw, &root, Some(2)).await);
    assert!(cache.get(&format!("{root}/a/a1/a11")).is_none());

    let (cache, _r) = started(Cache::tree(&fw, &root).watch_mode(mode).with_data(false).build().unwrap()).await;
    assert!(cache.snapshot().values().all(|n| n.data.is_none()));
    fw.set_data(&format!("{root}/b"), b"changed", None).await.unwrap();
    let want: View =
        read_tree(&fw, &root, None).await.into_iter().map(|(p, (_, v, c, m))| (p, (None, v, c, m))).collect();
    fixtures::eventually(WAIT, "no-data cache follows the stats", || async { view_of(&cache.snapshot()) == want })
        .await;

    let filtered = Cache::tree(&fw, &root).watch_mode(mode).filter(|p| !p.ends_with("/a"));
    let (cache, mut replay) = started(filtered.build().unwrap()).await;
    let paths: Vec<_> = cache.snapshot().into_keys().collect();
    assert_eq!(paths, vec![root.clone(), format!("{root}/b")], "a and below are filtered out");
    mk(&fw, &format!("{root}/a/a2"), b"").await;
    mk(&fw, &format!("{root}/c"), b"").await;
    let e = replay.until(|e| e.node().is_some()).await;
    assert_eq!(e.node().unwrap().path, format!("{root}/c"));
}
}

both_modes! {
async fn paths_are_relative_to_the_namespace(mode: WatchMode) {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("cache-ns");
    let fw = fixtures::framework_with(&cs, |b| b.namespace(ns.as_str())).await;
    mk(&fw, "/t", b"").await;
    let (cache, mut replay) = started(Cache::tree(&fw, "/t").watch_mode(mode).build().unwrap()).await;
    mk(&fw, "/t/x", b"1").await;
    let e = replay.until(|e| e.node().is_some()).await;
    assert_eq!(e.node().unwrap().path, "/t/x");
    assert_eq!(view_of(&cache.snapshot()), read_tree(&fw, "/t", None).await);
}
}

both_modes! {
/// One-shot watches of a lock's waiters and the cache's persistent recursive watch on the same
/// paths and session (ZOOKEEPER-4466): both keep working.
async fn a_lock_inside_the_cached_tree_works_and_is_cached(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = unique_root();
    mk(&fw, &root, b"").await;
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    let lock_path = format!("{root}/lock");
    let mutex = InterProcessMutex::new(&fw, &lock_path).unwrap();
    let held = mutex.acquire().await.unwrap();
    let waiter = tokio::spawn({
        let mutex = mutex.clone();
        async move {
            let guard = mutex.acquire().await.unwrap();
            guard.release().await.unwrap();
        }
    });
    fixtures::eventually(WAIT, "both contenders cached", || async { cache.child_names(&lock_path).len() == 2 }).await;
    assert!(cache.get(held.path()).is_some());
    held.release().await.unwrap();
    fixtures::within(WAIT, waiter).await.unwrap();
    let want = converged(&cache, &fw, &root, None).await;
    replay.until_view(&want).await;
    assert!(cache.child_names(&lock_path).is_empty());
}
}

both_modes! {
/// A node the session may not read is left out; the rest is cached and followed.
async fn unreadable_nodes_are_left_out(mode: WatchMode) {
    let cs = fixtures::shared_server().await;
    let owner = zk_recipes::Framework::builder()
        .connect_string(cs.as_str())
        .auth("digest", "svc:s3cret")
        .default_acl(zk_recipes::Acl::creator_all())
        .connect()
        .await
        .unwrap();
    let fw = fixtures::framework(&cs).await;
    let root = unique_root();
    mk(&fw, &root, b"").await;
    mk(&owner, &format!("{root}/secret"), b"s").await;
    mk(&fw, &format!("{root}/open"), b"o").await;
    let (cache, mut replay) = started(Cache::tree(&fw, &root).watch_mode(mode).build().unwrap()).await;
    assert_eq!(cache.child_names(&root), vec!["open".to_string()]);
    owner.set_data(&format!("{root}/secret"), b"t", None).await.unwrap();
    mk(&fw, &format!("{root}/later"), b"").await;
    let e = replay.until(|e| e.node().is_some()).await;
    assert_eq!(e.node().unwrap().path, format!("{root}/later"));
    assert!(cache.failure().is_none());
}
}

both_modes! {
async fn a_panicking_filter_is_contained(mode: WatchMode) {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let root = sample(&fw).await;
    let boom = Cache::tree(&fw, &root).watch_mode(mode).filter(|p| if p.ends_with("/b") { panic!("no b") } else { true });
    let (cache, mut replay) = started(boom.build().unwrap()).await;
    // the path it panicked on is left out, the rest is cached, and the cache goes on
    assert!(cache.get(&format!("{root}/b")).is_none());
    assert!(cache.get(&format!("{root}/a/a1/a11")).is_some());
    match cache.failure() {
        Some(zk_recipes::Error::InvalidArgument { argument: "filter", reason, .. }) => {
            assert!(reason.contains("panicked"), "{reason}")
        }
        other => panic!("the panic is reported as a typed error: {other:?}"),
    }
    mk(&fw, &format!("{root}/c"), b"").await;
    let e = replay.until(|e| e.node().is_some()).await;
    assert_eq!(e.node().unwrap().path, format!("{root}/c"));
}
}

both_modes! {
/// The framework's request-size limit applies to the cache's reads, and a limit that a
/// `multiRead` of a hundred long paths exceeds (4 KB, the least the builder takes) costs the
/// batching, not the cache: the load reads those nodes one request each, then follows changes.
async fn a_small_request_size_limit_splits_the_batched_reads(mode: WatchMode) {
    let fw = fixtures::framework_with(&fixtures::shared_server().await, |b| b.max_request_size(4096)).await;
    let root = unique_root();
    mk(&fw, &root, b"r").await;
    let long = "x".repeat(60);
    for i in 0..100 {
        mk(&fw, &format!("{root}/{long}{i}"), b"v").await;
    }
    let cache = Cache::tree(&fw, &root).watch_mode(mode).build().unwrap();
    cache.start().await.unwrap();
    cache.initialized_timeout(WAIT).await.expect("the cache loads under the limit");
    assert_eq!(cache.len(), 101);
    assert_eq!(view_of(&cache.snapshot()), read_tree(&fw, &root, None).await);
    let mut replay = Replay::new(Box::pin(cache.events()));
    let late = format!("{root}/{long}late");
    mk(&fw, &late, b"late").await;
    let e = replay.until(|e| matches!(e, CacheEvent::Created(n) if n.path == late)).await;
    assert_eq!(e.node().unwrap().data.as_deref(), Some(&b"late"[..]));
    assert!(cache.failure().is_none());
}
}
