//! Lock recipes against a real ZooKeeper server: contract tests shared by every exclusive lock
//! kind, then what is specific to each.

use assert_matches::assert_matches;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::{
    Error, Framework, HeldLock, InterProcessLock, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, LossReason,
};
use zk_recipes_testing::{expire_session, fixtures, TestingServer};

const WAIT: Duration = Duration::from_secs(20);

/// The exclusive lock kinds every contract test runs against.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Mutex,
    Write,
    SemaphoreMutex,
}

const KINDS: [Kind; 3] = [Kind::Mutex, Kind::Write, Kind::SemaphoreMutex];

/// Where a kind's contenders queue, the holder's node first: the lock's path, or the semaphore
/// mutex's leases (its single acquires take no internal lock while no one queues for it).
fn queue_dir(kind: Kind, path: &str) -> String {
    match kind {
        Kind::SemaphoreMutex => format!("{path}/leases"),
        _ => path.to_string(),
    }
}

/// A lock of one kind, through the common [`InterProcessLock`] trait.
#[derive(Clone)]
struct Lock(Arc<dyn InterProcessLock>);

impl Lock {
    fn new(kind: Kind, fw: &Framework, path: &str) -> Lock {
        Lock(match kind {
            Kind::Mutex => Arc::new(InterProcessMutex::new(fw, path).unwrap()),
            Kind::Write => Arc::new(InterProcessReadWriteLock::new(fw, path).unwrap().write_lock()),
            Kind::SemaphoreMutex => Arc::new(InterProcessSemaphoreMutex::new(fw, path).unwrap()),
        })
    }

    async fn acquire(&self) -> HeldLock {
        self.acquire_timeout(WAIT).await.expect("acquired in time")
    }

    /// `None` when `t` passed first.
    async fn acquire_timeout(&self, t: Duration) -> Option<HeldLock> {
        match self.0.acquire_timeout(t).await {
            Ok(held) => Some(held),
            Err(e) if e.is_timeout() => None,
            Err(e) => panic!("acquire failed: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_mutual_exclusion_under_16_sessions() {
    let cs = fixtures::shared_server().await;
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("exclusion"));
        let inside = Arc::new(AtomicUsize::new(0));
        let overlaps = Arc::new(AtomicUsize::new(0));
        let total = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let (cs, path, inside, overlaps, total) =
                (cs.clone(), path.clone(), inside.clone(), overlaps.clone(), total.clone());
            tasks.push(tokio::spawn(async move {
                let fw = fixtures::framework(&cs).await;
                let lock = Lock::new(kind, &fw, &path);
                for _ in 0..4 {
                    let hold = lock.acquire().await;
                    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    total.fetch_add(1, Ordering::SeqCst);
                    hold.release().await.unwrap();
                }
                fw.close();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(overlaps.load(Ordering::SeqCst), 0, "{kind:?}: two holders at once");
        assert_eq!(total.load(Ordering::SeqCst), 64, "{kind:?}");
        let fw = fixtures::framework(&cs).await;
        assert_eq!(fixtures::ephemerals(&fw, &path).await.unwrap(), Vec::<String>::new(), "{kind:?}");
    }
}

#[tokio::test]
async fn contract_fifo_fairness() {
    let cs = fixtures::shared_server().await;
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("fifo"));
        let holder_fw = fixtures::framework(&cs).await;
        let first = Lock::new(kind, &holder_fw, &path).acquire().await;
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        let queue_dir = queue_dir(kind, &path);
        for i in 0..4 {
            let fw = fixtures::framework(&cs).await;
            let lock = Lock::new(kind, &fw, &path);
            let order = order.clone();
            waiters.push(tokio::spawn(async move {
                let hold = lock.acquire().await;
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(20)).await;
                hold.release().await.unwrap();
                fw.close();
            }));
            // wait until waiter i has queued its node (behind the holder's) before starting the next
            let queued = i + 2;
            fixtures::eventually(WAIT, format!("{kind:?}: waiter {i} queued"), || async {
                holder_fw.children(&queue_dir).await.map(|c| c.len()).unwrap_or(0) >= queued
            })
            .await;
        }
        first.release().await.unwrap();
        for w in waiters {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3], "{kind:?}");
    }
}

