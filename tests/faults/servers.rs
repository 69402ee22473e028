//! Faults between and inside the servers: partitions between servers (clients staying connected
//! to the server cut off: on the local backend the testing kit's proxies on the quorum and
//! election links, on the Docker backend iptables rules in the server's container; the
//! partition scenarios run on both, `scripts/test-docker.sh` runs the leader's on ZooKeeper
//! 3.9) and a leader that stalls for less than the session timeout (SIGSTOP, as a long fsync
//! would) under both error policies.

use std::time::{Duration, Instant};

use zk_recipes::{ConnectionState, ErrorPolicy, Framework, InterProcessMutex, LossReason};
use zk_recipes_testing::{fixtures, TestingCluster};

use super::liveness::PROGRESS_BOUND;
use super::workload::{save_report, Workload, SESSION_TIMEOUT};
use super::{peer_cut, scenario_name, sleep, sleep_until, SERIAL};

/// The bound on the majority's election after the leader was cut off: the followers notice
/// (`syncLimit`, 2 s) and elect, usually in a few seconds; ZooKeeper's election backs off when
/// a round's notifications go unanswered, and on a busy machine one such run took 20 s. The
/// election is the server's, not ours: the recipe's bound starts once there is a leader.
const PARTITION_ELECTION_BOUND: Duration = Duration::from_secs(45);

/// The bound within which a majority client holds the mutex once the majority has a leader:
/// the minority holder's session expires on the new leader (the session timeout, 4 s), then the
/// waiter is handed the lock (seen 4.1 s after the election).
const PARTITION_NEW_HOLDER_BOUND: Duration = Duration::from_secs(12);

/// A framework connected to the servers `servers` of `cluster` only.
async fn framework_on(cluster: &TestingCluster, servers: &[usize], policy: ErrorPolicy) -> Framework {
    let cs: Vec<&str> = servers.iter().map(|i| cluster.server_connect_string(*i).unwrap()).collect();
    fixtures::framework_with(&cs.join(","), |b| {
        b.session_timeout(SESSION_TIMEOUT).connection_timeout(Duration::from_secs(3)).error_policy(policy)
    })
    .await
}

/// Waits until healed server `i` serves again as a leader or a follower.
async fn back_in_quorum(cluster: &TestingCluster, i: usize) {
    fixtures::eventually(PROGRESS_BOUND, format!("server {i} back in the quorum"), || async {
        cluster.mode(i).await.unwrap().is_some_and(|m| m.is_quorum_member())
    })
    .await;
}

