//! Writes and reads through a plain `zookeeper-client` client: what the kit's servers hold,
//! seen without the library.

use zookeeper_client::{Acls, Client, CreateMode};

/// Creates a persistent node, open to anyone.
pub async fn create(connect_string: &str, path: &str, data: &[u8]) {
    let client = Client::connect(connect_string).await.expect("connect");
    client.create(path, data, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.expect("create");
}

/// The node's data.
pub async fn read(connect_string: &str, path: &str) -> Vec<u8> {
    let client = Client::connect(connect_string).await.expect("connect");
    client.get_data(path).await.expect("get_data").0
}

/// Partitions `cluster`'s leader, waits until the two others elect one of theirs and the cut-off
/// server stops serving, checks that its client port still answers (a partition cuts the peer
/// links only), writes through the majority, heals, and checks that the healed server rejoins as
/// a follower under the new leader and has caught up. Each wait ends within `wait`.
pub async fn partition_the_leader_and_heal(cluster: &zk_recipes_testing::TestingCluster, wait: std::time::Duration) {
    use zk_recipes_testing::ServerMode;
    let until = |what: &'static str| (std::time::Instant::now() + wait, what);
    let leader = cluster.wait_for_leader(wait).await.expect("a leader");
    cluster.partition(leader).await.expect("partition");
    cluster.partition(leader).await.expect("partitioning twice is fine");
    let (deadline, what) = until("a new leader among the others");
    let new_leader = loop {
        let modes = cluster.modes().await;
        if let Some(i) = (0..3).find(|&i| i != leader && modes[i] == Some(ServerMode::Leader)) {
            break i;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {modes:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(cluster.is_running(leader), "a partitioned server keeps running");
    let (deadline, what) = until("the cut-off server to stop serving");
    while cluster.mode(leader).await.expect("mode").is_some() {
        assert!(std::time::Instant::now() < deadline, "{what}: {:?}", cluster.modes().await);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Its clients still reach it: the port answers, the server says it has no quorum (a cut
    // client port would refuse or time out instead).
    let cut_off = cluster.server_connect_string(leader).expect("connect string");
    let answer = zk_recipes_testing::four_letter_word(cut_off, "srvr").await.expect("the client port answers");
    assert!(answer.contains("not currently serving"), "{answer}");
    let majority: Vec<&str> =
        (0..3).filter(|&i| i != leader).map(|i| cluster.server_connect_string(i).unwrap()).collect();
    create(&majority.join(","), "/while-partitioned", b"p").await;

    cluster.heal(leader).await.expect("heal");
    cluster.heal(leader).await.expect("healing twice is fine");
    let (deadline, what) = until("the healed server rejoining as a follower");
    while cluster.mode(leader).await.expect("mode") != Some(ServerMode::Follower) {
        assert!(std::time::Instant::now() < deadline, "{what}: {:?}", cluster.modes().await);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(cluster.leader().await.expect("leader"), Some(new_leader));
    let healed = cluster.server_connect_string(leader).expect("connect string");
    assert_eq!(read(healed, "/while-partitioned").await, b"p", "the healed server caught up");
}