/// Waiters on other sessions, deep in the queue and close to its head, with waiters ahead of
/// them giving up while the head holds: nobody takes over from a waiter that never held, and
/// the rest hold one at a time in queue order once the head releases. (Close to the head a
/// waiter watches every node before it; further back it also lists again early when a node
/// a few places ahead goes: both must tell a quitter from a holder.)
#[tokio::test]
async fn contract_deep_queue_with_quitters_keeps_order_and_exclusion() {
    const WAITERS: usize = 7;
    const QUITTERS: [usize; 3] = [0, 2, 3];
    let cs = fixtures::shared_server().await;
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("deep"));
        let holder_fw = fixtures::framework(&cs).await;
        let head = Lock::new(kind, &holder_fw, &path).acquire().await;
        let queue_dir = queue_dir(kind, &path);
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let inside = Arc::new(AtomicUsize::new(0));
        let mut waiters = Vec::new();
        for i in 0..WAITERS {
            let fw = fixtures::framework(&cs).await;
            let lock = Lock::new(kind, &fw, &path);
            let (order, inside) = (order.clone(), inside.clone());
            waiters.push(tokio::spawn(async move {
                if QUITTERS.contains(&i) {
                    let quit = lock.acquire_timeout(Duration::from_millis(1500)).await.is_none();
                    fw.close();
                    return quit;
                }
                let hold = lock.acquire().await;
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(20)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                hold.release().await.unwrap();
                fw.close();
                true
            }));
            let queued = i + 2;
            fixtures::eventually(WAIT, format!("{kind:?}: waiter {i} queued"), || async {
                holder_fw.children(&queue_dir).await.map(|c| c.len()).unwrap_or(0) >= queued
            })
            .await;
        }
        assert!(waiters.iter().all(|w| !w.is_finished()), "{kind:?}: all queued before anyone quit");
        fixtures::eventually(WAIT, format!("{kind:?}: the quitters never quit"), || async {
            QUITTERS.iter().all(|&q| waiters[q].is_finished())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(order.lock().unwrap().is_empty(), "{kind:?}: acquired while the head still holds");
        head.release().await.unwrap();
        for w in waiters {
            assert!(tokio::time::timeout(WAIT, w).await.expect("every waiter done").unwrap());
        }
        let expected: Vec<usize> = (0..WAITERS).filter(|i| !QUITTERS.contains(i)).collect();
        assert_eq!(*order.lock().unwrap(), expected, "{kind:?}: queue order");
        assert!(fixtures::ephemerals(&holder_fw, &path).await.unwrap().is_empty(), "{kind:?}");
        holder_fw.close();
    }
}

#[tokio::test]
async fn contract_timeouts_and_try() {
    let cs = fixtures::shared_server().await;
    let a = fixtures::framework(&cs).await;
    let b = fixtures::framework(&cs).await;
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("timeout"));
        let held = Lock::new(kind, &a, &path).acquire().await;
        let other = Lock::new(kind, &b, &path);
        let started = tokio::time::Instant::now();
        assert!(other.acquire_timeout(Duration::from_millis(300)).await.is_none(), "{kind:?}");
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(other.acquire_timeout(Duration::ZERO).await.is_none(), "{kind:?}");
        fixtures::settle(&[&b]).await;
        let left = fixtures::ephemerals(&a, &path).await.unwrap();
        assert_eq!(left, vec![held.path().to_string()], "{kind:?}: only the holder's node");
        held.release().await.unwrap();
        let now = other.acquire_timeout(Duration::from_millis(2000)).await.expect("free now");
        now.release().await.unwrap();
        assert!(fixtures::ephemerals(&a, &path).await.unwrap().is_empty());
    }
    let m = InterProcessMutex::new(&a, &format!("/{}", fixtures::unique("try"))).unwrap();
    let g = m.try_acquire().await.unwrap().expect("free");
    let m2 = InterProcessMutex::new(&b, m.path()).unwrap();
    assert!(m2.try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
}

