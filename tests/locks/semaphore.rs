//! The semaphore's fast path: one lease taken without the internal lock while no one queues for
//! it. The maximum holds across sessions; a waiter holds as soon as any lease before it goes
//! (holders let go in any order); an expirable permit counts before every lease wherever it
//! sorts; and an acquire that finds someone queued for the internal lock queues behind them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::{Framework, InterProcessSemaphoreV2, Lease};
use zk_recipes_testing::fixtures;

use super::WAIT;

/// How long a waiter is watched to still wait.
const STILL: Duration = Duration::from_millis(400);

async fn still_waits<T>(task: &tokio::task::JoinHandle<T>, why: &str) {
    tokio::time::sleep(STILL).await;
    assert!(!task.is_finished(), "{why}");
}

async fn promptly(task: tokio::task::JoinHandle<zk_recipes::Result<Lease>>, what: &str) -> Lease {
    tokio::time::timeout(WAIT, task).await.unwrap_or_else(|_| panic!("{what}: not in time")).unwrap().unwrap()
}

fn spawn_acquire(sem: &InterProcessSemaphoreV2) -> tokio::task::JoinHandle<zk_recipes::Result<Lease>> {
    let sem = sem.clone();
    tokio::spawn(async move { sem.acquire().await })
}

/// Waits until `dir` has `n` children.
async fn queued(fw: &Framework, dir: &str, n: usize, what: &str) {
    fixtures::eventually(WAIT, what, || async { fw.children(dir).await.map(|c| c.len()).unwrap_or(0) == n }).await;
}

async fn lock_queue(fw: &Framework, path: &str) -> usize {
    fw.children(&format!("{path}/locks")).await.map(|c| c.len()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_sessions_never_exceed_two_leases_and_take_no_internal_lock() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("sem-fast"));
    let (inside, peak, holds) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let watcher = fixtures::framework(&cs).await;
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let (cs, path, inside, peak, holds) = (cs.clone(), path.clone(), inside.clone(), peak.clone(), holds.clone());
        tasks.push(tokio::spawn(async move {
            let fw = fixtures::framework(&cs).await;
            let sem = InterProcessSemaphoreV2::new(&fw, &path, 2).unwrap();
            for round in 0..5u64 {
                let lease = sem.acquire_timeout(WAIT).await.unwrap();
                peak.fetch_max(inside.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                holds.fetch_add(1, Ordering::SeqCst);
                // holds of different lengths: holders let go out of their order
                tokio::time::sleep(Duration::from_millis(2 + round * 3)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.unwrap();
            }
            fw.close();
        }));
    }
    let mut lock_nodes = 0;
    while !tasks.iter().all(|t| t.is_finished()) {
        lock_nodes = lock_nodes.max(lock_queue(&watcher, &path).await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for t in tasks {
        t.await.unwrap();
    }
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= 2, "more than 2 leases held at once: {peak}");
    assert_eq!(peak, 2, "the two leases were never held together");
    assert_eq!(holds.load(Ordering::SeqCst), 60, "every round held");
    assert_eq!(lock_nodes, 0, "single leases took the internal lock");
    assert!(fixtures::ephemerals(&watcher, &path).await.unwrap().is_empty(), "no node left");
    watcher.close();
}

#[tokio::test]
async fn a_waiter_holds_when_any_lease_before_it_goes() {
    let cs = fixtures::shared_server().await;
    let (a, b) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("sem-order"));
    let leases = format!("{path}/leases");
    let (sa, sb) =
        (InterProcessSemaphoreV2::new(&a, &path, 2).unwrap(), InterProcessSemaphoreV2::new(&b, &path, 2).unwrap());
    let first = sa.acquire().await.unwrap();
    let second = sa.acquire().await.unwrap();
    let waiter = spawn_acquire(&sb);
    queued(&a, &leases, 3, "the waiter queued").await;
    still_waits(&waiter, "two leases are held").await;
    // the later holder lets go first: the waiter holds while the first still does
    second.release().await.unwrap();
    let third = promptly(waiter, "the waiter after the second lease went").await;
    assert!(!first.is_lost() && !third.is_lost());
    assert!(sb.try_acquire().await.unwrap().is_none(), "two held");
    first.release().await.unwrap();
    third.release().await.unwrap();
    fixtures::settle(&[&a, &b]).await;
    assert!(fixtures::ephemerals(&a, &path).await.unwrap().is_empty());
    a.close();
    b.close();
}

/// A permit replaces its lease with a node of a later sequence: a waiter that sorted behind the
/// lease now sorts before the permit, and must still count it.
#[tokio::test]
async fn a_permit_counts_before_a_waiter_that_sorts_before_it() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("sem-permit"));
    let leases = format!("{path}/leases");
    let sem = InterProcessSemaphoreV2::new(&fw, &path, 2).unwrap();
    let first = sem.acquire().await.unwrap();
    let second = sem.acquire().await.unwrap();
    let permit_taker = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire_with_expiry(Duration::from_secs(600)).await })
    };
    queued(&fw, &leases, 3, "the permit's acquire queued").await;
    let waiter = spawn_acquire(&sem);
    queued(&fw, &leases, 4, "the waiter queued behind it").await;
    // the permit's lease holds, and becomes a permit sorting after the waiter
    first.release().await.unwrap();
    let permit = tokio::time::timeout(WAIT, permit_taker).await.unwrap().unwrap().unwrap();
    let mut children = fw.children(&leases).await.unwrap();
    children.sort_by(|x, y| x[x.len() - 10..].cmp(&y[y.len() - 10..]));
    assert!(children.last().unwrap().contains(permit.permit_id()), "the permit sorts last: {children:?}");
    still_waits(&waiter, "the second lease and the permit are held").await;
    second.release().await.unwrap();
    let third = promptly(waiter, "the waiter after the second lease went").await;
    assert!(sem.try_acquire().await.unwrap().is_none(), "the permit and the waiter's lease are held");
    permit.release().await.unwrap();
    sem.acquire_timeout(WAIT).await.unwrap().release().await.unwrap();
    third.release().await.unwrap();
    fixtures::settle(&[&fw]).await;
    assert!(fw.children(&leases).await.unwrap().is_empty(), "no lease or permit left");
    fw.close();
}

