//! Framework-wide compression (Curator 5.8's `enableCompression()`) through every recipe it
//! covers, against a real server: under `enable_compression()` each recipe's node data is
//! stored gzip (read back raw through `uncompressed()`) and the recipe round-trips; a plain
//! framework stores the same recipes plain; a node that is not gzip under a compressing
//! framework is left out of a cache, which goes on.

use std::time::Duration;

use serde_json::Value;
use zk_recipes::{
    Cache, CompressionProvider, CreateMode, DistributedAtomicLong, DistributedBarrier, Framework, GroupMember,
    GzipCompression, LeaderLatch, NodeMode, PersistentNode, PersistentTtlNode, ServiceDiscovery, ServiceInstance,
};
use zk_recipes_testing::fixtures;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const WAIT: Duration = Duration::from_secs(20);

/// The node's stored bytes, asserted gzip, decompressed.
async fn gunzipped(fw: &Framework, path: &str) -> Vec<u8> {
    let (stored, _) = fw.uncompressed().get_data(path).await.unwrap();
    assert!(stored.len() >= 20 && stored[..2] == GZIP_MAGIC, "{path} is stored gzipped: {stored:?}");
    GzipCompression::default().decompress(path, &stored).unwrap()
}

/// The node's stored bytes, asserted not gzip.
async fn plain(fw: &Framework, path: &str) -> Vec<u8> {
    let (stored, _) = fw.uncompressed().get_data(path).await.unwrap();
    assert!(stored.len() < 2 || stored[..2] != GZIP_MAGIC, "{path} is stored plain: {stored:?}");
    stored
}

async fn frameworks(what: &str) -> (Framework, Framework, String) {
    let cs = fixtures::shared_ttl_server().await;
    let gz = fixtures::framework_with(&cs, |b| b.enable_compression()).await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique(what));
    (gz, fw, base)
}

#[tokio::test]
async fn atomic_values_store_their_value_compressed() {
    let (gz, fw, base) = frameworks("gz-atomic").await;
    let path = format!("{base}/long");
    let long = DistributedAtomicLong::new(&gz, &path).unwrap();
    assert_eq!(long.get().await.unwrap(), 0, "missing reads as 0");
    assert!(long.initialize(40).await.unwrap());
    assert_eq!(gunzipped(&fw, &path).await, 40i64.to_be_bytes());
    assert!(long.add(2).await.unwrap().succeeded);
    assert_eq!(gunzipped(&fw, &path).await, 42i64.to_be_bytes());
    assert_eq!(long.get().await.unwrap(), 42);
    let cas = long.compare_and_set(42, 7).await.unwrap();
    assert!(cas.succeeded && cas.pre_value == 42 && cas.post_value == 7, "{cas:?}");
    // a second value on the same node (another process) reads it
    assert_eq!(DistributedAtomicLong::new(&gz, &path).unwrap().get().await.unwrap(), 7);
    // an increment from nothing creates the node compressed (gzip of nothing reads as 0)
    let fresh = format!("{base}/fresh");
    let from_nothing = DistributedAtomicLong::new(&gz, &fresh).unwrap();
    assert_eq!(from_nothing.increment().await.unwrap().post_value, 1);
    assert_eq!(gunzipped(&fw, &fresh).await, 1i64.to_be_bytes());
    // many contending adds (the queue, the gate, the exactly-once markers) still sum up
    let adds = (0..4).map(|_| {
        let long = DistributedAtomicLong::new(&gz, &fresh).unwrap();
        tokio::spawn(async move {
            for _ in 0..25 {
                long.add(1).await.unwrap();
            }
            long.close().await.unwrap();
        })
    });
    futures_util::future::join_all(adds).await.into_iter().for_each(|r| r.unwrap());
    assert_eq!(from_nothing.get().await.unwrap(), 101);
    assert_eq!(gunzipped(&fw, &fresh).await, 101i64.to_be_bytes());
    // data that is not gzip is a typed error, as in Curator
    fw.set_data(&fresh, &5i64.to_be_bytes(), None).await.unwrap();
    assert_eq!(from_nothing.get().await.unwrap_err().kind(), zk_recipes::ErrorKind::CorruptData);
    // and a plain framework stores plain bytes
    let plain_path = format!("{base}/plain");
    DistributedAtomicLong::new(&fw, &plain_path).unwrap().initialize(3).await.unwrap();
    assert_eq!(plain(&fw, &plain_path).await, 3i64.to_be_bytes());
    long.close().await.unwrap();
    from_nothing.close().await.unwrap();
}

