//! Expirable permits of `InterProcessSemaphoreV2`: reclaimed after their expiry (by our
//! waiters, and by the server's TTL where it allows them), released by id from another
//! process, counted by a Curator `InterProcessSemaphoreV2` on the same path, the maximum never
//! exceeded; bad input.

use assert_matches::assert_matches;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use tokio::sync::OnceCell;
use zk_recipes::{Error, Framework, InterProcessSemaphoreV2, LossReason};
use zk_recipes_testing::curator::CuratorPeer;
use zk_recipes_testing::{fixtures, TestingServer};

const WAIT: Duration = Duration::from_secs(20);
const SHORT: Duration = Duration::from_millis(300);
/// How long before its deadline a holder stops using a permit (the margin the docs advise).
const MARGIN: Duration = Duration::from_millis(100);

fn sem_path() -> String {
    format!("/{}/sem", fixtures::unique("permits"))
}

async fn leases(fw: &Framework, path: &str) -> Vec<String> {
    match fw.children(&format!("{path}/leases")).await {
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Vec::new(),
        other => other.unwrap(),
    }
}

/// A server with TTL nodes, shared by the tests of this file that need it.
async fn ttl_server() -> String {
    static SERVER: OnceCell<TestingServer> = OnceCell::const_new();
    let server = SERVER.get_or_init(|| async { TestingServer::builder().extended_types(true).start().await.unwrap() });
    server.await.connect_string().to_string()
}