/// Local hand-offs skip the listing only when the deleted predecessor had held: a waiter
/// whose predecessor gives up (never held) must keep waiting while the head still holds.
#[tokio::test]
async fn contract_waiter_behind_a_waiter_that_gives_up_keeps_waiting() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("gives-up"));
        let head = Lock::new(kind, &fw, &path).acquire().await;
        let quitter = {
            let lock = Lock::new(kind, &fw, &path);
            tokio::spawn(async move { lock.acquire_timeout(Duration::from_millis(400)).await.is_none() })
        };
        while fw.children(&queue_dir(kind, &path)).await.unwrap().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let behind = {
            let lock = Lock::new(kind, &fw, &path);
            tokio::spawn(async move {
                let hold = lock.acquire().await;
                let token = hold.fencing_token();
                hold.release().await.unwrap();
                token
            })
        };
        assert!(quitter.await.unwrap(), "{kind:?}: the quitter timed out");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!behind.is_finished(), "{kind:?}: acquired while the head still holds");
        let head_token = head.fencing_token();
        head.release().await.unwrap();
        let token = tokio::time::timeout(WAIT, behind).await.expect("acquired after the head released").unwrap();
        assert!(token > head_token, "{kind:?}");
    }
}

#[tokio::test]
async fn contract_no_orphans_after_100_cancelled_acquisitions() {
    let cs = fixtures::shared_server().await;
    let a = fixtures::framework(&cs).await;
    let b = fixtures::framework(&cs).await;
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("cancel"));
        let lock_b = Lock::new(kind, &b, &path);
        let mut held = Some(Lock::new(kind, &a, &path).acquire().await);
        let mut granted = 0;
        for i in 0..100u64 {
            // vary where the acquire is cancelled: before the create returns (0 µs), while
            // waiting, and around the moment the holder releases (odd rounds release during
            // the wait, so some acquires are granted just before being dropped)
            let delay = Duration::from_micros((i * 397) % 6000);
            if i % 2 == 1 {
                if let Some(h) = held.take() {
                    let releasing = tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_micros(1500)).await;
                        h.release().await
                    });
                    let outcome = tokio::time::timeout(delay, lock_b.acquire_timeout(WAIT)).await;
                    if let Ok(Some(hold)) = outcome {
                        granted += 1;
                        drop(hold); // released in the background
                    }
                    releasing.await.unwrap().unwrap();
                }
            } else {
                let _ = tokio::time::timeout(delay, lock_b.acquire_timeout(WAIT)).await;
            }
            if held.is_none() {
                fixtures::settle(&[&b]).await;
                held = Some(Lock::new(kind, &a, &path).acquire().await);
            }
        }
        held.take().unwrap().release().await.unwrap();
        fixtures::settle(&[&a, &b]).await;
        assert_eq!(
            fixtures::ephemerals(&a, &path).await.unwrap(),
            Vec::<String>::new(),
            "{kind:?}: orphans (granted {granted})"
        );
    }
}

#[tokio::test]
async fn contract_fencing_tokens_increase_across_holders_and_parent_reaping() {
    let cs = fixtures::shared_server().await;
    let a = fixtures::framework(&cs).await;
    let b = fixtures::framework(&cs).await;
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("fencing"));
        let mut last = i64::MIN;
        for i in 0..6 {
            let fw = if i % 2 == 0 { &a } else { &b };
            let hold = Lock::new(kind, fw, &path).acquire().await;
            assert!(hold.fencing_token() > last, "{kind:?}: token {} after {last}", hold.fencing_token());
            last = hold.fencing_token();
            hold.release().await.unwrap();
        }
        // the container parent is reaped once empty; sequences restart, tokens do not
        let queue_dir = queue_dir(kind, &path);
        fixtures::eventually(Duration::from_secs(30), format!("container {queue_dir} never reaped"), || async {
            a.exists(&queue_dir).await.unwrap().is_none()
        })
        .await;
        let hold = Lock::new(kind, &a, &path).acquire().await;
        assert!(hold.path().ends_with("0000000000"), "{kind:?}: sequence restarted: {}", hold.path());
        assert!(hold.fencing_token() > last, "{kind:?}: token after reaping");
        hold.release().await.unwrap();
    }
}