#[tokio::test]
async fn discovery_registrations_are_compressed_json() {
    let (gz, fw, base) = frameworks("gz-discovery").await;
    let ours = ServiceDiscovery::<Value>::new(&gz, &base).unwrap();
    let me = ServiceInstance::builder("orders").id("r1").address("10.0.0.9").port(8080).build().unwrap();
    let path = ours.register(&me).await.unwrap();
    let json: Value = serde_json::from_slice(&gunzipped(&fw, &path).await).unwrap();
    assert_eq!(
        (json["name"].as_str(), json["id"].as_str(), json["port"].as_u64()),
        (Some("orders"), Some("r1"), Some(8080))
    );
    // queries, the service cache and a provider read it decompressed
    let found = ours.query_for_instances("orders").await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].id.as_str(), found[0].port), ("r1", Some(8080)));
    assert_eq!(ours.query_for_instance("orders", "r1").await.unwrap().unwrap().address.as_deref(), Some("10.0.0.9"));
    let cache = ours.service_cache("orders").unwrap();
    cache.start().await.unwrap();
    tokio::time::timeout(WAIT, cache.initialized()).await.unwrap().unwrap();
    assert_eq!(cache.instances().iter().map(|i| i.id.clone()).collect::<Vec<_>>(), ["r1"]);
    // an update is written compressed and seen by the cache
    let mut moved = me.clone();
    moved.port = Some(9090);
    ours.update(&moved).unwrap();
    let mut changes = Box::pin(cache.changes());
    tokio::time::timeout(WAIT, async {
        while cache.instances().first().and_then(|i| i.port) != Some(9090) {
            futures_util::StreamExt::next(&mut changes).await;
        }
    })
    .await
    .unwrap();
    let json: Value = serde_json::from_slice(&gunzipped(&fw, &path).await).unwrap();
    assert_eq!(json["port"].as_u64(), Some(9090));
    // a plain registry reads the gzip as no JSON: Curator 5.4 without compression would too
    let plain_registry = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
    assert!(plain_registry.query_for_instance("orders", "r1").await.is_err());
    cache.close().await.unwrap();
    ours.close().await.unwrap();
}

