//! Re-entrancy without task identity: every `acquire()` is a hold of its own, re-entry goes
//! through the guard one holds, and a task is not sequential (`join!`), nor a guard bound to
//! the task that took it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::{
    Error, InterProcessLock, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, LossReason,
};
use zk_recipes_testing::fixtures;

use super::{Lock, KINDS, WAIT};

/// One branch of a `join!`: acquires `lock` `rounds` times, holding each time across a few
/// awaits, and counts how often another branch was inside at the same time.
async fn branch(lock: &Lock, rounds: usize, inside: &AtomicUsize, overlaps: &AtomicUsize) {
    for _ in 0..rounds {
        let held = lock.acquire().await;
        if inside.fetch_add(1, Ordering::SeqCst) != 0 {
            overlaps.fetch_add(1, Ordering::SeqCst);
        }
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            tokio::task::yield_now().await;
        }
        inside.fetch_sub(1, Ordering::SeqCst);
        held.release().await.unwrap();
    }
}

/// Two branches of one `tokio::join!` in ONE task acquire the same lock (one handle, shared):
/// they never hold at once, and both finish (no branch waits for itself).
#[tokio::test]
async fn join_of_two_acquires_in_one_task_never_overlaps_nor_deadlocks() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("join"));
        let lock = Lock::new(kind, &fw, &path);
        let (inside, overlaps) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let both = async { tokio::join!(branch(&lock, 4, &inside, &overlaps), branch(&lock, 4, &inside, &overlaps)) };
        tokio::time::timeout(WAIT, both).await.unwrap_or_else(|_| panic!("{kind:?}: the two branches deadlocked"));
        assert_eq!(overlaps.load(Ordering::SeqCst), 0, "{kind:?}: both branches of one join! held at once");
        fixtures::settle(&[&fw]).await;
        assert!(fixtures::ephemerals(&fw, &path).await.unwrap().is_empty(), "{kind:?}: a node was left behind");
    }
}

/// The same with the inherent `acquire` of the mutex and both sides of a read-write lock, and
/// a `select!` that gives up on one of them: the loser's node goes, the winner keeps holding.
#[tokio::test]
async fn join_and_select_on_inherent_acquires() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let mutex = InterProcessMutex::new(&fw, &format!("/{}", fixtures::unique("join-mutex"))).unwrap();
    let first = mutex.acquire().await.unwrap();
    // while `first` holds, a second acquire in the same task waits (a `try_` refuses)
    assert!(mutex.try_acquire().await.unwrap().is_none(), "acquire() must not re-enter implicitly");
    assert!(mutex.acquire_timeout(Duration::from_millis(200)).await.is_err_and(|e| e.is_timeout()));
    let second = tokio::select! {
        biased;
        held = mutex.acquire() => panic!("the second acquire held beside the first: {held:?}"),
        _ = tokio::time::sleep(Duration::from_millis(300)) => None::<()>,
    };
    assert!(second.is_none());
    fixtures::settle(&[&fw]).await;
    assert_eq!(fixtures::ephemerals(&fw, mutex.path()).await.unwrap().len(), 1, "the abandoned node is gone");
    first.release().await.unwrap();
    // the two futures of one join!: the second holds once the first releases
    let (a, b) = tokio::join!(
        async {
            let g = mutex.acquire().await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            let token = g.fencing_token();
            g.release().await.unwrap();
            token
        },
        async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let g = mutex.acquire().await.unwrap();
            let token = g.fencing_token();
            g.release().await.unwrap();
            token
        }
    );
    assert!(a < b, "two holds, two nodes, in queue order: {a} then {b}");

    let rw = InterProcessReadWriteLock::new(&fw, &format!("/{}", fixtures::unique("join-rw"))).unwrap();
    let (inside, overlaps) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let write = |rounds| {
        let (rw, inside, overlaps) = (&rw, &inside, &overlaps);
        async move {
            for _ in 0..rounds {
                let w = rw.write().await.unwrap();
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                w.release().await.unwrap();
            }
        }
    };
    let read = async {
        for _ in 0..3 {
            let r = rw.read().await.unwrap();
            if inside.load(Ordering::SeqCst) != 0 {
                overlaps.fetch_add(1, Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            r.release().await.unwrap();
        }
    };
    tokio::time::timeout(WAIT, async { tokio::join!(write(3), write(3), read) }).await.expect("no deadlock");
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "a writer beside another holder of the same join!");
}