#[tokio::test]
async fn contract_lost_on_expire_session() {
    let cs = fixtures::shared_server().await;
    for kind in KINDS {
        let fw = fixtures::framework(&cs).await;
        let path = format!("/{}", fixtures::unique("expire"));
        let hold = Lock::new(kind, &fw, &path).acquire().await;
        assert!(!hold.is_lost());
        expire_session(&fw).await.unwrap();
        let reason = tokio::time::timeout(WAIT, hold.lost()).await.unwrap_or_else(|_| panic!("{kind:?}: lost() fired"));
        // the server drops the connection before it expires the session: either is reported; or
        // the hold's node watch (set since it holds) tells of the server deleting our ephemeral
        // node first, when the framework got back onto the session before its close applied
        let ended = [LossReason::SessionLost, LossReason::Suspended, LossReason::NodeDeleted];
        assert!(ended.contains(&reason), "{kind:?}: {reason:?}");
        assert!(hold.is_lost());
        // someone else can take it now, and the old holder's release reports the loss
        let other = fixtures::framework(&cs).await;
        let taken = Lock::new(kind, &other, &path).acquire_timeout(WAIT).await.expect("free after expiry");
        assert!(matches!(hold.release().await, Err(Error::LockLost { .. })), "{kind:?}");
        taken.release().await.unwrap();
    }
}

#[tokio::test]
async fn lost_on_server_stop_and_on_node_deletion() {
    let server = TestingServer::start().await.unwrap();
    let cs = server.connect_string().to_string();
    let fw = fixtures::framework(&cs).await;
    let m = InterProcessMutex::new(&fw, "/stop").unwrap();
    let guard = m.acquire().await.unwrap();
    server.stop().await;
    let reason = tokio::time::timeout(WAIT, guard.lost()).await.expect("lost() fired");
    assert_eq!(reason, LossReason::Suspended);
    server.restart().await.unwrap();
    fw.wait_connected(WAIT).await.unwrap();
    assert!(guard.is_lost(), "a suspension is never forgotten under the standard policy");
    drop(guard);

    // deleted by someone else
    let g = m.acquire().await.unwrap();
    let watching = tokio::spawn({
        let fw = fw.clone();
        async move {
            let m = InterProcessMutex::new(&fw, "/stop").unwrap();
            let _ = m; // a second handle does not matter
        }
    });
    watching.await.unwrap();
    let lost = g.lost();
    tokio::pin!(lost);
    assert!(tokio::time::timeout(Duration::from_millis(200), &mut lost).await.is_err(), "not lost yet");
    let admin = fixtures::framework(&cs).await;
    admin.delete(g.path()).await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, lost).await.unwrap(), LossReason::NodeDeleted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_never_exceeds_max_leases_under_16_contenders() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("semaphore"));
    let inside = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (cs, path, inside, peak) = (cs.clone(), path.clone(), inside.clone(), peak.clone());
        tasks.push(tokio::spawn(async move {
            let fw = fixtures::framework(&cs).await;
            let sem = InterProcessSemaphoreV2::new(&fw, &path, 3).unwrap();
            for _ in 0..3 {
                let n = if i % 4 == 0 { 2 } else { 1 };
                let leases = sem.acquire_many(n).await.unwrap();
                let now = inside.fetch_add(n, Ordering::SeqCst) + n;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                inside.fetch_sub(n, Ordering::SeqCst);
                zk_recipes::InterProcessSemaphoreV2::return_all(leases).await.unwrap();
            }
            fw.close();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= 3, "more than 3 leases held at once: {peak}");
    assert!(peak >= 2, "the semaphore never let several in: {peak}");
    let fw = fixtures::framework(&cs).await;
    assert!(fixtures::ephemerals(&fw, &path).await.unwrap().is_empty());
}

#[tokio::test]
async fn semaphore_leases_and_timeouts() {
    let cs = fixtures::shared_server().await;
    let a = fixtures::framework(&cs).await;
    let b = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("leases"));
    let sa = InterProcessSemaphoreV2::new(&a, &path, 2).unwrap();
    let sb = InterProcessSemaphoreV2::new(&b, &path, 2).unwrap();
    let two = sa.acquire_many(2).await.unwrap();
    assert_eq!(two.len(), 2);
    assert!(sb.acquire_timeout(Duration::from_millis(200)).await.is_err_and(|e| e.is_timeout()));
    assert_eq!(sb.participants().await.unwrap().len(), 2, "the timed-out lease is gone");
    let mut two = two;
    two.pop().unwrap().release().await.unwrap();
    let one = sb.acquire_timeout(WAIT).await.expect("a lease is free");
    zk_recipes::InterProcessSemaphoreV2::return_all(two).await.unwrap();
    one.release().await.unwrap();
    fixtures::settle(&[&a, &b]).await;
    assert!(fixtures::ephemerals(&a, &path).await.unwrap().is_empty());
}

