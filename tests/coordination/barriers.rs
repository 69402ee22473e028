//! Barriers against a real ZooKeeper server: the barrier (set, wait, remove, session events)
//! and the double barrier (enter and leave together, dying members, many rounds, timeouts,
//! cancellation).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use zk_recipes::{DistributedBarrier, DistributedDoubleBarrier, Error, Framework};
use zk_recipes_testing::fixtures;
use zk_recipes_testing::{expire_session, TestingServer};

const WAIT: Duration = Duration::from_secs(20);
/// How long a waiter must stay blocked to count as blocked.
const BLOCKED: Duration = Duration::from_millis(300);

async fn framework(cs: &str) -> Framework {
    fixtures::framework_with(cs, |builder| builder.default_data(b"10.0.0.7".to_vec())).await
}

async fn frameworks(cs: &str, n: usize) -> Vec<Framework> {
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        all.push(framework(cs).await);
    }
    all
}

/// The member nodes under a double barrier (without `ready`); none when the path is gone.
async fn members(fw: &Framework, path: &str) -> Vec<String> {
    match fw.children(path).await {
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Vec::new(),
        other => other.unwrap().into_iter().filter(|c| c != "ready").collect(),
    }
}

async fn has_ready(fw: &Framework, path: &str) -> bool {
    fw.exists(&format!("{path}/ready")).await.unwrap().is_some()
}

// ------------------------------------------------------------------------------------------
// DistributedBarrier

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barrier_holds_8_waiters_until_removed() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}/gate", fixtures::unique("barrier"));
    let setter = framework(&cs).await;
    let barrier = DistributedBarrier::new(&setter, &path).unwrap();
    barrier.set_barrier().await.unwrap();
    barrier.set_barrier().await.unwrap(); // already set is fine
    let (data, stat) = setter.get_data(&path).await.unwrap();
    assert_eq!(data, b"10.0.0.7", "the barrier node holds the default data");
    assert_eq!(stat.ephemeral_owner, 0, "the barrier node is persistent");

    let released = Arc::new(AtomicUsize::new(0));
    let mut waiters = Vec::new();
    for fw in frameworks(&cs, 8).await {
        let (path, released) = (path.clone(), released.clone());
        waiters.push(tokio::spawn(async move {
            let b = DistributedBarrier::new(&fw, &path).unwrap();
            b.wait_on_barrier().await.unwrap();
            released.fetch_add(1, Ordering::SeqCst);
            fw.close();
        }));
    }
    tokio::time::sleep(BLOCKED).await;
    assert_eq!(released.load(Ordering::SeqCst), 0, "a waiter passed a set barrier");
    let removed_at = tokio::time::Instant::now();
    barrier.remove_barrier().await.unwrap();
    for w in waiters {
        fixtures::within(WAIT, w).await.unwrap();
    }
    assert_eq!(released.load(Ordering::SeqCst), 8);
    println!("8 waiters released {:?} after remove", removed_at.elapsed());
    barrier.remove_barrier().await.unwrap(); // already removed is fine
    assert!(setter.exists(&path).await.unwrap().is_none());
}

#[tokio::test]
async fn barrier_wait_timeout_and_unset_barrier() {
    let cs = fixtures::shared_server().await;
    let fw = framework(&cs).await;
    let path = format!("/{}", fixtures::unique("barrier-timeout"));
    let barrier = DistributedBarrier::new(&fw, &path).unwrap();
    // not set: passes at once
    assert!(fixtures::in_time(barrier.wait_on_barrier_timeout(Duration::ZERO).await));
    barrier.set_barrier().await.unwrap();
    let started = tokio::time::Instant::now();
    assert!(!fixtures::in_time(barrier.wait_on_barrier_timeout(BLOCKED).await));
    assert!(started.elapsed() >= BLOCKED);
    assert!(!fixtures::in_time(barrier.wait_on_barrier_timeout(Duration::ZERO).await));
    barrier.remove_barrier().await.unwrap();
    assert!(fixtures::in_time(barrier.wait_on_barrier_timeout(BLOCKED).await));
    assert!(matches!(DistributedBarrier::new(&fw, "relative"), Err(Error::InvalidPath { .. })));
    assert!(matches!(DistributedBarrier::new(&fw, "/"), Err(Error::InvalidPath { .. })));
}

