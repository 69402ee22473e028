//! Writes guarded by a hold (`Transaction::while_held`): they commit while the hold is held,
//! and are refused — nothing applied — once its node is gone or its session expired; the
//! next holder's guarded writes commit.

use std::time::Duration;

use zk_recipes::ops::TxnResult;
use zk_recipes::CreateMode;

use zk_recipes::{Error, InterProcessMutex, LeaderLatch, LossReason};
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
        fw.transaction().while_held(&hold).set_data(&data, b"1", Some(0)).commit().await.unwrap();
        // someone deletes our node; we have not looked at it since
        other.delete(hold.path()).await.unwrap();
        let refused = fw.transaction().while_held(&hold).set_data(&data, b"2", None).commit().await;
        assert!(
            matches!(&refused, Err(Error::LockLost { path, reason: LossReason::NodeDeleted, .. }) if path == hold.path()),
            "{kind:?}: {refused:?}"
        );
        assert_eq!(fw.get_data(&data).await.unwrap().0, b"1", "{kind:?}: nothing applied");
        assert_eq!(tokio::time::timeout(WAIT, hold.lost()).await.unwrap(), LossReason::NodeDeleted, "{kind:?}");
        // a refused write stays refused (the loss is known now, nothing is sent)
        let again = fw.transaction().while_held(&hold).set_data(&data, b"3", None).commit().await;
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
        old.transaction().while_held(&first).set_data(&data, b"old", None).commit().await.unwrap();
        expire_session(&old).await.unwrap();
        let second = Lock::new(kind, &new, &lock).acquire_timeout(WAIT).await.expect("free after expiry");
        new.transaction().while_held(&second).set_data(&data, b"new", None).commit().await.unwrap();
        let late = old.transaction().while_held(&first).set_data(&data, b"old-again", None).commit().await;
        assert!(matches!(late, Err(Error::LockLost { .. })), "{kind:?}: {late:?}");
        assert_eq!(new.get_data(&data).await.unwrap().0, b"new", "{kind:?}");
        second.release().await.unwrap();
    }
}

#[tokio::test]
async fn a_write_while_leading() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("guarded-leader"));
    let data = format!("{path}-data");
    fw.create(&data, b"", CreateMode::Persistent).await.unwrap();
    let latch = LeaderLatch::new(&fw, &path, "a").unwrap();
    assert_eq!(latch.leadership(), None, "not started: not leading");
    latch.start().await.unwrap();
    let leadership = latch.await_leadership().await.unwrap();
    fw.transaction().while_leading(&leadership).set_data(&data, b"led", None).commit().await.unwrap();
    latch.close().await.unwrap();
    // the leadership knows it ended: refused at once
    let late = fw.transaction().while_leading(&leadership).set_data(&data, b"late", None).commit().await;
    assert!(matches!(late, Err(Error::LockLost { reason: LossReason::Closed, .. })), "{late:?}");
    assert_eq!(fw.get_data(&data).await.unwrap().0, b"led");
    // a node deleted by someone else: refused, whether the leadership heard of it yet or the
    // commit's check finds the node gone
    let again = LeaderLatch::new(&fw, &path, "a").unwrap();
    again.start().await.unwrap();
    let leadership = again.await_leadership().await.unwrap();
    let other = fixtures::framework(&cs).await;
    other.delete(leadership.node()).await.unwrap();
    let gone = fw.transaction().while_leading(&leadership).set_data(&data, b"gone", None).commit().await;
    assert!(matches!(gone, Err(Error::LockLost { reason: LossReason::NodeDeleted, .. })), "{gone:?}");
    assert_eq!(fw.get_data(&data).await.unwrap().0, b"led");
    again.close().await.unwrap();
}

/// `LockGuard::commit_and_release`: the writes and the release are one commit. Applied: the
/// data is written, our node is gone and the next contender holds. Refused (a stale version):
/// nothing is written, and the hold ends all the same. Re-entered: the node stays for the
/// other guard. Lost: nothing is written.
#[tokio::test]
async fn commit_and_release_writes_and_lets_go_in_one_commit() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("commit-release"));
    let (data, lock) = (format!("{base}-data"), format!("{base}/lock"));
    fw.create(&data, b"10", CreateMode::Persistent).await.unwrap();
    let mutex = InterProcessMutex::new(&fw, &lock).unwrap();
    let theirs = InterProcessMutex::new(&other, &lock).unwrap();

    // applied: written, our node deleted by the same commit, the waiter holds
    let guard = mutex.acquire().await.unwrap();
    let ours = guard.path().to_string();
    let waiter = tokio::spawn(async move { theirs.acquire().await.map(|g| (g, theirs)) });
    while fw.children(&lock).await.unwrap().len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (_, stat) = fw.get_data(&data).await.unwrap();
    let results = guard.commit_and_release(fw.transaction().set_data(&data, b"9", Some(stat.version))).await.unwrap();
    assert!(matches!(results.as_slice(), [TxnResult::SetData { stat: Some(_) }]), "{results:?}");
    assert_eq!(fw.get_data(&data).await.unwrap().0, b"9");
    assert!(fw.exists(&ours).await.unwrap().is_none(), "our node went with the commit");
    let (theirs_guard, theirs) = tokio::time::timeout(WAIT, waiter).await.unwrap().unwrap().unwrap();
    theirs_guard.release().await.unwrap();

    // refused: nothing written, the hold over all the same (the next acquire holds at once)
    let guard = mutex.acquire().await.unwrap();
    let stale = fw.transaction().set_data(&data, b"8", Some(stat.version));
    let refused = guard.commit_and_release(stale).await;
    assert!(matches!(refused, Err(Error::Transaction { index: 0, .. })), "{refused:?}");
    assert_eq!(fw.get_data(&data).await.unwrap().0, b"9", "nothing applied");
    let next = tokio::time::timeout(WAIT, theirs.acquire()).await.expect("released after a refused commit").unwrap();
    next.release().await.unwrap();

    // re-entered: the write commits guarded, the node stays for the other guard
    let outer = mutex.acquire().await.unwrap();
    let inner = outer.reenter().unwrap();
    let node = outer.path().to_string();
    outer.commit_and_release(fw.transaction().set_data(&data, b"7", None)).await.unwrap();
    assert_eq!(fw.get_data(&data).await.unwrap().0, b"7");
    assert!(fw.exists(&node).await.unwrap().is_some(), "the re-entered guard still holds");
    assert_eq!(inner.guard_count(), 1);
    inner.release().await.unwrap();
    assert!(fw.exists(&node).await.unwrap().is_none());

    // lost: someone deleted our node; nothing written
    let guard = mutex.acquire().await.unwrap();
    other.delete(guard.path()).await.unwrap();
    let lost = guard.commit_and_release(fw.transaction().set_data(&data, b"6", None)).await;
    assert!(matches!(lost, Err(Error::LockLost { .. })), "{lost:?}");
    assert_eq!(fw.get_data(&data).await.unwrap().0, b"7");
    let left = fw.children(&lock).await;
    assert!(matches!(&left, Ok(c) if c.is_empty()) || matches!(left, Err(Error::ZooKeeper(_))), "{left:?}");
}