#[tokio::test]
async fn rwlock_sharing_exclusion_and_downgrade() {
    let cs = fixtures::shared_server().await;
    let a = fixtures::framework(&cs).await;
    let b = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("rwlock"));
    let la = InterProcessReadWriteLock::new(&a, &path).unwrap();
    let lb = InterProcessReadWriteLock::new(&b, &path).unwrap();
    // readers share
    let ra = la.read().await.unwrap();
    let rb = lb.read_timeout(Duration::from_secs(2)).await.expect("readers share");
    // a writer waits for readers (this process's own reader too: there is no upgrade)
    assert!(lb.write_timeout(Duration::from_millis(200)).await.is_err_and(|e| e.is_timeout()));
    assert!(la.write_timeout(Duration::from_millis(200)).await.is_err_and(|e| e.is_timeout()));
    drop(rb);
    fixtures::settle(&[&b]).await;
    let lb2 = InterProcessReadWriteLock::new(&b, &path).unwrap();
    let writer = tokio::spawn(async move { lb2.write_timeout(WAIT).await.map(|g| g.fencing_token()) });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!writer.is_finished(), "the writer waits for the reader");
    ra.release().await.unwrap();
    assert!(writer.await.unwrap().is_ok());
    // a writer excludes readers: another session's and this one's
    let w = la.write().await.unwrap();
    assert!(la.is_write_acquired_in_this_process());
    assert!(lb.read_timeout(Duration::from_millis(200)).await.is_err_and(|e| e.is_timeout()));
    assert!(la.read_timeout(Duration::from_millis(200)).await.is_err_and(|e| e.is_timeout()));
    // downgrade through the write guard: a read hold at the writer's place, the write released
    let write_path = w.path().to_string();
    let r = w.downgrade().await.expect("downgrade is immediate");
    let seq = |p: &str| p[p.len() - 10..].to_string();
    assert_eq!(seq(r.path()), seq(&write_path), "the read node keeps the writer's place");
    assert!(r.path().contains("__READ__"));
    assert_eq!(r.session_id(), a.status().session_id);
    assert!(!la.is_write_acquired_in_this_process() && la.is_read_acquired_in_this_process());
    let left = fixtures::ephemerals(&a, &path).await.unwrap();
    assert!(!left.iter().any(|n| n.contains("__WRIT__")), "the write node is gone: {left:?}");
    // now readers share with the downgraded reader, writers wait
    let rb = lb.read_timeout(Duration::from_secs(2)).await.expect("shares with the downgraded reader");
    let lc = InterProcessReadWriteLock::new(&fixtures::framework(&cs).await, &path).unwrap();
    assert!(lc.write_timeout(Duration::from_millis(200)).await.is_err_and(|e| e.is_timeout()));
    r.release().await.unwrap();
    rb.release().await.unwrap();
    fixtures::settle(&[&a, &b]).await;
    assert!(fixtures::ephemerals(&a, &path).await.unwrap().is_empty());
}

