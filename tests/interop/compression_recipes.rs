//! Framework-wide compression through the recipes with a real Curator (5.4, the peer): Curator
//! 5.8's `enableCompression()` makes every recipe's create/setData compress and getData
//! decompress, which 5.4 has per call only. So each recipe is proven per operation: Curator's
//! `.decompressed()` reads what our recipe wrote under `enable_compression()`, and our recipe
//! reads what Curator wrote with `.compressed()` (as a 5.8 recipe writes it): an atomic long,
//! registrations, a latch, a group member, a lock and its revocation.

use serde_json::Value;
use zk_recipes::{DistributedAtomicLong, Framework, GroupMember, LeaderLatch, ServiceDiscovery, ServiceInstance};
use zk_recipes_testing::fixtures;

const CID: &str = "gzip-recipes-java";
const WAIT: std::time::Duration = std::time::Duration::from_secs(20);

async fn compressing(cs: &str) -> Framework {
    fixtures::framework_with(cs, |b| b.enable_compression()).await
}

#[tokio::test]
async fn recipes_share_compressed_data_with_curator() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    peer.connect(CID, &cs).await.unwrap();
    let gz = compressing(&cs).await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("interop-gzip-recipes"));

    // DistributedAtomicLong: 8 big-endian bytes, compressed
    let counter = format!("{base}/counter");
    let long = DistributedAtomicLong::new(&gz, &counter).unwrap();
    long.add(41).await.unwrap();
    assert_eq!(peer.gzip_get(CID, &counter).await.unwrap(), 41i64.to_be_bytes(), "Curator reads our value");
    peer.gzip_set(CID, &counter, &1000i64.to_be_bytes()).await.unwrap();
    assert_eq!(long.get().await.unwrap(), 1000, "we read Curator's value");
    assert_eq!(long.increment().await.unwrap().post_value, 1001);
    assert_eq!(peer.gzip_get(CID, &counter).await.unwrap(), 1001i64.to_be_bytes());
    long.close().await.unwrap();

    // service discovery: Curator's own JSON (written plain by curator-x-discovery 5.4, then
    // stored compressed by Curator as a 5.8 registry would) read by ours; ours read by Curator
    let plain_base = format!("{base}/plain-services");
    peer.discovery_start(CID, "d", &plain_base).await.unwrap();
    peer.discovery_register(CID, "d", "orders", "j1", "10.0.0.7", 8080, Some(8443), None).await.unwrap();
    let services = format!("{base}/services");
    let ours = ServiceDiscovery::<Value>::new(&gz, &services).unwrap();
    let me = ServiceInstance::builder("orders").id("r1").address("10.0.0.9").port(9090).build().unwrap();
    let path = ours.register(&me).await.unwrap();
    let json: Value = serde_json::from_slice(&peer.gzip_get(CID, &path).await.unwrap()).unwrap();
    assert_eq!(
        (json["id"].as_str(), json["address"].as_str(), json["port"].as_u64()),
        (Some("r1"), Some("10.0.0.9"), Some(9090))
    );
    // Curator's JSON for an instance, as its serializer wrote it, re-written compressed by
    // Curator at our registry
    let curators_json = fw.get_data(&format!("{plain_base}/orders/j1")).await.unwrap().0;
    peer.gzip_create(CID, &format!("{services}/orders/j1"), &curators_json).await.unwrap();
    let found = ours.query_for_instance("orders", "j1").await.unwrap().unwrap();
    assert_eq!((found.address.as_deref(), found.port, found.ssl_port), (Some("10.0.0.7"), Some(8080), Some(8443)));
    let mut ids: Vec<_> = ours.query_for_instances("orders").await.unwrap().into_iter().map(|i| i.id).collect();
    ids.sort();
    assert_eq!(ids, ["j1", "r1"]);
    peer.discovery_close(CID, "d").await.unwrap();
    ours.close().await.unwrap();

    // leader latch: our participant's id, and a node as Curator 5.8's LeaderLatch writes it
    let election = format!("{base}/election");
    let latch = LeaderLatch::new(&gz, &election, "rust-1").unwrap();
    latch.start().await.unwrap();
    tokio::time::timeout(WAIT, latch.await_leadership()).await.unwrap().unwrap();
    let node = latch.participants().await.unwrap()[0].node.clone();
    assert_eq!(peer.gzip_get(CID, &node).await.unwrap(), b"rust-1", "Curator reads our id");
    let java_node = peer.gzip_create_protected(CID, &format!("{election}/latch-"), b"java-1").await.unwrap();
    assert_eq!(fw.get_data(&java_node).await.unwrap().0[..2], [0x1f, 0x8b], "Curator stored gzip");
    let participants = latch.participants().await.unwrap();
    let seen: Vec<_> = participants.iter().map(|p| (p.id.as_str(), p.is_leader)).collect();
    assert_eq!(seen, [("rust-1", true), ("java-1", false)], "we read Curator's id at {java_node}");
    latch.close().await.unwrap();

    // group member (a PersistentNode + a cache): ours read by Curator, Curator's read by ours
    let group = format!("{base}/group");
    let member = GroupMember::new(&gz, &group, "rust", "r-data").unwrap();
    member.start().await.unwrap();
    member.wait_for_initial_create(WAIT).await.unwrap();
    assert_eq!(peer.gzip_get(CID, &format!("{group}/rust")).await.unwrap(), b"r-data");
    peer.gzip_create(CID, &format!("{group}/java"), b"j-data").await.unwrap();
    assert_eq!(fw.get_data(&format!("{group}/java")).await.unwrap().0[..2], [0x1f, 0x8b]);
    tokio::time::timeout(WAIT, async {
        while member.members().get("java").map(Vec::as_slice) != Some(&b"j-data"[..]) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    member.close().await.unwrap();

    // a lock: Curator reads our compressed lock node; a node as Curator 5.8's mutex writes it
    // (protected, ephemeral-sequential, compressed) excludes ours until it goes; a compressed
    // `__REVOKE__` (5.8's Revoker) is a revocation request to our holder
    let dir = format!("{base}/lock");
    let mutex = zk_recipes::InterProcessMutex::new(&gz, &dir).unwrap().with_data(b"rust-holder".to_vec());
    let held = mutex.acquire().await.unwrap();
    assert_eq!(peer.gzip_get(CID, held.path()).await.unwrap(), b"rust-holder", "Curator reads our lock node");
    let java_node = peer.gzip_create_protected(CID, &format!("{dir}/lock-"), b"java-holder").await.unwrap();
    held.release().await.unwrap();
    assert!(mutex.try_acquire().await.unwrap().is_none(), "Curator's compressed node {java_node} holds now");
    fw.delete(&java_node).await.unwrap();
    let held = tokio::time::timeout(WAIT, zk_recipes::InterProcessMutex::new(&gz, &dir).unwrap().revocable().acquire())
        .await
        .unwrap()
        .unwrap();
    peer.gzip_set(CID, held.path(), b"__REVOKE__").await.unwrap();
    tokio::time::timeout(WAIT, held.revoked()).await.expect("a compressed revoke request is seen");
    held.release().await.unwrap();
    peer.close(CID).await.unwrap();
}
