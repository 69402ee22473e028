//! A Curator 5.4 `CuratorCache` (in the peer) and our `Cache::tree` watch one tree while our
//! framework and a Curator client both mutate it; after quiescence both hold what a direct read
//! of the tree finds: the same paths, data, versions and czxids. A second test cuts both caches
//! off while the tree changes and compares how each catches up.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zk_recipes::ZooKeeperError;

use futures_util::StreamExt;
use zk_recipes::CreateMode;
use zk_recipes::{Cache, CacheEvent, CachedNode, Error, Framework};
use zk_recipes_testing::curator::{CuratorCacheNode, CuratorPeer};
use zk_recipes_testing::{fixtures, Error as TestError};

/// How long both caches may take to agree with the tree once the writers stopped.
const CONVERGE: Duration = Duration::from_secs(10);
/// Operations per writer (our framework, the Curator client).
const OPS: usize = 250;

/// The nodes the writers pick from: three levels under the root.
fn paths(root: &str) -> Vec<String> {
    let mut all = Vec::new();
    for a in ["a", "b", "c"] {
        all.push(format!("{root}/{a}"));
        for b in ["x", "y"] {
            all.push(format!("{root}/{a}/{b}"));
            all.push(format!("{root}/{a}/{b}/z"));
        }
    }
    all
}

fn ours(node: &CachedNode) -> CuratorCacheNode {
    CuratorCacheNode {
        path: node.path.clone(),
        version: node.stat.version,
        czxid: node.stat.czxid,
        data: node.data.clone(),
    }
}

fn ours_all(cache: &Cache) -> Vec<CuratorCacheNode> {
    cache.snapshot().values().map(ours).collect()
}

/// The tree under `root` read node by node; `None` when it changed under the walk (a container
/// reaped meanwhile), so that the caller looks again.
async fn direct(fw: &Framework, root: &str) -> Option<Vec<CuratorCacheNode>> {
    let mut found = BTreeMap::new();
    let mut todo = vec![root.to_string()];
    while let Some(path) = todo.pop() {
        let (data, stat) = fw.get_data(&path).await.ok()?;
        for child in fw.children(&path).await.ok()? {
            todo.push(format!("{path}/{child}"));
        }
        found.insert(
            path.clone(),
            CuratorCacheNode { path, version: stat.version, czxid: stat.czxid, data: Some(data) },
        );
    }
    Some(found.into_values().collect())
}

/// Whether a write lost a race with the other writer (or the server reaping a container).
fn lost_race(result: Result<(), Error>) -> bool {
    match result {
        Ok(()) => false,
        Err(Error::ZooKeeper(ZooKeeperError::NoNode | ZooKeeperError::NodeExists | ZooKeeperError::NotEmpty)) => true,
        Err(other) => panic!("unexpected error from our write: {other:?}"),
    }
}

fn peer_lost_race(result: Result<(), TestError>) -> bool {
    match result {
        Ok(()) => false,
        Err(TestError::Peer(msg))
            if ["NoNodeException", "NodeExistsException", "NotEmptyException"]
                .iter()
                .any(|c| msg.contains(&format!(": {c}:"))) =>
        {
            true
        }
        Err(other) => panic!("unexpected error from Curator's write: {other:?}"),
    }
}

/// Deletes `path` and its descendants, children first (our framework has no recursive delete).
async fn delete_tree(fw: &Framework, path: &str) -> Result<(), Error> {
    let mut order = vec![path.to_string()];
    let mut i = 0;
    while i < order.len() {
        let parent = order[i].clone();
        match fw.children(&parent).await {
            Ok(children) => order.extend(children.into_iter().map(|c| format!("{parent}/{c}"))),
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) if i > 0 => {}
            Err(e) => return Err(e),
        }
        i += 1;
    }
    for node in order.iter().rev() {
        match fw.delete(node).await {
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) if node != path => {}
            other => other?,
        }
    }
    Ok(())
}

/// Data for step `i`: empty now and then, otherwise a few bytes naming the writer.
fn data(rng: &mut fastrand::Rng, who: &str, i: usize) -> Vec<u8> {
    if rng.u8(..) < 40 {
        Vec::new()
    } else {
        format!("{who}-{i}-{}", rng.u16(..)).into_bytes()
    }
}

/// `OPS` random writes of ours; returns how many lost a race.
async fn our_writes(fw: Framework, all: Vec<String>, seed: u64) -> usize {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut lost = 0;
    for i in 0..OPS {
        let path = &all[rng.usize(..all.len())];
        let result = match rng.u8(..100) {
            0..40 => fw.create(path, &data(&mut rng, "ours", i), CreateMode::Persistent).await.map(drop),
            40..70 => fw.set_data(path, &data(&mut rng, "ours", i), None).await.map(drop),
            70..85 => fw.delete(path).await,
            _ => delete_tree(&fw, path).await,
        };
        lost += usize::from(lost_race(result));
    }
    lost
}