/// Waits until `fw`'s status satisfies `what`; returns when, measured from `since`.
async fn status_within(
    fw: &Framework,
    since: Instant,
    bound: Duration,
    what: &str,
    test: impl Fn(&zk_recipes::SessionStatus) -> bool,
) -> Duration {
    let mut rx = fw.status_watch();
    fixtures::within(bound, rx.wait_for(|s| test(s))).await.unwrap_or_else(|_| panic!("{what}: status watch closed"));
    let took = since.elapsed();
    eprintln!("{what}: {took:?}");
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_the_leader_from_both_followers() {
    let _one = SERIAL.lock().await;
    // peer proxies for the local backend; ZK_TEST_BACKEND=docker partitions with iptables
    let cluster = TestingCluster::builder().servers(3).peer_proxies(true).start().await.unwrap();
    let w = Workload::start(&cluster, "/partition-leader", 1).await;
    let leader = cluster.wait_for_leader(Duration::from_secs(20)).await.unwrap();
    let followers: Vec<usize> = (0..3).filter(|i| *i != leader).collect();
    // a minority client (on the leader only) holds a mutex a majority client waits for
    let minority = framework_on(&cluster, &[leader], ErrorPolicy::Standard).await;
    let majority = framework_on(&cluster, &followers, ErrorPolicy::Standard).await;
    let path = "/partition-leader/split";
    let held = InterProcessMutex::new(&minority, path).unwrap().acquire().await.unwrap();
    let waiter = {
        let mutex = InterProcessMutex::new(&majority, path).unwrap();
        tokio::spawn(async move {
            let guard = mutex.acquire().await;
            (Instant::now(), guard)
        })
    };
    let before = minority.status();
    sleep(1000).await;

    let fault = Instant::now();
    cluster.partition(leader).await.unwrap();
    let lost_hold = {
        let held = &held;
        async move {
            held.lost().await;
            Instant::now()
        }
    };
    let hold_lost_at = fixtures::within(SESSION_TIMEOUT, lost_hold).await;
    let suspended = status_within(&minority, fault, SESSION_TIMEOUT, "the minority client SUSPENDED", |s| {
        s.suspensions > before.suspensions || s.state == ConnectionState::Suspended
    })
    .await;
    let lost = status_within(&minority, fault, Duration::from_secs(15), "the minority client LOST", |s| {
        s.losses > before.losses
    })
    .await;
    let new_leader = cluster.wait_for_leader(PARTITION_ELECTION_BOUND).await.unwrap();
    let elected = fault.elapsed();
    assert_ne!(new_leader, leader, "the majority elects a leader of its own");
    let (granted_at, guard) = fixtures::within(PARTITION_NEW_HOLDER_BOUND, waiter).await.unwrap();
    let guard = guard.expect("the majority client acquires");
    assert!(
        hold_lost_at < granted_at,
        "the minority holder saw its loss {:?} after the fault, the majority client was granted at {:?}",
        hold_lost_at - fault,
        granted_at - fault
    );
    w.note(format!(
        "Minority client (connected to the cut-off leader only): hold lost {:.2} s after the cut, SUSPENDED at {:.2} s, LOST at {:.2} s. The majority elected server {new_leader} (was {leader}) {:.1} s after the cut; the majority client was granted the mutex {:.2} s after the cut (bound: the election + {:.0} s, the minority session must expire on the new leader first), after the minority holder saw its loss.",
        (hold_lost_at - fault).as_secs_f64(),
        suspended.as_secs_f64(),
        lost.as_secs_f64(),
        elected.as_secs_f64(),
        (granted_at - fault).as_secs_f64(),
        PARTITION_NEW_HOLDER_BOUND.as_secs_f64()
    ));
    guard.release().await.unwrap();
    sleep_until(fault, 8000).await;
    cluster.heal(leader).await.unwrap();
    let healed = Instant::now();
    w.expect_progress(healed, PROGRESS_BOUND, "the partition's heal").await;
    // the minority client works again, in a new session
    minority.wait_connected(PROGRESS_BOUND).await.unwrap();
    let again = InterProcessMutex::new(&minority, path).unwrap().acquire_timeout(PROGRESS_BOUND).await;
    again.expect("the minority client acquires after the heal").release().await.unwrap();
    back_in_quorum(&cluster, leader).await;
    minority.close();
    majority.close();
    let notes = format!(
        "Cut the leader off both followers for 8 s ({}), its clients staying connected to it; a minority client (connected to the leader only) holds a mutex a majority client (connected to the followers only) waits for.",
        peer_cut(&cluster)
    );
    w.finish(&scenario_name(&cluster, "partition-leader"), &notes, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_a_follower_from_the_quorum() {
    let _one = SERIAL.lock().await;
    let cluster = TestingCluster::builder().servers(3).peer_proxies(true).start().await.unwrap();
    let w = Workload::start(&cluster, "/partition-follower", 1).await;
    sleep(1500).await;
    let leader = cluster.wait_for_leader(Duration::from_secs(20)).await.unwrap();
    let follower = (leader + 1) % 3;
    let fault = Instant::now();
    cluster.partition(follower).await.unwrap();
    // the quorum goes on without it: every contender progresses while it is cut off
    w.expect_progress(fault, PROGRESS_BOUND, "cutting a follower off the quorum").await;
    assert_eq!(cluster.leader().await.unwrap(), Some(leader), "a follower's partition moves no leadership");
    sleep_until(fault, 6000).await;
    cluster.heal(follower).await.unwrap();
    let healed = Instant::now();
    back_in_quorum(&cluster, follower).await;
    w.note(format!("The cut-off follower served again {:.1} s after the heal.", healed.elapsed().as_secs_f64()));
    w.expect_progress(healed, PROGRESS_BOUND, "the follower's heal").await;
    let notes = format!(
        "Cut a follower off the leader and the other follower for 6 s ({}), its clients staying connected to it.",
        peer_cut(&cluster)
    );
    w.finish(&scenario_name(&cluster, "partition-follower"), &notes, false).await;
}

/// A leader stalled (SIGSTOP) for less than the session timeout, with `syncLimit` above the
/// stall so that the followers wait for it, as they would for a leader stuck in a long fsync.
/// A holder under each error policy, connected to the leader only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_the_leader_for_less_than_the_session_timeout() {
    let _one = SERIAL.lock().await;
    const STALL: Duration = Duration::from_millis(2500);
    let cluster = TestingCluster::builder().servers(3).sync_limit(25).start().await.unwrap();
    let leader = cluster.wait_for_leader(Duration::from_secs(20)).await.unwrap();
    let standard = framework_on(&cluster, &[leader], ErrorPolicy::Standard).await;
    let session_only = framework_on(&cluster, &[leader], ErrorPolicy::SessionOnly).await;
    let a = InterProcessMutex::new(&standard, "/stall/standard").unwrap().acquire().await.unwrap();
    let b = InterProcessMutex::new(&session_only, "/stall/session-only").unwrap().acquire().await.unwrap();
    let (before_a, before_b) = (standard.status(), session_only.status());
    // both sessions touched just now: the stall cannot outlast their timeout
    standard.exists("/").await.unwrap();
    session_only.exists("/").await.unwrap();
    let fault = Instant::now();
    cluster.pause(leader).unwrap();
    let suspended = status_within(&standard, fault, STALL, "the standard client SUSPENDED", |s| {
        s.suspensions > before_a.suspensions
    })
    .await;
    sleep_until(fault, STALL.as_millis() as u64).await;
    cluster.resume(leader).unwrap();
    let resumed = Instant::now();
    let back = status_within(&standard, resumed, SESSION_TIMEOUT, "the standard client RECONNECTED", |s| {
        s.state.is_connected()
    })
    .await;
    session_only.wait_connected(SESSION_TIMEOUT).await.unwrap();
    let (after_a, after_b) = (standard.status(), session_only.status());
    // standard: SUSPENDED reported, the same session recovered, the hold lost to the suspension
    assert_eq!((after_a.session_id, after_a.losses), (before_a.session_id, before_a.losses), "standard: session kept");
    assert_eq!(a.loss(), Some(LossReason::Suspended), "standard: a suspension ends the hold");
    // session-only: no loss reported, the hold kept through the stall
    assert_eq!((after_b.session_id, after_b.losses), (before_b.session_id, before_b.losses), "session-only: kept");
    assert_eq!(b.loss(), None, "session-only: a stall shorter than the session timeout loses nothing");
    b.release().await.unwrap();
    let _ = a.release().await;
    assert_eq!(cluster.leader().await.unwrap(), Some(leader), "no election during the stall");
    let report = format!(
        "### leader-stall\n\nFreeze the leader with SIGSTOP for {:.1} s (session timeout {:?}; `syncLimit` 5 s, so that the followers wait for it as for a leader in a long fsync); one mutex holder under each error policy, connected to the leader only.\n\nStandard policy: SUSPENDED {:.2} s into the stall, RECONNECTED to the same session {:.2} s after SIGCONT; the hold was lost to the suspension (as the policy says). Session-only policy: no loss reported (same session, {} suspension(s), the hold kept and released normally). No election.\n",
        STALL.as_secs_f64(),
        SESSION_TIMEOUT,
        suspended.as_secs_f64(),
        back.as_secs_f64(),
        after_b.suspensions - before_b.suspensions
    );
    save_report("leader-stall", &report);
    standard.close();
    session_only.close();
}