#[tokio::test]
async fn leader_participants_hold_their_ids_compressed() {
    let (gz, fw, base) = frameworks("gz-leader").await;
    let first = LeaderLatch::new(&gz, &base, "replica-1").unwrap();
    first.start().await.unwrap();
    tokio::time::timeout(WAIT, first.await_leadership()).await.unwrap().unwrap();
    let second = LeaderLatch::new(&gz, &base, "replica-2").unwrap();
    second.start().await.unwrap();
    let participants = tokio::time::timeout(WAIT, async {
        loop {
            let p = first.participants().await.unwrap();
            if p.len() == 2 {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(participants.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), ["replica-1", "replica-2"]);
    assert!(participants[0].is_leader);
    for p in &participants {
        assert_eq!(gunzipped(&fw, &p.node).await, p.id.as_bytes());
    }
    // a plain framework's participants show the stored bytes (inspect shows what is stored)
    let plain_view = LeaderLatch::new(&fw, &base, "viewer").unwrap();
    assert!(plain_view.participants().await.unwrap().iter().all(|p| p.id.as_bytes() != b"replica-1"));
    // the selector's node holds the id compressed too
    let sel_path = format!("{base}-selector");
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let selector = zk_recipes::LeaderSelector::new(&gz, &sel_path, "sel-1", move |_ctx| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(()).await;
            std::future::pending::<()>().await
        }
    })
    .unwrap();
    selector.start().await.unwrap();
    tokio::time::timeout(WAIT, rx.recv()).await.unwrap().unwrap();
    let p = selector.participants().await.unwrap();
    assert_eq!((p.len(), p[0].id.as_str()), (1, "sel-1"));
    assert_eq!(gunzipped(&fw, &p[0].node).await, b"sel-1");
    selector.close().await.unwrap();
    first.close().await.unwrap();
    second.close().await.unwrap();
}

#[tokio::test]
async fn persistent_nodes_group_members_and_ttl_nodes_are_compressed() {
    let (gz, fw, base) = frameworks("gz-nodes").await;
    let path = format!("{base}/node");
    let node = PersistentNode::new(&gz, &path, NodeMode::Ephemeral, "hello").unwrap();
    node.start().await.unwrap();
    node.wait_for_initial_create(WAIT).await.unwrap();
    assert_eq!(gunzipped(&fw, &path).await, b"hello");
    node.set_data("changed").unwrap();
    tokio::time::timeout(WAIT, async {
        while fw.compressed().get_data(&path).await.map(|d| d.0).ok().as_deref() != Some(&b"changed"[..]) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(node.data(), b"changed");
    // the keeper compares decompressed data: the gzip it wrote is not written again
    let version = fw.exists(&path).await.unwrap().unwrap().version;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fw.exists(&path).await.unwrap().unwrap().version, version);
    node.close().await.unwrap();

    // group members: written compressed, members() decompressed
    let group = format!("{base}/group");
    let member = GroupMember::new(&gz, &group, "m1", "payload-1").unwrap();
    member.start().await.unwrap();
    member.wait_for_initial_create(WAIT).await.unwrap();
    assert_eq!(gunzipped(&fw, &format!("{group}/m1")).await, b"payload-1");
    tokio::time::timeout(WAIT, async {
        while member.members().get("m1").map(Vec::as_slice) != Some(&b"payload-1"[..]) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    member.close().await.unwrap();

    // TTL node: the container node and its touched child hold gzip
    let ttl_path = format!("{base}/ttl");
    let ttl = PersistentTtlNode::new(&gz, &ttl_path, Duration::from_secs(30), "ttl-data").unwrap();
    ttl.start().await.unwrap();
    ttl.wait_for_initial_create(WAIT).await.unwrap();
    assert_eq!(gunzipped(&fw, &ttl_path).await, b"ttl-data");
    let children = fw.children(&ttl_path).await.unwrap();
    assert_eq!(children.len(), 1, "{children:?}");
    gunzipped(&fw, &format!("{ttl_path}/{}", children[0])).await;
    ttl.close().await.unwrap();

    // a plain framework's node stays plain
    let plain_path = format!("{base}/plain");
    let plain_node = PersistentNode::new(&fw, &plain_path, NodeMode::Ephemeral, "p").unwrap();
    plain_node.start().await.unwrap();
    plain_node.wait_for_initial_create(WAIT).await.unwrap();
    assert_eq!(plain(&fw, &plain_path).await, b"p");
    plain_node.close().await.unwrap();
}

#[tokio::test]
async fn a_compressing_cache_decompresses_and_leaves_out_plain_nodes() {
    let (gz, fw, base) = frameworks("gz-cache").await;
    gz.create(&format!("{base}/a"), b"alpha", CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{base}/plain"), b"not gzip", CreateMode::Persistent).await.unwrap();
    let cache = Cache::tree(&gz, &base).build().unwrap();
    cache.start().await.unwrap();
    tokio::time::timeout(WAIT, cache.initialized()).await.unwrap().unwrap();
    // the root (created as a container parent, empty, never compressed) and `a` decompressed;
    // the plain node is left out (and logged), the cache goes on
    assert_eq!(cache.get(&base).unwrap().data.as_deref(), Some(&b""[..]));
    assert_eq!(cache.get(&format!("{base}/a")).unwrap().data.as_deref(), Some(&b"alpha"[..]));
    assert!(cache.get(&format!("{base}/plain")).is_none());
    assert!(cache.failure().is_none());
    // later changes still arrive, decompressed; a plain node turned gzip appears
    gz.set_data(&format!("{base}/a"), b"beta", None).await.unwrap();
    gz.set_data(&format!("{base}/plain"), b"now gzip", None).await.unwrap();
    tokio::time::timeout(WAIT, async {
        loop {
            let a = cache.get(&format!("{base}/a")).and_then(|n| n.data);
            let p = cache.get(&format!("{base}/plain")).and_then(|n| n.data);
            if a.as_deref() == Some(&b"beta"[..]) && p.as_deref() == Some(&b"now gzip"[..]) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    // a plain framework's cache holds the stored bytes
    let raw = Cache::tree(&fw, &base).build().unwrap();
    raw.start().await.unwrap();
    tokio::time::timeout(WAIT, raw.initialized()).await.unwrap().unwrap();
    assert_eq!(raw.get(&format!("{base}/a")).unwrap().data.unwrap()[..2], GZIP_MAGIC);
    raw.close().await.unwrap();
    cache.close().await.unwrap();
}

#[tokio::test]
async fn barrier_nodes_hold_compressed_default_data() {
    let (gz, fw, base) = frameworks("gz-barrier").await;
    let path = format!("{base}/barrier");
    DistributedBarrier::new(&gz, &path).unwrap().set_barrier().await.unwrap();
    assert_eq!(gunzipped(&fw, &path).await, gz.default_data());
    let plain_path = format!("{base}/plain-barrier");
    DistributedBarrier::new(&fw, &plain_path).unwrap().set_barrier().await.unwrap();
    assert_eq!(plain(&fw, &plain_path).await, fw.default_data());
}

/// The locks' node data (the mutex's own, a read-write side's and a lease's default data, a
/// downgrade's read node) is stored gzip under `enable_compression()`, as Curator 5.8 writes
/// it; the locks still exclude, and revocation works whichever side compresses `__REVOKE__`.
#[tokio::test]
async fn lock_nodes_store_their_data_compressed_and_revocation_reads_either_form() {
    use zk_recipes::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2};
    let (gz, fw, base) = frameworks("gz-locks").await;
    let mutex = InterProcessMutex::new(&gz, &format!("{base}/mutex")).unwrap().with_data(b"owner-7".to_vec());
    let held = mutex.acquire().await.unwrap();
    assert_eq!(gunzipped(&fw, held.path()).await, b"owner-7");
    assert!(InterProcessMutex::new(&fw, &format!("{base}/mutex")).unwrap().try_acquire().await.unwrap().is_none());
    held.release().await.unwrap();

    let rw = InterProcessReadWriteLock::new(&gz, &format!("{base}/rw")).unwrap();
    let write = rw.write_lock().acquire().await.unwrap();
    gunzipped(&fw, write.path()).await;
    let read = write.downgrade().await.unwrap();
    gunzipped(&fw, read.path()).await;
    read.release().await.unwrap();
    let lease = InterProcessSemaphoreV2::new(&gz, &format!("{base}/sem"), 1).unwrap().acquire().await.unwrap();
    gunzipped(&fw, lease.path()).await;
    lease.release().await.unwrap();
    // a plain framework's lock stays plain
    let plain_hold = InterProcessMutex::new(&fw, &format!("{base}/plain")).unwrap().acquire().await.unwrap();
    plain(&fw, plain_hold.path()).await;

    // revocation: asked by a compressing framework (gzip `__REVOKE__`) of a plain holder, and
    // by a plain one of a compressing holder
    let revocable =
        |f: &Framework, name: &str| InterProcessMutex::new(f, &format!("{base}/{name}")).unwrap().revocable();
    let plain_holder = revocable(&fw, "rev-a").acquire().await.unwrap();
    InterProcessMutex::request_revoke(&gz, plain_holder.path()).await.unwrap();
    gunzipped(&fw, plain_holder.path()).await;
    tokio::time::timeout(WAIT, plain_holder.revoked()).await.expect("a gzip revoke request is seen");
    let gz_holder = revocable(&gz, "rev-b").acquire().await.unwrap();
    InterProcessMutex::request_revoke(&fw, gz_holder.path()).await.unwrap();
    tokio::time::timeout(WAIT, gz_holder.revoked()).await.expect("a plain revoke request is seen");
    drop((plain_holder, gz_holder, plain_hold));
}
