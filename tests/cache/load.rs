//! Big loads (CURATOR-690): more than 65,535 children under one node, and a tree of 100,001
//! nodes, load completely: every node, a sample of their data, one `Initialized`. Each test
//! runs on a server of its own (the shared one stays small for the other tests); the nodes are
//! made with pipelined creates, at most `IN_FLIGHT` unanswered. Neither the server nor this
//! crate's client limits the size of a reply, so nothing is configured: see the README's Caches
//! section about `jute.maxbuffer`.

use std::time::{Duration, Instant};

use futures_util::{stream, StreamExt};
use zk_recipes::zk::Acls;
use zk_recipes::{Cache, CacheEvent, Framework};
use zk_recipes_testing::{fixtures, TestingServer};

const IN_FLIGHT: usize = 1_000;
/// The whole test, creation included.
const LIMIT: Duration = Duration::from_secs(120);

/// Creates every path (parents first, in order) with its own name as data, pipelined.
async fn create_all(fw: &Framework, paths: &[String]) {
    let client = fw.client().unwrap();
    let options = zk_recipes::zk::CreateMode::Persistent.with_acls(Acls::anyone_all());
    let mut created = stream::iter(paths).map(|p| client.create(p, p.as_bytes(), &options)).buffered(IN_FLIGHT);
    while let Some(result) = created.next().await {
        result.unwrap();
    }
}

/// Resident memory of this process, bytes (Linux `/proc/self/statm`; 0 elsewhere).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// Starts a tree cache on `root` (subscribed before the start), waits for `Initialized`, and
/// checks that it holds exactly `paths` with their data (all of them; the data of every 97th
/// is compared through `get`, all through the snapshot) and that `Initialized` came once.
async fn load_and_check(fw: &Framework, root: &str, paths: &[String]) {
    let expected = paths.len();
    let before = rss();
    let started = Instant::now();
    let cache = Cache::tree(fw, root).event_capacity(expected + 16).build().unwrap();
    let mut events = Box::pin(cache.events());
    cache.start().await.unwrap();
    let (mut created, mut initialized) = (0usize, 0usize);
    while initialized == 0 {
        match tokio::time::timeout(LIMIT, events.next()).await.expect("Initialized in time").expect("events") {
            CacheEvent::Created(_) => created += 1,
            CacheEvent::Initialized => initialized += 1,
            other => panic!("unexpected event during the load: {other:?}"),
        }
    }
    let took = started.elapsed();
    let after = rss();
    eprintln!(
        "load of {expected} nodes: {:.2} s; RSS {:.1} -> {:.1} MiB (+{:.0} bytes per node)",
        took.as_secs_f64(),
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        after.saturating_sub(before) as f64 / expected as f64
    );
    assert!(cache.is_initialized());
    assert_eq!(created, expected, "one Created per node before Initialized");
    assert_eq!(cache.len(), expected);
    for p in paths.iter().step_by(97) {
        assert_eq!(cache.get(p).unwrap().data.as_deref(), Some(p.as_bytes()), "{p}");
    }
    let snapshot = cache.snapshot();
    assert_eq!(snapshot.len(), expected);
    for p in paths {
        assert_eq!(snapshot[p].data.as_deref(), Some(p.as_bytes()), "{p}");
    }
    // nothing more comes: no second Initialized, no resync
    assert!(tokio::time::timeout(Duration::from_millis(300), events.next()).await.is_err());
    cache.close().await.unwrap();
}

#[tokio::test]
async fn more_than_65535_children_under_one_node() {
    fixtures::within(LIMIT, async {
        let server = TestingServer::start().await.unwrap();
        let fw = fixtures::framework(server.connect_string()).await;
        let root = "/wide".to_string();
        let mut paths = vec![root.clone()];
        // names of 16 bytes: the listing's reply is 70,000 × 20 bytes ≈ 1.4 MB, above the 1 MiB
        // (jute.maxbuffer's default) that a Java client accepts
        paths.extend((0..70_000).map(|i| format!("{root}/child-{i:010}")));
        let t = Instant::now();
        create_all(&fw, &paths).await;
        eprintln!("created {} nodes in {:.2} s", paths.len(), t.elapsed().as_secs_f64());
        let names = fw.children(&root).await.unwrap();
        assert_eq!(names.len(), 70_000);
        assert!(names.iter().map(|n| n.len() + 4).sum::<usize>() > 1 << 20);
        load_and_check(&fw, &root, &paths).await;
        fw.close();
    })
    .await;
}

/// 100,001 nodes: the root, 100 children, 999 grandchildren under each.
#[tokio::test]
async fn a_tree_of_100_001_nodes() {
    fixtures::within(LIMIT, async {
        let server = TestingServer::start().await.unwrap();
        let fw = fixtures::framework(server.connect_string()).await;
        let root = "/big".to_string();
        let mut paths = vec![root.clone()];
        paths.extend((0..100).map(|i| format!("{root}/d{i}")));
        for i in 0..100 {
            paths.extend((0..999).map(|j| format!("{root}/d{i}/n{j}")));
        }
        let t = Instant::now();
        create_all(&fw, &paths).await;
        eprintln!("created {} nodes in {:.2} s", paths.len(), t.elapsed().as_secs_f64());
        load_and_check(&fw, &root, &paths).await;
        fw.close();
    })
    .await;
}
