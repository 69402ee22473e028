//! Writes guarded by a hold (`Transaction::guarded_by`): they commit while the hold is held,
//! and are refused — nothing applied — once its node is gone or its session expired; the
//! next holder's guarded writes commit.

use zk_recipes::zk::CreateMode;
use zk_recipes::{Error, LeaderLatch, LossReason};
use zk_recipes_testing::{expire_session, fixtures};

use super::{Kind, Lock, KINDS, WAIT};

#[tokio::test]
async fn a_guarded_write_commits_while_held_and_is_refused_once_the_node_is_gone() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    for kind in KINDS {
        let base = format!("/{}", fixtures::unique("guarded"));
        let data = format!("{base}-data");
        fw.create(&data, b"0", CreateMode::Persistent).await.unwrap();
        let hold = Lock::new(kind, &fw, &format!("{base}/lock")).acquire().await;
        fw.transaction().guarded_by(&hold).set_data(&data, b"1", Some(0)).commit().await.unwrap();
        // someone deletes our node; we have not looked at it since
        other.delete(hold.path()).await.unwrap();
        let refused = fw.transaction().guarded_by(&hold).set_data(&data, b"2", None).commit().await;
        assert!(
            matches!(&refused, Err(Error::LockLost { path, reason: LossReason::NodeDeleted }) if path == hold.path()),
            "{kind:?}: {refused:?}"
        );
        assert_eq!(fw.get_data(&data).await.unwrap().0, b"1", "{kind:?}: nothing applied");
        assert_eq!(tokio::time::timeout(WAIT, hold.lost()).await.unwrap(), LossReason::NodeDeleted, "{kind:?}");
        // a refused write stays refused (the loss is known now, nothing is sent)
        let again = fw.transaction().guarded_by(&hold).set_data(&data, b"3", None).commit().await;
        assert!(matches!(again, Err(Error::LockLost { .. })), "{kind:?}: {again:?}");
        let _ = hold.release().await;
    }
}

/// After its session expired, the old holder's guarded writes are refused and the new
/// holder's commit: at no point do two holders both write.
#[tokio::test]
async fn after_expiry_only_the_new_holder_writes() {
    let cs = fixtures::shared_server().await;
    for kind in [Kind::Mutex, Kind::SemaphoreMutex] {
        let old = fixtures::framework(&cs).await;
        let new = fixtures::framework(&cs).await;
        let base = format!("/{}", fixtures::unique("guarded-expiry"));
        let data = format!("{base}-data");
        old.create(&data, b"", CreateMode::Persistent).await.unwrap();
        let lock = format!("{base}/lock");
        let first = Lock::new(kind, &old, &lock).acquire().await;
        old.transaction().guarded_by(&first).set_data(&data, b"old", None).commit().await.unwrap();
        expire_session(&old).await.unwrap();
        let second = Lock::new(kind, &new, &lock).acquire_timeout(WAIT).await.expect("free after expiry");
        new.transaction().guarded_by(&second).set_data(&data, b"new", None).commit().await.unwrap();
        let late = old.transaction().guarded_by(&first).set_data(&data, b"old-again", None).commit().await;
        assert!(matches!(late, Err(Error::LockLost { .. })), "{kind:?}: {late:?}");
        assert_eq!(new.get_data(&data).await.unwrap().0, b"new", "{kind:?}");
        second.release().await.unwrap();
    }
}

#[tokio::test]
async fn a_write_guarded_by_leadership() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("guarded-leader"));
    let data = format!("{path}-data");
    fw.create(&data, b"", CreateMode::Persistent).await.unwrap();
    let latch = LeaderLatch::new(&fw, &path, "a").unwrap();
    let refused =
        fw.transaction().guarded_by_leadership(&latch.leadership()).set_data(&data, b"x", None).commit().await;
    assert!(matches!(refused, Err(Error::LockLost { .. })), "not started: not leading: {refused:?}");
    latch.start().await.unwrap();
    latch.await_leadership().await.unwrap();
    let leadership = latch.leadership();
    fw.transaction().guarded_by_leadership(&leadership).set_data(&data, b"led", None).commit().await.unwrap();
    latch.close().await.unwrap();
    let late = fw.transaction().guarded_by_leadership(&leadership).set_data(&data, b"late", None).commit().await;
    assert!(matches!(late, Err(Error::LockLost { reason: LossReason::NodeDeleted, .. })), "{late:?}");
    assert_eq!(fw.get_data(&data).await.unwrap().0, b"led");
}
