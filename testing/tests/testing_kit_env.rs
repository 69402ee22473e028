//! `ZOOKEEPER_HOME` discovery. In its own test binary, with a single test, because it changes a
//! process-wide environment variable that the other tests' discovery reads.

use zk_recipes_testing::Error;
use zk_recipes_testing::{running_servers, TestingServer};

#[tokio::test]
async fn zookeeper_home_without_jars_is_an_error_not_a_fall_through() {
    let empty = tempfile::tempdir().expect("temp dir");
    // The only test of this binary: no other thread reads the environment meanwhile.
    std::env::set_var("ZOOKEEPER_HOME", empty.path());
    let err = TestingServer::start().await.unwrap_err();
    std::env::remove_var("ZOOKEEPER_HOME");
    match err {
        Error::ZooKeeperNotInstalled { searched, .. } => {
            assert!(searched.contains("ZOOKEEPER_HOME"), "{searched}");
            assert!(searched.contains(&empty.path().display().to_string()), "{searched}");
        }
        other => panic!("expected ZooKeeperNotInstalled, got {other:?}"),
    }
    assert_eq!(running_servers(), 0);
}
