//! `Framework::shutdown` under faults: while the ensemble is partitioned from the client,
//! while a leader election is under way, and while a session is being re-created. Each
//! returns within its timeout, says whether the server acknowledged (`Ok`) or not
//! (`Err(Timeout)`), and leaves nothing behind once the server is reachable again: after an
//! `Ok` at once, after a timeout when the session's timeout has passed.

use assert_matches::assert_matches;
use std::time::{Duration, Instant};

use zk_recipes::CreateMode;
use zk_recipes::{Error, Framework, GroupMember, InterProcessMutex, LeaderLatch};
use zk_recipes_testing::fixtures::{self, SESSION_TIMEOUT};
use zk_recipes_testing::{ProxyMode, TcpProxy};

const WAIT: Duration = Duration::from_secs(30);
/// How late a shutdown may return after its timeout on a loaded machine.
const LATE: Duration = Duration::from_secs(1);

/// Every ephemeral node under `root` but those of `other`'s session (read through `other`,
/// after a `sync`).
async fn left(other: &Framework, root: &str) -> Vec<String> {
    let _ = other.sync(root).await;
    let mut left = Vec::new();
    for node in fixtures::ephemerals(other, root).await.unwrap() {
        if let Ok(Some(stat)) = other.exists(&node).await {
            if stat.ephemeral_owner != other.session_info().unwrap().id().0 {
                left.push(node);
            }
        }
    }
    left
}

/// After the shutdown's `outcome`: an acknowledged close left nothing at once; an
/// unacknowledged one leaves nothing once the session's timeout has passed. Either way
/// nothing comes back a second later (no task of the closed framework re-creates a node).
async fn nothing_left(other: &Framework, root: &str, outcome: &Result<(), Error>) {
    match outcome {
        Ok(()) => assert_eq!(left(other, root).await, Vec::<String>::new(), "acknowledged, yet nodes are left"),
        Err(e) => {
            assert!(e.is_timeout(), "{e}");
            fixtures::eventually(SESSION_TIMEOUT + Duration::from_secs(6), "the session's nodes are gone", || async {
                left(other, root).await.is_empty()
            })
            .await;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(left(other, root).await, Vec::<String>::new(), "a node came back after the shutdown");
}

/// Runs `fw.shutdown(limit)` and checks it returned within the limit.
async fn shut_down(fw: &Framework, limit: Duration) -> Result<(), Error> {
    let started = Instant::now();
    let outcome = fw.shutdown(limit).await;
    let took = started.elapsed();
    assert!(took < limit + LATE, "shutdown({limit:?}) took {took:?}");
    assert!(fw.is_closed());
    outcome
}

/// Partitioned: the client holds a lock (released while cut off: a background delete that
/// cannot reach the server), a leadership and an ephemeral node; the shutdown cannot reach
/// the server, says so, and the session's timeout clears everything once the link is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_while_partitioned_times_out_and_the_session_clears_with_its_timeout() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let other = fixtures::framework(&cs).await;
    let root = format!("/{}", fixtures::unique("shutdown-partitioned"));
    let guard = InterProcessMutex::new(&fw, &format!("{root}/lock")).unwrap().acquire().await.unwrap();
    let latch = LeaderLatch::new(&fw, &format!("{root}/leader"), "cut").unwrap();
    latch.start().await.unwrap();
    latch.await_leadership_timeout(WAIT).await.unwrap();
    fw.create(&format!("{root}/eph"), b"", CreateMode::Ephemeral).await.unwrap();
    assert_eq!(left(&other, &root).await.len(), 3);
    proxy.set_mode(ProxyMode::Blackhole);
    drop(guard);
    let limit = Duration::from_secs(2);
    let outcome = shut_down(&fw, limit).await;
    assert_matches!(outcome, Err(Error::Timeout { timeout, step: zk_recipes::TimeoutStep::Closing, .. }) if timeout == limit,
        "the server cannot have acknowledged"
    );
    // the answer stays
    assert_matches!(fw.shutdown(WAIT).await, Err(Error::Timeout { timeout, step: zk_recipes::TimeoutStep::Closing, .. }) if timeout == limit);
    proxy.set_mode(ProxyMode::Pass);
    nothing_left(&other, &root, &outcome).await;
    let mutex = InterProcessMutex::new(&other, &format!("{root}/lock")).unwrap();
    mutex.try_acquire().await.unwrap().expect("the lock is free").release().await.unwrap();
    drop(latch);
    other.shutdown(WAIT).await.unwrap();
}

/// During an election: the framework's latch joins while the leader (another framework)
/// steps down, and the framework shuts down in the middle of it. Acknowledged, nothing of
/// its session is left, and the remaining contender leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_during_an_election_is_acknowledged_and_the_election_goes_on() {
    let cs = fixtures::shared_server().await;
    for round in 0..5u64 {
        let fw = fixtures::framework(&cs).await;
        let (b, c) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
        let root = format!("/{}", fixtures::unique("shutdown-election"));
        let path = format!("{root}/leader");
        let leader = LeaderLatch::new(&b, &path, "b").unwrap();
        leader.start().await.unwrap();
        leader.await_leadership_timeout(WAIT).await.unwrap();
        let ours = LeaderLatch::new(&fw, &path, "ours").unwrap();
        let third = LeaderLatch::new(&c, &path, "c").unwrap();
        third.start().await.unwrap();
        // the election: our latch joins, the leader steps down, we shut down, at staggered moments
        let joining = async {
            let _ = ours.start().await;
        };
        let stepping_down = async {
            tokio::time::sleep(Duration::from_millis(round * 7)).await;
            leader.close().await.unwrap();
        };
        let shutting_down = async {
            tokio::time::sleep(Duration::from_millis(round * 11)).await;
            shut_down(&fw, Duration::from_secs(5)).await
        };
        let ((), (), outcome) = tokio::join!(joining, stepping_down, shutting_down);
        assert_matches!(outcome, Ok(()), "round {round}: the server is reachable: the close is acknowledged");
        nothing_left(&c, &root, &outcome).await;
        third.await_leadership_timeout(WAIT).await.expect("the remaining contender leads");
        assert!(!ours.has_leadership(), "round {round}: a closed framework's latch does not lead");
        third.close().await.unwrap();
        b.shutdown(WAIT).await.unwrap();
        c.shutdown(WAIT).await.unwrap();
    }
}