/// A guard moved to another task keeps holding: the task that took it is excluded like anyone
/// else until the moved guard is released.
#[tokio::test]
async fn a_moved_guard_excludes_the_task_that_took_it() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("moved"));
        let lock = Lock::new(kind, &fw, &path);
        let held = lock.acquire().await;
        let token = held.fencing_token();
        let released = Arc::new(AtomicUsize::new(0));
        let mover = {
            let released = released.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(400)).await;
                released.store(1, Ordering::SeqCst);
                held.release().await.unwrap();
            })
        };
        assert!(lock.0.try_acquire().await.unwrap().is_none(), "{kind:?}: the taking task re-entered a moved guard");
        let again = lock.acquire().await;
        assert_eq!(released.load(Ordering::SeqCst), 1, "{kind:?}: held before the moved guard was released");
        assert!(again.fencing_token() > token, "{kind:?}: a new hold has a new token");
        again.release().await.unwrap();
        mover.await.unwrap();
    }
}

/// Re-entry through the guard: guards on one node nest, release in any order, and the node goes
/// with the last of them; `is_acquired_in_this_process` follows the holds.
#[tokio::test]
async fn explicit_reentry_nests_and_releases_in_any_order() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("reenter"));
    let mutex = InterProcessMutex::new(&fw, &path).unwrap();
    let theirs = InterProcessMutex::new(&other, &path).unwrap();
    assert!(!mutex.is_acquired_in_this_process());
    let g1 = mutex.acquire().await.unwrap();
    let g2 = g1.reenter().unwrap();
    let g3 = g2.reenter().unwrap();
    assert_eq!((g1.guard_count(), g3.guard_count()), (3, 3));
    assert_eq!((g1.path(), g1.fencing_token()), (g3.path(), g3.fencing_token()), "one node for every guard");
    assert!(mutex.is_acquired_in_this_process() && mutex.clone().is_acquired_in_this_process());
    assert_eq!(mutex.participants().await.unwrap().len(), 1);
    // the first one out does not release the node; nor does dropping one
    g1.release().await.unwrap();
    drop(g3);
    fixtures::settle(&[&fw]).await;
    assert_eq!(mutex.participants().await.unwrap().len(), 1, "still held by g2");
    assert!(theirs.try_acquire().await.unwrap().is_none(), "another session waits while g2 holds");
    assert_eq!(g2.guard_count(), 1);
    // a guard moved to another task re-enters there and releases there
    let moved = tokio::spawn(async move {
        let inner = g2.reenter().unwrap();
        g2.release().await.unwrap();
        inner
    })
    .await
    .unwrap();
    assert!(mutex.is_acquired_in_this_process());
    moved.release().await.unwrap();
    assert!(!mutex.is_acquired_in_this_process());
    let theirs_now = theirs.acquire_timeout(WAIT).await.expect("free once the last guard went");
    theirs_now.release().await.unwrap();

    // a lost hold cannot be re-entered
    let g = mutex.acquire().await.unwrap();
    let admin = fixtures::framework(&cs).await;
    admin.delete(g.path()).await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, g.lost()).await.unwrap(), LossReason::NodeDeleted);
    assert!(matches!(g.reenter(), Err(Error::LockLost { reason: LossReason::NodeDeleted, .. })));

    // both sides of a read-write lock re-enter through their guards
    let rw = InterProcessReadWriteLock::new(&fw, &format!("/{}", fixtures::unique("reenter-rw"))).unwrap();
    let w = rw.write().await.unwrap();
    let w2 = w.reenter().unwrap();
    assert_eq!((w.path(), w2.guard_count()), (w2.path(), 2));
    w.release().await.unwrap();
    assert!(rw.is_write_acquired_in_this_process());
    let r = w2.downgrade().await.unwrap();
    let r2 = r.reenter().unwrap();
    drop(r);
    assert!(rw.is_read_acquired_in_this_process() && !rw.is_write_acquired_in_this_process());
    let theirs = InterProcessReadWriteLock::new(&other, rw.path()).unwrap();
    assert!(theirs.try_write().await.unwrap().is_none(), "the re-entered read still holds");
    r2.release().await.unwrap();
    theirs.write_timeout(WAIT).await.expect("free after the last read guard").release().await.unwrap();
}