/// `OPS` random writes of the Curator client `cid`; returns how many lost a race.
async fn curator_writes(peer: Arc<CuratorPeer>, cid: String, all: Vec<String>, seed: u64) -> usize {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut lost = 0;
    for i in 0..OPS {
        let path = &all[rng.usize(..all.len())];
        let result = match rng.u8(..100) {
            0..40 => peer.node_create(&cid, path, &data(&mut rng, "curator", i)).await.map(drop),
            40..70 => peer.node_set(&cid, path, &data(&mut rng, "curator", i)).await.map(drop),
            70..85 => peer.node_delete(&cid, path, false).await,
            _ => peer.node_delete(&cid, path, true).await,
        };
        lost += usize::from(peer_lost_race(result));
    }
    lost
}

/// Waits until our cache, Curator's cache and a direct read agree (printing the differences
/// while they do not, late in the wait).
async fn converge(fw: &Framework, cache: &Cache, peer: &CuratorPeer, cid: &str, hid: &str, root: &str) {
    let start = Instant::now();
    fixtures::eventually(CONVERGE, "our cache, Curator's cache and the tree agree", || async {
        let Some(tree) = direct(fw, root).await else { return false };
        let mine = ours_all(cache);
        let theirs = peer.cache_content(cid, hid).await.expect("cache.content");
        let agree = mine == tree && theirs == tree;
        if !agree && start.elapsed() > CONVERGE / 2 {
            println!("not yet:\n tree    {tree:?}\n ours    {mine:?}\n curator {theirs:?}");
        }
        agree
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_cache_and_ours_agree_after_mixed_writes_from_both_sides() {
    let started = Instant::now();
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let fw = fixtures::framework(&cs).await;
    let root = format!("/{}", fixtures::unique("cache"));
    fw.create(&root, b"root", CreateMode::Persistent).await.unwrap();

    let cid = fixtures::unique("java");
    peer.connect(&cid, &cs).await.unwrap();
    peer.cache_start(&cid, "cache", &root).await.unwrap();
    let cache = Cache::tree(&fw, &root).build().unwrap();
    let mut events = Box::pin(cache.events());
    cache.start().await.unwrap();
    fixtures::eventually(Duration::from_secs(5), "both caches initialized", || async {
        cache.is_initialized() && peer.cache_initialized(&cid, "cache").await.unwrap()
    })
    .await;

    // Both sides write at once, then stop.
    let all = paths(&root);
    let seed = fastrand::u64(..);
    println!("seed {seed}");
    let ours_task = tokio::spawn(our_writes(fw.clone(), all.clone(), seed));
    let theirs_task = tokio::spawn(curator_writes(peer.clone(), cid.clone(), all, seed ^ 0x5eed));
    let (lost_ours, lost_theirs) = (ours_task.await.unwrap(), theirs_task.await.unwrap());
    println!("{OPS} writes each; lost races: ours {lost_ours}, Curator's {lost_theirs}; {:?}", started.elapsed());
    converge(&fw, &cache, &peer, &cid, "cache", &root).await;
    println!("converged: {} nodes; {:?}", cache.len(), started.elapsed());

    // A node deleted and re-created by Curator with the same data: only its czxid tells.
    let again = format!("{root}/again");
    let first = peer.node_create(&cid, &again, b"same").await.unwrap();
    fixtures::eventually(Duration::from_secs(5), "ours sees the first node", || async {
        cache.get(&again).is_some_and(|n| n.stat.czxid == first)
    })
    .await;
    peer.node_delete(&cid, &again, false).await.unwrap();
    let second = peer.node_create(&cid, &again, b"same").await.unwrap();
    assert_ne!(first, second);
    fixtures::eventually(Duration::from_secs(5), "ours sees the re-created node", || async {
        cache.get(&again).is_some_and(|n| n.stat.czxid == second && n.stat.version == 0)
    })
    .await;
    converge(&fw, &cache, &peer, &cid, "cache", &root).await;

    // Our events for it: created, deleted, created again, and nothing in between.
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = fixtures::within(Duration::from_secs(5), events.next()).await.expect("events go on");
        match event {
            CacheEvent::Created(n) if n.path == again => seen.push(("created", n.stat.czxid)),
            CacheEvent::Deleted(n) if n.path == again => seen.push(("deleted", n.stat.czxid)),
            CacheEvent::Changed { new, .. } if new.path == again => seen.push(("changed", new.stat.czxid)),
            CacheEvent::Resynced { dropped } => panic!("our event buffer overflowed ({dropped} dropped)"),
            _ => {}
        }
    }
    assert_eq!(seen, [("created", first), ("deleted", first), ("created", second)]);

    cache.close().await.unwrap();
    peer.cache_close(&cid, "cache").await.unwrap();
    peer.close(&cid).await.unwrap();
    delete_tree(&fw, &root).await.unwrap();
    fw.close();
    println!("done in {:?}", started.elapsed());
}

/// Our events of the paths under `root`: `(kind, path, czxid)` until none came for 500 ms.
async fn drain_ours(events: &mut (impl futures_util::Stream<Item = CacheEvent> + Unpin)) -> Vec<(String, String, i64)> {
    let mut seen = Vec::new();
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(500), events.next()).await {
        match event {
            CacheEvent::Created(n) => seen.push(("created".to_string(), n.path, n.stat.czxid)),
            CacheEvent::Changed { new, .. } => seen.push(("changed".to_string(), new.path, new.stat.czxid)),
            CacheEvent::Deleted(n) => seen.push(("deleted".to_string(), n.path, n.stat.czxid)),
            _ => {}
        }
    }
    seen
}

/// Both caches follow the tree through one proxy; while the proxy blackholes them, another
/// framework deletes a node, deletes and re-creates one with the same data, replaces a
/// subtree, changes one and adds one. After the link is back (cut, so both reconnect within
/// their sessions) both caches must again equal the tree; the events of each side are printed
/// (run with `--nocapture`) and ours must report the re-created node as Deleted then Created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_caches_catch_up_with_changes_made_while_they_were_cut_off() {
    let started = Instant::now();
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let proxy = zk_recipes_testing::TcpProxy::start(&cs).await.unwrap();
    let writer = fixtures::framework(&cs).await;
    let fw = fixtures::framework(proxy.connect_string()).await;
    let root = format!("/{}", fixtures::unique("cache-cut"));
    let p = |s: &str| format!("{root}/{s}");
    for (path, data) in
        [(root.clone(), "r"), (p("keep"), "k"), (p("gone"), "g"), (p("again"), "same"), (p("changed"), "v1")]
            .into_iter()
            .chain([(p("sub"), ""), (p("sub/x"), "x"), (p("sub/x/y"), "y")])
    {
        writer.create(&path, data.as_bytes(), CreateMode::Persistent).await.unwrap();
    }

    let cid = fixtures::unique("java");
    peer.connect(&cid, proxy.connect_string()).await.unwrap();
    peer.cache_start(&cid, "cut", &root).await.unwrap();
    let cache = Cache::tree(&fw, &root).build().unwrap();
    cache.start().await.unwrap();
    fixtures::eventually(Duration::from_secs(5), "both caches initialized", || async {
        cache.is_initialized() && peer.cache_initialized(&cid, "cut").await.unwrap()
    })
    .await;
    let mut events = Box::pin(cache.events());
    drain_ours(&mut events).await;
    peer.cache_events(&cid, "cut").await.unwrap();
    let old_again = cache.get(&p("again")).unwrap().stat.czxid;

    proxy.set_mode(zk_recipes_testing::ProxyMode::Blackhole);
    writer.delete(&p("gone")).await.unwrap();
    writer.delete(&p("again")).await.unwrap();
    let new_again = writer.create(&p("again"), b"same", CreateMode::Persistent).await.unwrap().stat.czxid;
    delete_tree(&writer, &p("sub")).await.unwrap();
    writer.create(&p("sub/x"), b"x", CreateMode::Persistent).await.unwrap();
    writer.set_data(&p("changed"), b"v2", None).await.unwrap();
    writer.create(&p("new"), b"n", CreateMode::Persistent).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    proxy.set_mode(zk_recipes_testing::ProxyMode::Pass);
    proxy.cut();
    let cut = Instant::now();

    converge(&writer, &cache, &peer, &cid, "cut", &root).await;
    println!("both caches equal the tree {:?} after the cut", cut.elapsed());
    let ours = drain_ours(&mut events).await;
    // (taken after ours went quiet for 500 ms; waiting 2 s more brought no further event)
    let theirs = peer.cache_events(&cid, "cut").await.unwrap();
    println!("ours after the cut:");
    for e in &ours {
        println!("  {e:?}");
    }
    println!("Curator's after the cut:");
    for e in &theirs {
        println!("  {e:?}");
    }
    let again: Vec<_> =
        ours.iter().filter(|(_, path, _)| *path == p("again")).map(|(k, _, c)| (k.as_str(), *c)).collect();
    assert_eq!(again, [("deleted", old_again), ("created", new_again)]);

    cache.close().await.unwrap();
    peer.cache_close(&cid, "cut").await.unwrap();
    peer.close(&cid).await.unwrap();
    delete_tree(&writer, &root).await.unwrap();
    fw.close();
    writer.close();
    println!("done in {:?}", started.elapsed());
}