/// While the session is re-created: the session expires (a member, a latch and a lock
/// holder each want their node back in the new session) and the shutdown comes while the new
/// session's connect is still on its way (the link delays every chunk). Whatever it answers
/// is true of the server, and no node comes back in a session nobody closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_while_the_session_is_recreated_leaves_nothing() {
    let cs = fixtures::shared_server().await;
    let other = fixtures::framework(&cs).await;
    for (round, delay) in [0u64, 50, 200, 400].into_iter().enumerate() {
        let proxy = TcpProxy::start(&cs).await.unwrap();
        let fw = fixtures::framework(proxy.connect_string()).await;
        let root = format!("/{}", fixtures::unique("shutdown-recreate"));
        let member = GroupMember::new(&fw, &format!("{root}/group"), "m", b"m".to_vec()).unwrap();
        member.start().await.unwrap();
        member.wait_for_initial_create(WAIT).await.unwrap();
        let latch = LeaderLatch::new(&fw, &format!("{root}/leader"), "l").unwrap();
        latch.start().await.unwrap();
        latch.await_leadership_timeout(WAIT).await.unwrap();
        let mutex = InterProcessMutex::new(&fw, &format!("{root}/lock")).unwrap();
        let guard = mutex.acquire().await.unwrap();
        if delay > 0 {
            proxy.set_mode(ProxyMode::Delay(Duration::from_millis(delay)));
        }
        // expired through the server's own port: the framework hears of it through the proxy
        zk_recipes_testing::expire_session_at(&fw, &cs).await.unwrap();
        let outcome = shut_down(&fw, Duration::from_secs(3)).await;
        proxy.set_mode(ProxyMode::Pass);
        drop(guard);
        nothing_left(&other, &root, &outcome).await;
        drop((member, latch));
        eprintln!("round {round} (delay {delay} ms): {outcome:?}");
    }
    other.shutdown(WAIT).await.unwrap();
}
