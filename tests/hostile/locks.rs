//! Locks and semaphore leases beside foreign children. Rule: a child whose name does not end
//! with the recipe's name (`lock-`, `__READ__`/`__WRIT__`, `lease-`) and a ZooKeeper sequence
//! (`%010d` of a 32-bit number) holds nothing — the lock engine leaves it out before it sorts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::inspect::{inspect, RecipeKind};
use zk_recipes::{
    Framework, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2,
};

use crate::support::{self, live, plant, plant_junk, BOUND};

/// How long an acquire that must succeed at once may take in a regression test.
const AT_ONCE: Duration = Duration::from_secs(5);

/// Regression (issue 35): a node named `lock-` or `_c_x-lock-` (nothing after the lock name,
/// so it sorts first) stopped every holder of the mutex forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_node_without_a_sequence_stops_no_holder() {
    let fw = support::framework().await;
    let path = support::base("mutex-nosequence");
    let first = plant(&fw, &path, "lock-", b"by hand", false).await;
    plant(&fw, &path, "_c_x-lock-", b"", false).await;
    let mutex = InterProcessMutex::new(&fw, &path).unwrap();
    let guard = mutex.acquire_timeout(AT_ONCE).await.expect("the mutex is free: the junk holds nothing");
    assert_eq!(mutex.participants().await.unwrap().len(), 1, "junk is no participant");
    let found = inspect(&fw, &path).await.unwrap();
    assert_eq!(found.kind, RecipeKind::Mutex);
    assert_eq!(found.holders.len(), 1);
    let mut foreign: Vec<String> = found.foreign.iter().map(|n| n.name.clone()).collect();
    foreign.sort();
    assert_eq!(foreign, ["_c_x-lock-", "lock-"], "inspect shows the junk as foreign");
    guard.release().await.unwrap();
    // a second process too, while the first holds again
    let other = support::framework().await;
    let held = mutex.acquire_timeout(AT_ONCE).await.unwrap();
    let theirs = InterProcessMutex::new(&other, &path).unwrap();
    assert!(theirs.try_acquire().await.unwrap().is_none(), "exclusion with junk present");
    held.release().await.unwrap();
    theirs.acquire_timeout(AT_ONCE).await.unwrap().release().await.unwrap();
    fw.delete(&first).await.unwrap();
    other.close();
    fw.close();
}

/// Regression (issue 35): two junk children under a semaphore's `leases/` took both of its
/// leases forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_under_leases_takes_no_lease() {
    let fw = support::framework().await;
    let path = support::base("semaphore-junk");
    plant(&fw, &format!("{path}/leases"), "junk", b"", false).await;
    plant(&fw, &format!("{path}/leases"), "lease-", b"", false).await;
    let semaphore = InterProcessSemaphoreV2::new(&fw, &path, 2).unwrap();
    let leases = semaphore.acquire_many_timeout(2, AT_ONCE).await.expect("both leases are free");
    assert!(semaphore.try_acquire().await.unwrap().is_none(), "but no third");
    assert_eq!(semaphore.participants().await.unwrap().len(), 2);
    let found = inspect(&fw, &path).await.unwrap();
    assert_eq!((found.kind, found.holders.len(), found.foreign.len()), (RecipeKind::Semaphore, 2, 2));
    InterProcessSemaphoreV2::return_all(leases).await.unwrap();
    // a permit that is well-formed but expires at the end of time holds a lease (it is a
    // contender by name); waiting behind it neither panics nor wakes early
    let path = support::base("semaphore-far-permit");
    let far = format!("_c_x-expires-{}-lease-0000000001", u64::MAX);
    plant(&fw, &format!("{path}/leases"), &far, b"", false).await;
    let semaphore = InterProcessSemaphoreV2::new(&fw, &path, 2).unwrap();
    let lease = semaphore.acquire_timeout(AT_ONCE).await.unwrap();
    let waited = semaphore.acquire_timeout(Duration::from_millis(300)).await;
    assert!(matches!(waited, Err(zk_recipes::Error::Timeout { .. })), "{waited:?}");
    lease.release().await.unwrap();
    // the semaphore mutex: junk under both its directories
    let path = support::base("semaphore-mutex-junk");
    plant(&fw, &format!("{path}/leases"), "_c_x-lease-", b"", false).await;
    plant(&fw, &format!("{path}/locks"), "lock-", b"", false).await;
    let mutex = InterProcessSemaphoreMutex::new(&fw, &path).unwrap();
    let lease = mutex.acquire_timeout(AT_ONCE).await.expect("the semaphore mutex is free");
    assert!(mutex.try_acquire().await.unwrap().is_none());
    lease.release().await.unwrap();
    fw.close();
}

/// Regression: a writer's name without a sequence (`__WRIT__`) stopped every reader and
/// writer of the read-write lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_name_without_a_sequence_blocks_no_reader() {
    let fw = support::framework().await;
    let path = support::base("rwlock-nosequence");
    plant(&fw, &path, "__WRIT__", b"", false).await;
    plant(&fw, &path, "_c_x-__READ__", b"", false).await;
    let lock = InterProcessReadWriteLock::new(&fw, &path).unwrap();
    let read = lock.read_timeout(AT_ONCE).await.expect("no real writer: the read lock is free");
    read.release().await.unwrap();
    let write = lock.write_timeout(AT_ONCE).await.expect("the write lock is free");
    assert_eq!(lock.participants().await.unwrap().len(), 1);
    write.release().await.unwrap();
    fw.close();
}