/// An `acquire_many` takes the internal lock and waits under it, as Curator's acquirers do: a
/// single acquire that comes later finds it at its first wait and queues behind it, instead of
/// taking a lease that the lock's holder counted on.
#[tokio::test]
async fn a_single_acquire_queues_behind_one_waiting_under_the_internal_lock() {
    let cs = fixtures::shared_server().await;
    let (a, b, c) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("sem-yield"));
    let leases = format!("{path}/leases");
    let sa = InterProcessSemaphoreV2::new(&a, &path, 2).unwrap();
    let (first, second) = (sa.acquire().await.unwrap(), sa.acquire().await.unwrap());
    let many = {
        let sem = InterProcessSemaphoreV2::new(&b, &path, 2).unwrap();
        tokio::spawn(async move { sem.acquire_many(2).await })
    };
    queued(&a, &leases, 3, "acquire_many's first lease queued").await;
    assert_eq!(lock_queue(&a, &path).await, 1, "acquire_many holds the internal lock");
    let single = spawn_acquire(&InterProcessSemaphoreV2::new(&c, &path, 2).unwrap());
    fixtures::eventually(WAIT, "the single acquire queued for the internal lock", || async {
        lock_queue(&a, &path).await == 2
    })
    .await;
    assert_eq!(a.children(&leases).await.unwrap().len(), 3, "its lease withdrawn");
    first.release().await.unwrap();
    still_waits(&single, "acquire_many is first").await;
    second.release().await.unwrap();
    let two = tokio::time::timeout(WAIT, many).await.unwrap().unwrap().unwrap();
    still_waits(&single, "acquire_many holds both").await;
    InterProcessSemaphoreV2::return_all(two).await.unwrap();
    promptly(single, "the single acquire after acquire_many's release").await.release().await.unwrap();
    fixtures::settle(&[&a, &b, &c]).await;
    assert!(fixtures::ephemerals(&a, &path).await.unwrap().is_empty());
    for fw in [a, b, c] {
        fw.close();
    }
}

/// A waiter under the internal lock whose session expires loses the lock with it: it acquires
/// again from the top (the lock first) instead of waiting on by Curator's count without the
/// lock, where a later fast-path waiter, finding no one queued, could queue behind it and the
/// two wait for each other.
#[tokio::test]
async fn a_waiter_under_the_internal_lock_takes_it_again_after_its_session_expires() {
    let cs = fixtures::shared_server().await;
    let (a, b) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("sem-expire"));
    let leases = format!("{path}/leases");
    let sa = InterProcessSemaphoreV2::new(&a, &path, 2).unwrap();
    let held = sa.acquire_many(2).await.unwrap();
    let many = {
        let sem = InterProcessSemaphoreV2::new(&b, &path, 2).unwrap();
        tokio::spawn(async move { sem.acquire_many(2).await })
    };
    queued(&a, &leases, 3, "acquire_many's first lease queued").await;
    let first_session = b.status().session_id;
    zk_recipes_testing::expire_session(&b).await.unwrap();
    // back in the queue under a new session: the lock again, then a lease under it
    fixtures::eventually(WAIT, "acquire_many queued again under a new session", || async {
        let owners = |dir: String| {
            let a = a.clone();
            async move {
                let mut owners = Vec::new();
                for child in a.children(&dir).await.unwrap_or_default() {
                    if let Ok(Some(stat)) = a.exists(&format!("{dir}/{child}")).await {
                        owners.push(stat.ephemeral_owner);
                    }
                }
                owners
            }
        };
        let session = b.status().session_id;
        session != first_session
            && owners(format!("{path}/locks")).await == vec![session]
            && owners(leases.clone()).await.iter().filter(|&&o| o == session).count() == 1
    })
    .await;
    still_waits(&many, "two leases are held").await;
    InterProcessSemaphoreV2::return_all(held).await.unwrap();
    let two = tokio::time::timeout(WAIT, many).await.expect("acquire_many after the release").unwrap().unwrap();
    assert_eq!(two.len(), 2);
    assert!(two.iter().all(|l| !l.is_lost()));
    InterProcessSemaphoreV2::return_all(two).await.unwrap();
    fixtures::settle(&[&a, &b]).await;
    assert!(fixtures::ephemerals(&a, &path).await.unwrap().is_empty());
    a.close();
    b.close();
}
