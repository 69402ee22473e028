//! With digest auth and a creator-only ACL, other sessions cannot touch our recipe nodes, and
//! the recipes still work.

use assert_matches::assert_matches;
use zk_recipes::Acl;
use zk_recipes::ZooKeeperError;
use zk_recipes::{DistributedAtomicLong, Error, Framework, InterProcessMutex};
use zk_recipes_testing::fixtures;

async fn owner(cs: &str) -> Framework {
    Framework::builder()
        .connect_string(cs)
        .auth("digest", "svc:s3cret")
        .default_acl(Acl::creator_all())
        .connect()
        .await
        .unwrap()
}

#[tokio::test]
async fn creator_only_nodes_are_safe_from_other_sessions() {
    let cs = fixtures::shared_server().await;
    let a = owner(&cs).await;
    let b = owner(&cs).await;
    let stranger = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("acl"));

    // locks work between two sessions of the same identity
    let lock = format!("{base}/lock");
    let held = InterProcessMutex::new(&a, &lock).unwrap().acquire().await.unwrap();
    let other = InterProcessMutex::new(&b, &lock).unwrap();
    assert!(other.try_acquire().await.unwrap().is_none());
    // a stranger can neither delete the holder's node nor queue
    assert_matches!(stranger.delete(held.path()).await.unwrap_err(), Error::ZooKeeper(ZooKeeperError::NoAuth));
    assert_matches!(
        stranger.set_data(held.path(), b"__REVOKE__", None).await.unwrap_err(),
        Error::ZooKeeper(ZooKeeperError::NoAuth)
    );
    let intruder = InterProcessMutex::new(&stranger, &lock).unwrap();
    assert_matches!(intruder.try_acquire().await.unwrap_err(), Error::ZooKeeper(ZooKeeperError::NoAuth));
    held.release().await.unwrap();
    assert!(other.try_acquire().await.unwrap().is_some());

    // counters
    let counter = format!("{base}/counter");
    let ours = DistributedAtomicLong::new(&a, &counter).unwrap();
    assert_eq!(ours.add(5).await.unwrap().post_value, 5);
    assert_eq!(DistributedAtomicLong::new(&b, &counter).unwrap().increment().await.unwrap().post_value, 6);
    let theirs = DistributedAtomicLong::new(&stranger, &counter).unwrap();
    assert_matches!(theirs.increment().await.unwrap_err(), Error::ZooKeeper(ZooKeeperError::NoAuth));
    assert_matches!(
        stranger.set_data(&counter, &99i64.to_be_bytes(), None).await.unwrap_err(),
        Error::ZooKeeper(ZooKeeperError::NoAuth)
    );
    assert_matches!(stranger.delete(&counter).await.unwrap_err(), Error::ZooKeeper(ZooKeeperError::NoAuth));
    assert_eq!(ours.get().await.unwrap(), 6);
    ours.close().await.unwrap();
}