#[tokio::test]
async fn readers_behind_writers_wake_in_turn() {
    let cs = fixtures::shared_server().await;
    let a = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("rwqueue"));
    let w1 = InterProcessReadWriteLock::new(&a, &path).unwrap().write().await.unwrap();
    // writer 2 queues, then readers 3 and 4 queue behind it
    let b = fixtures::framework(&cs).await;
    let lb = InterProcessReadWriteLock::new(&b, &path).unwrap();
    let w2 = tokio::spawn(async move { lb.write_timeout(WAIT).await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let mut readers = Vec::new();
    for _ in 0..2 {
        let fw = fixtures::framework(&cs).await;
        let l = InterProcessReadWriteLock::new(&fw, &path).unwrap();
        readers.push(tokio::spawn(async move { l.read_timeout(WAIT).await.map(|g| (g, fw)) }));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    w1.release().await.unwrap();
    let w2 = w2.await.unwrap().expect("writer 2 next");
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(readers.iter().all(|r| !r.is_finished()), "readers still wait for writer 2");
    w2.release().await.unwrap();
    for r in readers {
        let (g, _fw) = r.await.unwrap().expect("reader granted after writer 2");
        g.release().await.unwrap();
    }
}

#[tokio::test]
async fn multilock_is_all_or_nothing() {
    let cs = fixtures::shared_server().await;
    let a = fixtures::framework(&cs).await;
    let b = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("multi"));
    let (p1, p2, p3) = (format!("{base}/one"), format!("{base}/two"), format!("{base}/three"));
    let blocker = InterProcessReadWriteLock::new(&b, &p2).unwrap().write().await.unwrap();
    let members: [Arc<dyn InterProcessLock>; 3] = [
        Arc::new(InterProcessMutex::new(&a, &p3).unwrap()),
        Arc::new(InterProcessMutex::new(&a, &p1).unwrap()),
        Arc::new(InterProcessReadWriteLock::new(&a, &p2).unwrap().write_lock()),
    ];
    let multi = InterProcessMultiLock::new(members).unwrap();
    let started = tokio::time::Instant::now();
    assert!(multi.acquire_timeout(Duration::from_millis(400)).await.is_err_and(|e| e.is_timeout()));
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1500), "one deadline for the whole set: {took:?}");
    fixtures::settle(&[&a]).await;
    // nothing of the set is held after the rollback
    assert!(fixtures::ephemerals(&a, &p1).await.unwrap().is_empty());
    assert!(fixtures::ephemerals(&a, &p3).await.unwrap().is_empty());
    assert_eq!(fixtures::ephemerals(&a, &p2).await.unwrap(), vec![blocker.path().to_string()]);
    blocker.release().await.unwrap();
    let all = multi.acquire_timeout(WAIT).await.expect("all free");
    assert_eq!(all.nodes().count(), 3);
    assert!(!all.is_lost());
    // reported in the order given (acquired in path order: p1, p2, p3)
    let paths: Vec<String> = all.nodes().map(|n| n.path().to_string()).collect();
    assert!(paths[0].starts_with(&p3) && paths[1].starts_with(&p1) && paths[2].starts_with(&p2), "{paths:?}");
    let members: Vec<&str> = all.members().map(|(member, _)| member.path()).collect();
    assert_eq!(members, [&p3, &p1, &p2]);
    for (member, node) in all.members() {
        assert_eq!(node.path().rsplit_once('/').unwrap().0, member.path());
    }
    all.release().await.unwrap();
    let from_paths = InterProcessMultiLock::from_paths(&a, [&p1, &p2]).unwrap();
    from_paths.acquire().await.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn revocation_is_requested_through_the_node_data() {
    let cs = fixtures::shared_server().await;
    let a = fixtures::framework(&cs).await;
    let b = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("revoke"));
    let guard = InterProcessMutex::new(&a, &path).unwrap().revocable().acquire().await.unwrap();
    assert!(!guard.revocation_requested());
    let holder = InterProcessMutex::new(&b, &path).unwrap().participants().await.unwrap();
    InterProcessMutex::request_revoke(&b, &format!("{path}/{}", holder[0])).await.unwrap();
    tokio::time::timeout(WAIT, guard.revoked()).await.expect("revocation seen");
    assert!(guard.revocation_requested());
    guard.release().await.unwrap();
}