/// A downgrade of a write hold that is lost is refused and creates nothing.
#[tokio::test]
async fn downgrade_of_a_lost_write_is_refused_and_leaves_nothing() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let admin = fixtures::framework(&cs).await;
    let rw = InterProcessReadWriteLock::new(&fw, &format!("/{}", fixtures::unique("lost-downgrade"))).unwrap();
    let w = rw.write().await.unwrap();
    admin.delete(w.path()).await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, w.lost()).await.unwrap(), LossReason::NodeDeleted);
    assert!(matches!(w.downgrade().await, Err(Error::LockLost { .. })));
    fixtures::settle(&[&fw]).await;
    assert!(fixtures::ephemerals(&admin, rw.path()).await.unwrap().is_empty(), "no read node was created");
}

/// A multi-lock holds members on one path once: the same kind twice is re-entered (one node),
/// the read side beside the write side is held at the writer's place, different kinds on one
/// path are held each, and a semaphore mutex given twice is refused.
#[tokio::test]
async fn multi_lock_holds_members_on_one_path_once() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("multi-same"));
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let rw = InterProcessReadWriteLock::new(&fw, &b).unwrap();
    let members: Vec<Arc<dyn InterProcessLock>> = vec![
        Arc::new(InterProcessMutex::new(&fw, &a).unwrap()),
        Arc::new(rw.read_lock()),
        Arc::new(InterProcessMutex::new(&fw, &a).unwrap()),
        Arc::new(rw.write_lock()),
        Arc::new(InterProcessReadWriteLock::new(&fw, &a).unwrap().write_lock()),
    ];
    let multi = InterProcessMultiLock::new(members).unwrap();
    let all = tokio::time::timeout(WAIT, multi.acquire()).await.expect("no member waits for another").unwrap();
    assert_eq!(all.nodes().count(), 5);
    let under_a = fixtures::ephemerals(&fw, &a).await.unwrap();
    assert_eq!(under_a.len(), 2, "one mutex node (re-entered) and one write node: {under_a:?}");
    let under_b = fixtures::ephemerals(&fw, &b).await.unwrap();
    assert_eq!(under_b.len(), 2, "a write node and the read beside it: {under_b:?}");
    let seq = |p: &str| p[p.len() - 10..].to_string();
    assert_eq!(seq(&under_b[0]), seq(&under_b[1]), "the read keeps the writer's place: {under_b:?}");
    // the set excludes others
    let short = Duration::from_millis(200);
    assert!(InterProcessMutex::new(&other, &a).unwrap().acquire_timeout(short).await.is_err_and(|e| e.is_timeout()));
    assert!(InterProcessReadWriteLock::new(&other, &b)
        .unwrap()
        .read_timeout(short)
        .await
        .is_err_and(|e| e.is_timeout()));
    all.release().await.unwrap();
    fixtures::settle(&[&fw]).await;
    assert!(fixtures::ephemerals(&fw, &a).await.unwrap().is_empty());
    assert!(fixtures::ephemerals(&fw, &b).await.unwrap().is_empty());
    // the same set again, from the start (nothing was left)
    multi.acquire_timeout(WAIT).await.unwrap().release().await.unwrap();

    let twice: Vec<Arc<dyn InterProcessLock>> = vec![
        Arc::new(InterProcessSemaphoreMutex::new(&fw, &a).unwrap()),
        Arc::new(InterProcessSemaphoreMutex::new(&fw, &a).unwrap()),
    ];
    assert!(matches!(InterProcessMultiLock::new(twice), Err(Error::InvalidArgument { .. })));
    // through another framework the same path is another holder: it waits (and times out)
    let across: Vec<Arc<dyn InterProcessLock>> =
        vec![Arc::new(InterProcessMutex::new(&fw, &a).unwrap()), Arc::new(InterProcessMutex::new(&other, &a).unwrap())];
    let result = InterProcessMultiLock::new(across).unwrap().acquire_timeout(Duration::from_millis(300)).await;
    assert!(result.is_err_and(|e| e.is_timeout()), "two sessions cannot both hold one mutex");
    fixtures::settle(&[&fw, &other]).await;
    assert!(fixtures::ephemerals(&fw, &a).await.unwrap().is_empty(), "the timed-out set left nothing");
}