/// The lock kinds the property test picks from.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Mutex,
    ReadWrite,
    Semaphore,
    SemaphoreMutex,
}

impl Kind {
    /// The directory junk goes into, and the recipe name junk names imitate.
    fn junk_dir(self, path: &str) -> (String, &'static str) {
        match self {
            Kind::Mutex => (path.to_string(), "lock-"),
            Kind::ReadWrite => (path.to_string(), "__WRIT__"),
            Kind::Semaphore | Kind::SemaphoreMutex => (format!("{path}/leases"), "lease-"),
        }
    }

    /// How many may hold at once.
    fn limit(self) -> usize {
        match self {
            Kind::Semaphore => 2,
            _ => 1,
        }
    }
}

/// One hold of a `kind` lock at `path`, counted in `inside` while it lasts; the most seen at
/// once goes to `most`.
async fn hold_once(fw: &Framework, kind: Kind, path: &str, writer: bool, inside: &AtomicUsize, most: &AtomicUsize) {
    let enter = || {
        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(now, Ordering::SeqCst);
    };
    let pause = Duration::from_millis(3);
    match kind {
        Kind::Mutex => {
            let g = InterProcessMutex::new(fw, path).unwrap().acquire().await.unwrap();
            enter();
            tokio::time::sleep(pause).await;
            inside.fetch_sub(1, Ordering::SeqCst);
            g.release().await.unwrap();
        }
        Kind::ReadWrite if writer => {
            let g = InterProcessReadWriteLock::new(fw, path).unwrap().write().await.unwrap();
            enter();
            tokio::time::sleep(pause).await;
            inside.fetch_sub(1, Ordering::SeqCst);
            g.release().await.unwrap();
        }
        Kind::ReadWrite => {
            // readers share: only writers are counted
            let g = InterProcessReadWriteLock::new(fw, path).unwrap().read().await.unwrap();
            assert_eq!(inside.load(Ordering::SeqCst), 0, "a reader beside a writer");
            tokio::time::sleep(pause).await;
            g.release().await.unwrap();
        }
        Kind::Semaphore => {
            let l = InterProcessSemaphoreV2::new(fw, path, 2).unwrap().acquire().await.unwrap();
            enter();
            tokio::time::sleep(pause).await;
            inside.fetch_sub(1, Ordering::SeqCst);
            l.release().await.unwrap();
        }
        Kind::SemaphoreMutex => {
            let l = InterProcessSemaphoreMutex::new(fw, path).unwrap().acquire().await.unwrap();
            enter();
            tokio::time::sleep(pause).await;
            inside.fetch_sub(1, Ordering::SeqCst);
            l.release().await.unwrap();
        }
    }
}

/// Property: for random lock kinds with random junk beside them (and junk deleted and
/// re-created while they contend), 3 processes × 2 tasks × 4 holds each finish within the
/// bound, never more than the kind's limit hold at once, and every hold happens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_keep_exclusion_and_liveness_beside_random_junk() {
    let mut rng = support::rng("locks");
    let fws = [support::framework().await, support::framework().await, support::framework().await];
    let kinds = [Kind::Mutex, Kind::ReadWrite, Kind::Semaphore, Kind::SemaphoreMutex];
    for round in 0..12 {
        let kind = kinds[round % kinds.len()];
        let path = support::base(&format!("locks-{round}"));
        let (dir, name) = kind.junk_dir(&path);
        let n = rng.usize(1..8);
        let junk = plant_junk(&mut rng, &fws[0], &dir, name, n).await;
        // junk of the mutex kind under the read-write lock too, and under the semaphore's locks
        let extra = plant_junk(&mut rng, &fws[0], &dir, "lock-", 2).await;
        let churn = support::churn(&fws[1], &dir, junk.iter().chain(&extra).cloned().collect(), rng.u64(..));
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for (i, fw) in fws.iter().enumerate() {
            for t in 0..2 {
                let (fw, path, inside, most, done) =
                    (fw.clone(), path.clone(), inside.clone(), most.clone(), done.clone());
                let writer = (i + t) % 2 == 0;
                tasks.push(tokio::spawn(async move {
                    for _ in 0..4 {
                        hold_once(&fw, kind, &path, writer, &inside, &most).await;
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                }));
            }
        }
        live(&format!("round {round} ({kind:?}, junk {junk:?})"), async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .await;
        let churned = support::stop_churn(churn).await;
        assert_eq!(done.load(Ordering::SeqCst), 24, "every hold happened");
        let most = most.load(Ordering::SeqCst);
        assert!(most <= kind.limit(), "{kind:?}: {most} held at once (limit {})", kind.limit());
        println!(
            "round {round}: {kind:?} beside {} junk nodes ({churned} re-creations): at most {most} at once",
            junk.len() + extra.len()
        );
        // nothing of ours is left: only junk
        let left = fws[0].children(&dir).await.unwrap_or_default();
        assert!(left.iter().all(|c| !c.starts_with("_c_") || junk.contains(c) || extra.contains(c)), "{left:?}");
    }
    assert!(BOUND > Duration::ZERO);
    for fw in fws {
        fw.close();
    }
}
