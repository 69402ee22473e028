//! The same on a 3-node ensemble: the follower the client is connected to freezes (SIGSTOP)
//! while the ensemble goes on; every timed call returns by its deadline + 1 s, and once the
//! follower answers again the framework works and nothing of the abandoned waits is left.

use zk_recipes_testing::{fixtures, TestingCluster};

use super::calls::{run_all, Setup};
use super::{framework, recovered, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_timed_wait_returns_by_its_deadline_when_the_clients_follower_freezes() {
    let cluster = TestingCluster::start(3).await.expect("ensemble");
    let leader = cluster.wait_for_leader(WAIT).await.expect("a leader");
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    let (ours, theirs) = (followers[0], followers[1]);
    let fw = framework(cluster.server_connect_string(ours).unwrap()).await;
    let holder = framework(cluster.server_connect_string(theirs).unwrap()).await;
    let base = format!("/{}", fixtures::unique("follower"));
    let setup = Setup::new(&holder, &fw, &base).await;

    cluster.pause(ours).expect("SIGSTOP");
    let late = run_all(&fw, &base, &setup).await;
    cluster.resume(ours).expect("SIGCONT");
    assert!(late.is_empty(), "calls not back by their bound + 1 s, or with the wrong error: {late:#?}");

    recovered(&fw, &holder, &base, setup).await;
    let _ = fw.shutdown(WAIT).await;
    let _ = holder.shutdown(WAIT).await;
}