#[tokio::test]
async fn bad_input_gets_typed_errors() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    for bad in ["", "relative", "/", "/a/", "/a//b", "/nul\0"] {
        assert!(matches!(InterProcessMutex::new(&fw, bad), Err(Error::InvalidPath { .. })), "{bad:?}");
        assert!(matches!(InterProcessReadWriteLock::new(&fw, bad), Err(Error::InvalidPath { .. })));
        assert!(matches!(InterProcessSemaphoreV2::new(&fw, bad, 1), Err(Error::InvalidPath { .. })));
    }
    assert!(matches!(InterProcessSemaphoreV2::new(&fw, "/s", 0), Err(Error::InvalidArgument { .. })));
    let sem = InterProcessSemaphoreV2::new(&fw, &format!("/{}", fixtures::unique("bad")), 2).unwrap();
    assert!(matches!(sem.acquire_many(0).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(sem.acquire_many(3).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(InterProcessMultiLock::new(Vec::new()), Err(Error::InvalidArgument { .. })));
    assert!(matches!(InterProcessMultiLock::from_paths(&fw, Vec::<String>::new()), Err(Error::InvalidArgument { .. })));
    // a closed framework
    let closed = fixtures::framework(&cs).await;
    let m = InterProcessMutex::new(&closed, "/closed").unwrap();
    closed.close();
    assert_matches!(m.acquire().await.unwrap_err(), Error::Closed);
}

/// Compile-time bounds, as tokio's `tests/async_send_sync.rs` checks them: every guard and
/// lease is `Send + Sync + 'static` (it may move to and be released from any task), every
/// acquire future is `Send` (it may run inside `tokio::spawn`). A violation fails the build,
/// not a test run.
mod guarded;
mod leased;
mod local_queue;
mod loss_line;
mod read_under_lock;
mod reentry;
mod semaphore;

mod bounds {
    use std::future::Future;
    use std::sync::Arc;
    use std::time::Duration;

    use zk_recipes::lock::ReadLock;
    use zk_recipes::lock::WriteLock;
    use zk_recipes::{
        HeldLock, HeldNode, InterProcessLock, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
        InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, LockGuard, MultiLockGuard, WriteGuard,
    };

    fn send_sync_static<T: Send + Sync + 'static>() {}

    fn send<F: Future + Send>(_: F) {}

    #[test]
    fn guards_leases_and_handles_are_send_sync_static() {
        send_sync_static::<LockGuard>();
        send_sync_static::<WriteGuard>();
        send_sync_static::<Lease>();
        send_sync_static::<Vec<Lease>>();
        send_sync_static::<HeldLock>();
        send_sync_static::<HeldNode>();
        send_sync_static::<MultiLockGuard>();
        send_sync_static::<InterProcessMutex>();
        send_sync_static::<InterProcessReadWriteLock>();
        send_sync_static::<ReadLock>();
        send_sync_static::<WriteLock>();
        send_sync_static::<InterProcessSemaphoreMutex>();
        send_sync_static::<InterProcessSemaphoreV2>();
        send_sync_static::<InterProcessMultiLock>();
        send_sync_static::<Arc<dyn InterProcessLock>>();
    }

    /// Never run: it only has to compile.
    #[allow(clippy::too_many_arguments)]
    fn acquire_futures(
        mutex: &InterProcessMutex,
        rw: &InterProcessReadWriteLock,
        read: &ReadLock,
        write: &WriteLock,
        semaphore_mutex: &InterProcessSemaphoreMutex,
        semaphore: &InterProcessSemaphoreV2,
        multi: &InterProcessMultiLock,
        any: &dyn InterProcessLock,
    ) {
        let t = Duration::ZERO;
        send(mutex.acquire());
        send(mutex.try_acquire());
        send(mutex.acquire_timeout(t));
        send(rw.read());
        send(rw.read_timeout(t));
        send(rw.write());
        send(rw.write_timeout(t));
        send(rw.try_read());
        send(rw.try_write());
        send(read.try_acquire());
        send(write.try_acquire());
        send(semaphore_mutex.try_acquire());
        send(semaphore.try_acquire());
        send(any.try_acquire());
        send(read.acquire());
        send(read.acquire_timeout(t));
        send(write.acquire());
        send(write.acquire_timeout(t));
        send(semaphore_mutex.acquire());
        send(semaphore_mutex.acquire_timeout(t));
        send(semaphore.acquire());
        send(semaphore.acquire_many(2));
        send(semaphore.acquire_timeout(t));
        send(semaphore.acquire_many_timeout(2, t));
        send(multi.acquire());
        send(multi.acquire_timeout(t));
        send(any.acquire());
        send(any.acquire_timeout(t));
        send(InterProcessLock::acquire(mutex));
        send(InterProcessLock::acquire_timeout(semaphore_mutex, t));
    }

    /// Never run: it only has to compile.
    fn release_and_loss_futures(
        guard: LockGuard,
        write: WriteGuard,
        lease: Lease,
        held: HeldLock,
        all: MultiLockGuard,
    ) {
        send(write.lost());
        send(write.downgrade());
        send(guard.lost());
        send(lease.lost());
        send(held.lost());
        send(all.lost());
        send(guard.release());
        send(lease.release());
        send(held.release());
        send(all.release());
    }

    #[test]
    fn acquire_release_and_loss_futures_are_send() {
        // the checks are the functions' bodies, at compile time
        let _ = (acquire_futures as fn(_, _, _, _, _, _, _, _), release_and_loss_futures as fn(_, _, _, _, _));
    }
}