/// Holders and waiters of permits and leases that let permits expire (their holders "crash"),
/// never more than `MAX` inside at once: a permit counts from its acquisition until its
/// holder's margin before the deadline, a lease until its release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_permits_are_reclaimed_and_the_maximum_holds() {
    const MAX: usize = 3;
    const TASKS: usize = 6;
    const ROUNDS: usize = 3;
    let cs = fixtures::shared_server().await;
    let path = sem_path();
    let inside = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let abandoned = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let (cs, path, inside, peak, abandoned) =
            (cs.clone(), path.clone(), inside.clone(), peak.clone(), abandoned.clone());
        tasks.push(tokio::spawn(async move {
            let fw = fixtures::framework(&cs).await;
            let sem = InterProcessSemaphoreV2::new(&fw, &path, MAX).unwrap();
            let enter = || {
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                assert!(now <= MAX, "{now} holders inside, at most {MAX}");
            };
            for round in 0..ROUNDS {
                if t % 3 == 2 {
                    // an ordinary lease
                    let lease = sem.acquire().await.unwrap();
                    enter();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    lease.release().await.unwrap();
                    continue;
                }
                let permit = sem.acquire_with_expiry(Duration::from_millis(700)).await.unwrap();
                enter();
                assert!(!permit.is_expired());
                if (t + round) % 2 == 0 {
                    // released by id, as another process would
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    sem.release_permit(permit.permit_id()).await.unwrap();
                } else {
                    // abandoned: the holder stops using it before it expires, and forgets it
                    let (inside, abandoned) = (inside.clone(), abandoned.clone());
                    abandoned.lock().unwrap().push(permit.path().to_string());
                    let deadline = tokio::time::Instant::now() + Duration::from_millis(700) - MARGIN;
                    tokio::spawn(async move {
                        tokio::time::sleep_until(deadline).await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            }
            fw
        }));
    }
    let mut fws = Vec::new();
    for t in tasks {
        fws.push(fixtures::within(Duration::from_secs(45), t).await.unwrap());
    }
    fixtures::eventually(WAIT, "the abandoned permits' holders stopped", || async {
        inside.load(Ordering::SeqCst) == 0
    })
    .await;
    let abandoned = abandoned.lock().unwrap().clone();
    let mut left = 0;
    for permit in &abandoned {
        left += usize::from(fws[0].exists(permit).await.unwrap().is_some());
    }
    let reclaimed = abandoned.len() - left;
    println!(
        "peak {} of {MAX}; {reclaimed} of {} abandoned permits reclaimed by waiters",
        peak.load(Ordering::SeqCst),
        abandoned.len()
    );
    assert_eq!(peak.load(Ordering::SeqCst), MAX, "the semaphore was used up to its maximum");
    assert!(reclaimed > 0, "waiters reclaimed expired permits");
    // the rest is reclaimed by the next waiter that needs the places
    let sem = InterProcessSemaphoreV2::new(&fws[0], &path, MAX).unwrap();
    let all = fixtures::within(WAIT, sem.acquire_many(MAX)).await.unwrap();
    zk_recipes::InterProcessSemaphoreV2::return_all(all).await.unwrap();
    fixtures::settle(&fws.iter().collect::<Vec<_>>()).await;
    assert_eq!(leases(&fws[0], &path).await, Vec::<String>::new(), "nothing left");
    for fw in fws {
        fw.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_outlives_its_session_and_is_released_by_id_elsewhere() {
    let cs = fixtures::shared_server().await;
    let path = sem_path();
    let holder = fixtures::framework(&cs).await;
    let permit = InterProcessSemaphoreV2::new(&holder, &path, 1)
        .unwrap()
        .acquire_with_expiry(Duration::from_secs(60))
        .await
        .unwrap();
    let id = permit.permit_id().to_string();
    assert!(id.contains("-expires-") && id.contains("-lease-"), "{id}");
    // the holder's process goes away: the permit stays held
    holder.close();
    let other = fixtures::framework(&cs).await;
    let sem = InterProcessSemaphoreV2::new(&other, &path, 1).unwrap();
    let stat = other.exists(permit.path()).await.unwrap().expect("the permit outlives its session");
    assert_eq!(stat.ephemeral_owner, 0);
    assert_eq!(stat.czxid, permit.fencing_token());
    assert!(sem.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "the permit holds the only place");
    let refused = sem.acquire_with_expiry_timeout(Duration::from_secs(60), SHORT).await;
    assert!(refused.is_err_and(|e| e.is_timeout()), "no second permit");
    assert_eq!(leases(&other, &path).await.len(), 1, "a timed-out acquire leaves nothing");
    // released by id from another process
    sem.release_permit(&id).await.unwrap();
    let lease = fixtures::within(WAIT, sem.acquire()).await.unwrap();
    assert_matches!(
        sem.release_permit(&id).await,
        Err(Error::UnknownPermit { semaphore, permit_id, .. }) if semaphore == path && permit_id == id,
        "released twice"
    );
    lease.release().await.unwrap();
    assert!(leases(&other, &path).await.is_empty());
    other.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_permit_input_is_refused_with_typed_errors() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = sem_path();
    let sem = InterProcessSemaphoreV2::new(&fw, &path, 2).unwrap();
    for expiry in [Duration::ZERO, Duration::from_millis(0xFF_FFFF_FFFF + 1)] {
        assert!(matches!(sem.acquire_with_expiry(expiry).await, Err(Error::InvalidArgument { .. })), "{expiry:?}");
    }
    let lease = sem.acquire().await.unwrap();
    let ordinary = lease.path().rsplit('/').next().unwrap().to_string();
    for bad in ["", "nope", "a/b", "..", ordinary.as_str()] {
        assert!(matches!(sem.release_permit(bad).await, Err(Error::InvalidArgument { .. })), "{bad:?}");
    }
    let unknown = "_c_00000000-0000-4000-8000-000000000000-expires-1-lease-0000000001";
    assert_matches!(
        sem.release_permit(unknown).await,
        Err(Error::UnknownPermit { semaphore, permit_id, .. }) if semaphore == path && permit_id == unknown
    );
    assert_eq!(leases(&fw, &path).await.len(), 1, "refused input changed nothing");
    lease.release().await.unwrap();
    assert!(leases(&fw, &path).await.is_empty(), "nothing left behind");
    fw.close();
}

/// A semaphore of 2 at a new path, and a Curator client (`java`) holding one lease of it
/// (holder `h1`).
struct CuratorScene {
    peer: std::sync::Arc<CuratorPeer>,
    fw: Framework,
    path: String,
    sem: InterProcessSemaphoreV2,
    java: String,
}

async fn curator_scene(cs: &str) -> CuratorScene {
    let peer = CuratorPeer::shared().await.expect("Curator peer starts (bash scripts/setup.sh installs it)");
    let fw = fixtures::framework(cs).await;
    let path = sem_path();
    let sem = InterProcessSemaphoreV2::new(&fw, &path, 2).unwrap();
    let java = fixtures::unique("java");
    peer.connect(&java, cs).await.unwrap();
    assert!(peer.sem_acquire(&java, "h1", &path, 2, 1, WAIT).await.unwrap());
    CuratorScene { peer, fw, path, sem, java }
}

/// With TTL nodes the server deletes an abandoned permit by itself; a Curator
/// `InterProcessSemaphoreV2` on the same path counts our permits as leases, and gets the place
/// of an expired one without any waiter of ours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_counts_permits_and_the_server_reclaims_them_by_ttl() {
    let cs = ttl_server().await;
    let CuratorScene { peer, fw, path, sem, java } = curator_scene(&cs).await;
    // Curator holds one lease, we hold one permit: 2 of 2
    let permit = sem.acquire_with_expiry(Duration::from_secs(2)).await.unwrap();
    assert!(permit.server_ttl(), "the server has TTL nodes");
    assert!(sem.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "ours: 2 of 2 taken");
    assert!(!peer.sem_acquire(&java, "h2", &path, 2, 1, SHORT).await.unwrap(), "Curator counts the permit");
    // the permit is abandoned: Curator waits, and gets its place once the server reaps it
    let started = tokio::time::Instant::now();
    assert!(peer.sem_acquire(&java, "h2", &path, 2, 1, WAIT).await.unwrap(), "Curator got the expired permit's place");
    let waited = started.elapsed();
    println!("Curator waited {waited:?} for a permit expiring in 2 s (TTL)");
    assert!(permit.is_expired(), "not before the permit's deadline");
    assert!(fw.exists(permit.path()).await.unwrap().is_none());
    assert!(sem.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "2 of 2 Curator leases");
    assert_eq!(peer.sem_release(&java, "h1").await.unwrap(), 1);
    assert_eq!(peer.sem_release(&java, "h2").await.unwrap(), 1);
    peer.close(&java).await.unwrap();
    assert!(leases(&fw, &path).await.is_empty());
    fw.close();
}

/// Without TTL nodes, our waiter reclaims an expired permit while a Curator lease holds the
/// other place; Curator and ours never hold more than the maximum together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_waiter_reclaims_an_expired_permit_next_to_curator_leases() {
    let cs = fixtures::shared_server().await;
    let CuratorScene { peer, fw, path, sem, java } = curator_scene(&cs).await;
    let permit = sem.acquire_with_expiry(Duration::from_secs(1)).await.unwrap();
    assert!(!permit.server_ttl(), "the shared server has no TTL nodes");
    assert!(!peer.sem_acquire(&java, "h2", &path, 2, 1, SHORT).await.unwrap(), "Curator counts the permit");
    let started = tokio::time::Instant::now();
    // a bounded wait that outlasts the permit: its timer wakes the waiter, which reclaims it
    let lease = sem.acquire_timeout(WAIT).await.expect("the expired permit's place");
    assert!(permit.is_expired(), "our waiter took the place only after the deadline ({:?})", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(5), "woken at the deadline, not at the timeout");
    assert!(fw.exists(permit.path()).await.unwrap().is_none(), "the expired permit was reclaimed");
    assert_matches!(
        permit.clone().release().await,
        Err(Error::LockLost { path, reason: LossReason::Expired, .. }) if path == permit.path()
    );
    assert!(!peer.sem_acquire(&java, "h2", &path, 2, 1, SHORT).await.unwrap(), "2 of 2: Curator's and our lease");
    lease.release().await.unwrap();
    assert_eq!(peer.sem_release(&java, "h1").await.unwrap(), 1);
    peer.close(&java).await.unwrap();
    fixtures::settle(&[&fw]).await;
    assert!(leases(&fw, &path).await.is_empty());
    fw.close();
}