#[tokio::test]
async fn barrier_waiter_is_not_let_through_by_session_events() {
    let server = TestingServer::start().await.unwrap();
    let cs = server.connect_string();
    let admin = framework(cs).await;
    let waiter_fw = framework(cs).await;
    let path = "/gate";
    DistributedBarrier::new(&admin, path).unwrap().set_barrier().await.unwrap();
    let waiter = {
        let b = DistributedBarrier::new(&waiter_fw, path).unwrap();
        tokio::spawn(async move { b.wait_on_barrier().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;

    // 1. the connection drops and comes back (same session)
    server.stop().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiter.is_finished(), "let through while the server was down");
    server.restart().await.unwrap();
    waiter_fw.wait_connected(WAIT).await.unwrap();
    tokio::time::sleep(BLOCKED).await;
    assert!(!waiter.is_finished(), "let through by a reconnection");

    // 2. the session expires and a new one is built
    let before = waiter_fw.status().session_id;
    expire_session(&waiter_fw).await.unwrap();
    waiter_fw.wait_connected(WAIT).await.unwrap();
    assert_ne!(waiter_fw.status().session_id, before);
    tokio::time::sleep(BLOCKED).await;
    assert!(!waiter.is_finished(), "let through by a session expiry");

    // 3. only a removal lets it through
    admin.wait_connected(WAIT).await.unwrap();
    DistributedBarrier::new(&admin, path).unwrap().remove_barrier().await.unwrap();
    fixtures::within(WAIT, waiter).await.unwrap().unwrap();
}

// ------------------------------------------------------------------------------------------
// DistributedDoubleBarrier

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_8_members_enter_and_leave_together() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("double"));
    let fws = frameworks(&cs, 8).await;
    let inspector = framework(&cs).await;
    let entered = Arc::new(AtomicUsize::new(0));
    let left = Arc::new(AtomicUsize::new(0));
    let (go_leave, _) = tokio::sync::broadcast::channel::<usize>(8);
    let mut members_tasks = Vec::new();
    for (i, fw) in fws.iter().enumerate() {
        let barrier = DistributedDoubleBarrier::new(fw, &path, 8).unwrap();
        let (in_count, out_count, mut go) = (entered.clone(), left.clone(), go_leave.subscribe());
        members_tasks.push(tokio::spawn(async move {
            barrier.enter().await.unwrap();
            in_count.fetch_add(1, Ordering::SeqCst);
            // leave when told: members 0..7 first, member 7 last
            while go.recv().await.unwrap() < i {}
            barrier.leave().await.unwrap();
            out_count.fetch_add(1, Ordering::SeqCst);
            barrier
        }));
        // members arrive one by one: the earlier ones are waiting when the later ones come
        fixtures::eventually(WAIT, format!("member {i} never arrived"), || async {
            members(&inspector, &path).await.len() >= (i + 1).min(7)
        })
        .await;
        if i == 6 {
            // 7 of 8 are in: nobody passes
            tokio::time::sleep(BLOCKED).await;
            assert_eq!(entered.load(Ordering::SeqCst), 0, "entered with 7 of 8 members");
            assert_eq!(members(&inspector, &path).await.len(), 7);
            assert!(!has_ready(&inspector, &path).await);
        }
    }
    fixtures::eventually(WAIT, "not all 8 entered", || async { entered.load(Ordering::SeqCst) >= 8 }).await;
    // layout: 8 ephemeral uuid members with the default data, a persistent `ready`
    let names = members(&inspector, &path).await;
    assert_eq!(names.len(), 8);
    for name in &names {
        assert_eq!(name.len(), 36, "a bare uuid: {name}");
        let (data, stat) = inspector.get_data(&format!("{path}/{name}")).await.unwrap();
        assert_ne!(stat.ephemeral_owner, 0);
        assert_eq!(data, b"10.0.0.7");
    }
    let (ready_data, ready_stat) = inspector.get_data(&format!("{path}/ready")).await.unwrap();
    assert_eq!((ready_data.as_slice(), ready_stat.ephemeral_owner), (&b"10.0.0.7"[..], 0));

    // 7 leave; they wait for the 8th
    go_leave.send(6).unwrap();
    tokio::time::sleep(BLOCKED).await;
    assert_eq!(left.load(Ordering::SeqCst), 0, "left while a member was still in");
    go_leave.send(7).unwrap();
    for t in members_tasks {
        fixtures::within(WAIT, t).await.unwrap();
    }
    assert_eq!(left.load(Ordering::SeqCst), 8);
    assert!(members(&inspector, &path).await.is_empty());
    assert!(!has_ready(&inspector, &path).await, "`ready` is deleted after the last one left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_others_leave_when_a_member_dies() {
    let cs = fixtures::shared_server().await;
    for expire in [false, true] {
        let path = format!("/{}", fixtures::unique("dying"));
        let fws = frameworks(&cs, 5).await;
        let barriers: Vec<_> = fws.iter().map(|fw| DistributedDoubleBarrier::new(fw, &path, 5).unwrap()).collect();
        let mut entering = Vec::new();
        for b in &barriers {
            entering.push(b.enter_timeout(WAIT));
        }
        for ok in futures_util::future::join_all(entering).await {
            assert!(fixtures::in_time(ok), "entered");
        }
        // four leave; they keep waiting for the fifth, which then dies without leaving
        let started = tokio::time::Instant::now();
        let leaving = futures_util::future::join_all(barriers[..4].iter().map(|b| b.leave_timeout(WAIT)));
        tokio::pin!(leaving);
        assert!(tokio::time::timeout(BLOCKED, &mut leaving).await.is_err(), "left while the fifth was in");
        if expire {
            expire_session(&fws[4]).await.unwrap();
        } else {
            fws[4].close();
        }
        let died_at = tokio::time::Instant::now();
        for ok in fixtures::within(WAIT, leaving).await {
            assert!(fixtures::in_time(ok), "left in time");
        }
        println!(
            "dying member ({}): the others left {:?} after its death ({:?} in all)",
            if expire { "session expired" } else { "closed" },
            died_at.elapsed(),
            started.elapsed()
        );
        assert!(members(&fws[0], &path).await.is_empty());
        assert!(!has_ready(&fws[0], &path).await);
        for fw in &fws {
            fw.close();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_16_members_100_rounds_without_a_hang() {
    const MEMBERS: usize = 16;
    const ROUNDS: usize = 100;
    let cs = fixtures::shared_server().await;
    let base = format!("/{}", fixtures::unique("rounds"));
    let fws = frameworks(&cs, MEMBERS).await;
    let arrived: Arc<Vec<AtomicUsize>> = Arc::new((0..ROUNDS).map(|_| AtomicUsize::new(0)).collect());
    let departed: Arc<Vec<AtomicUsize>> = Arc::new((0..ROUNDS).map(|_| AtomicUsize::new(0)).collect());
    let started = tokio::time::Instant::now();
    let mut tasks = Vec::new();
    for fw in fws.clone() {
        let (base, arrived, departed) = (base.clone(), arrived.clone(), departed.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                let barrier = DistributedDoubleBarrier::new(&fw, &format!("{base}/r{round}"), MEMBERS).unwrap();
                arrived[round].fetch_add(1, Ordering::SeqCst);
                assert!(fixtures::in_time(barrier.enter_timeout(WAIT).await), "round {round}: enter hung");
                let seen = arrived[round].load(Ordering::SeqCst);
                assert_eq!(seen, MEMBERS, "round {round}: entered with {seen} of {MEMBERS} arrived");
                // `ready` stays until every member has left, so an honest enter always sees it
                let ready = fw.exists(&format!("{}/ready", barrier.path())).await.unwrap();
                assert!(ready.is_some(), "round {round}: entered before the barrier opened");
                departed[round].fetch_add(1, Ordering::SeqCst);
                assert!(fixtures::in_time(barrier.leave_timeout(WAIT).await), "round {round}: leave hung");
                let gone = departed[round].load(Ordering::SeqCst);
                assert_eq!(gone, MEMBERS, "round {round}: left with {gone} of {MEMBERS} leaving");
                // leave returns only once every member node is gone
                let still_in = members(&fw, barrier.path()).await;
                assert!(still_in.is_empty(), "round {round}: left while {} members were in", still_in.len());
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(240), t).await.expect("100 rounds in bounded time").unwrap();
    }
    let took = started.elapsed();
    println!("{MEMBERS} members x {ROUNDS} rounds: {took:?} ({:?} per round)", took / ROUNDS as u32);
    for round in [0, ROUNDS / 2, ROUNDS - 1] {
        let path = format!("{base}/r{round}");
        assert!(members(&fws[0], &path).await.is_empty(), "round {round}: members left behind");
        assert!(!has_ready(&fws[0], &path).await, "round {round}: ready left behind");
    }
}

#[tokio::test]
async fn double_barrier_bad_input_timeouts_and_cancellation_leave_no_member() {
    let cs = fixtures::shared_server().await;
    let a = framework(&cs).await;
    let b = framework(&cs).await;
    assert!(matches!(DistributedDoubleBarrier::new(&a, "/x", 0), Err(Error::InvalidArgument { .. })));
    assert!(matches!(DistributedDoubleBarrier::new(&a, "x", 2), Err(Error::InvalidPath { .. })));
    assert!(matches!(DistributedDoubleBarrier::new(&a, "/", 2), Err(Error::InvalidPath { .. })));

    // enter timeout: no member node of ours is left
    let path = format!("/{}", fixtures::unique("enter-timeout"));
    let lonely = DistributedDoubleBarrier::new(&a, &path, 3).unwrap();
    let started = tokio::time::Instant::now();
    assert!(!fixtures::in_time(lonely.enter_timeout(BLOCKED).await));
    assert!(started.elapsed() >= BLOCKED);
    assert!(members(&a, &path).await.is_empty(), "member node left after an enter timeout");
    assert!(!fixtures::in_time(lonely.enter_timeout(Duration::ZERO).await));
    assert!(members(&a, &path).await.is_empty());

    // dropped enter futures, cancelled at varying points: no member node is left
    for i in 0..20u64 {
        let _ = tokio::time::timeout(Duration::from_micros(i * 401 % 4000), lonely.enter()).await;
    }
    fixtures::settle(&[&a]).await;
    assert!(members(&a, &path).await.is_empty(), "member node left by a cancelled enter");

    // a member of 1 passes at once
    let solo_path = format!("/{}", fixtures::unique("solo"));
    let solo = DistributedDoubleBarrier::new(&a, &solo_path, 1).unwrap();
    assert!(fixtures::in_time(solo.enter_timeout(WAIT).await));
    assert!(fixtures::in_time(solo.leave_timeout(WAIT).await));
    assert!(members(&a, &solo_path).await.is_empty() && !has_ready(&a, &solo_path).await);

    // leave timeout: our node goes anyway, the other member can still leave
    let path = format!("/{}", fixtures::unique("leave-timeout"));
    let ma = DistributedDoubleBarrier::new(&a, &path, 2).unwrap();
    let mb = DistributedDoubleBarrier::new(&b, &path, 2).unwrap();
    let (ea, eb) = tokio::join!(ma.enter_timeout(WAIT), mb.enter_timeout(WAIT));
    assert!(fixtures::in_time(ea) && fixtures::in_time(eb));
    assert!(!fixtures::in_time(ma.leave_timeout(BLOCKED).await), "left while the other member was in");
    assert_eq!(members(&a, &path).await, vec![mb.member_path().rsplit('/').next().unwrap().to_string()]);
    assert!(fixtures::in_time(mb.leave_timeout(WAIT).await));
    assert!(members(&a, &path).await.is_empty() && !has_ready(&a, &path).await);

    // a dropped leave future deletes our node too
    let path = format!("/{}", fixtures::unique("leave-cancel"));
    let ma = DistributedDoubleBarrier::new(&a, &path, 2).unwrap();
    let mb = DistributedDoubleBarrier::new(&b, &path, 2).unwrap();
    let (ea, eb) = tokio::join!(ma.enter_timeout(WAIT), mb.enter_timeout(WAIT));
    assert!(fixtures::in_time(ea) && fixtures::in_time(eb));
    let _ = tokio::time::timeout(Duration::from_millis(50), ma.leave()).await;
    fixtures::settle(&[&a]).await;
    assert_eq!(members(&a, &path).await.len(), 1, "only b's member is left");
    assert!(fixtures::in_time(mb.leave_timeout(WAIT).await));
}
