//! Fault injection on a real 3-node ensemble: server crashes, a partitioned holder, session
//! expiry, rolling restarts, and random faults — with the invariants of every recipe checked
//! (see `workload.rs`) and liveness too (see `liveness.rs`): after each fault every contender
//! completes operations again within a stated bound, the holder a scenario targets observes its
//! loss, and a new holder comes within a bound. Scenarios run one at a time; each writes its
//! results, the measured figures beside their bounds, for `docs/RELIABILITY.md`.

mod history;
mod liveness;
mod queue_feed;
mod recipes;
mod servers;
mod workload;

use std::sync::Arc;
use std::time::{Duration, Instant};

use liveness::{NEW_HOLDER_AFTER_ELECTION_BOUND, NEW_HOLDER_BOUND, PROGRESS_BOUND};
use workload::{Workload, SESSION_TIMEOUT};
use zk_recipes_testing::{expire_session, fixtures, Backend, ProxyMode, TestingCluster};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn sleep(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Sleeps until `ms` after `since`.
async fn sleep_until(since: Instant, ms: u64) {
    tokio::time::sleep_until((since + Duration::from_millis(ms)).into()).await;
}

/// The name `scenario`'s results are saved under: on the Docker backend with the image's name
/// added (`scripts/test-docker.sh` runs some scenarios there), so that they do not overwrite the
/// local backend's.
fn scenario_name(cluster: &TestingCluster, scenario: &str) -> String {
    match cluster.backend() {
        Backend::Docker => format!("{scenario}-docker-{}", Backend::image_from_env()).replace(['/', ':'], "-"),
        _ => scenario.to_string(),
    }
}

/// How `cluster.partition(i)` cuts a server off its peers on `cluster`'s backend, for reports.
fn peer_cut(cluster: &TestingCluster) -> &'static str {
    match cluster.backend() {
        Backend::Docker => "its quorum and election traffic dropped by iptables rules in its container",
        _ => "its quorum and election links blackholed by the testing kit's proxies",
    }
}

/// Moves `client`'s session off server `avoid` (the ensemble leader): blackholes and cuts its
/// link to that server until it has reconnected to another one.
async fn move_off(cluster: &TestingCluster, w: &Workload, client: usize, avoid: usize) {
    let c = &w.clients[client];
    for _ in 0..5 {
        let now = fixtures::server_of_session(cluster, c.fw.status().session_id).await;
        if now.is_some_and(|s| s != avoid) {
            return;
        }
        c.proxies[avoid].set_mode(ProxyMode::Blackhole);
        c.proxies[avoid].cut();
        fixtures::eventually(Duration::from_secs(20), "the long holder on another server", || async {
            let s = fixtures::server_of_session(cluster, c.fw.status().session_id).await;
            s.is_some_and(|s| s != avoid)
        })
        .await;
        c.proxies[avoid].set_mode(ProxyMode::Pass);
    }
    panic!("could not move client {client} off server {avoid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_the_leader() {
    let _one = SERIAL.lock().await;
    let cluster = TestingCluster::start(3).await.unwrap();
    let w = Workload::start(&cluster, "/kill-leader", 1).await;
    sleep(2000).await;
    let leader = cluster.leader().await.unwrap().expect("a leader");
    let fault = Instant::now();
    cluster.kill(leader).unwrap();
    w.expect_new_holder(fault, None, NEW_HOLDER_AFTER_ELECTION_BOUND, "the leader's `kill -9`").await;
    sleep_until(fault, 4000).await;
    cluster.restart(leader).await.unwrap();
    w.expect_progress(Instant::now(), PROGRESS_BOUND, "the old leader's restart").await;
    w.finish("kill-the-leader", "`kill -9` the ensemble leader under load; restart it 4 s later.", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_the_follower_the_holder_is_connected_to() {
    let _one = SERIAL.lock().await;
    let cluster = TestingCluster::start(3).await.unwrap();
    let w = Workload::start(&cluster, "/kill-follower", 1).await;
    sleep(1500).await;
    let leader = cluster.leader().await.unwrap().expect("a leader");
    let long = w.long_holder();
    move_off(&cluster, &w, long, leader).await;
    let holder = w.fresh_mutex_holder(|i| i == long).await;
    let server = fixtures::server_of_session(&cluster, w.clients[holder].fw.status().session_id).await;
    let server = server.filter(|s| *s != leader).expect("the long holder on a follower");
    let losses = w.clients[holder].progress.losses();
    let detect = w.time_loss_detection(holder);
    let fault = Instant::now();
    cluster.kill(server).unwrap();
    let what = "the `kill -9` of the holder's follower";
    w.expect_holder_loss(holder, losses, detect, what).await;
    w.expect_new_holder(fault, Some(holder), NEW_HOLDER_BOUND, what).await;
    sleep_until(fault, 4000).await;
    cluster.restart(server).await.unwrap();
    w.expect_progress(Instant::now(), PROGRESS_BOUND, "the follower's restart").await;
    w.finish(
        "kill-the-holders-follower",
        "`kill -9` the follower that the current (long) mutex holder is connected to; restart it 4 s later.",
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_restart_of_all_servers() {
    let _one = SERIAL.lock().await;
    let cluster = TestingCluster::start(3).await.unwrap();
    let w = Workload::start(&cluster, "/rolling", 1).await;
    sleep(1500).await;
    for i in 0..3 {
        cluster.stop(i).await.unwrap();
        sleep(1000).await;
        cluster.restart(i).await.unwrap();
        sleep(1500).await;
    }
    w.expect_progress(Instant::now(), PROGRESS_BOUND, "the last restart").await;
    w.finish("rolling-restart", "Stop and restart each of the three servers in turn (1 s down, 1.5 s apart).", false)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blackhole_the_holders_link_past_the_session_timeout() {
    let _one = SERIAL.lock().await;
    let cluster = TestingCluster::start(3).await.unwrap();
    let w = Workload::start(&cluster, "/blackhole", 1).await;
    sleep(1500).await;
    let long = w.long_holder();
    for round in 1..=2 {
        let holder = w.fresh_mutex_holder(|i| i == long).await;
        let losses = w.clients[holder].progress.losses();
        let detect = w.time_loss_detection(holder);
        let fault = Instant::now();
        w.clients[holder].blackhole(true);
        let what = format!("blackholing the holder (round {round})");
        w.expect_new_holder(fault, Some(holder), NEW_HOLDER_BOUND, &what).await;
        sleep_until(fault, (SESSION_TIMEOUT + Duration::from_secs(2)).as_millis() as u64).await;
        w.clients[holder].blackhole(false);
        w.expect_holder_loss(holder, losses, detect, &what).await;
        w.expect_progress(Instant::now(), PROGRESS_BOUND, &format!("the link's return (round {round})")).await;
    }
    w.finish(
        "blackhole-holder",
        "Drop every byte of the current mutex holder's links (sockets stay open) for the session timeout + 2 s, twice.",
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expire_the_holders_session() {
    let _one = SERIAL.lock().await;
    let cluster = TestingCluster::start(3).await.unwrap();
    let w = Workload::start(&cluster, "/expire", 1).await;
    sleep(1500).await;
    let long = w.long_holder();
    for round in 1..=3 {
        let holder = w.fresh_mutex_holder(|i| i == long).await;
        let losses = w.clients[holder].progress.losses();
        let detect = w.time_loss_detection(holder);
        let fault = Instant::now();
        expire_session(&w.clients[holder].fw).await.unwrap();
        let what = format!("the holder's session expiry (round {round})");
        w.expect_holder_loss(holder, losses, detect, &what).await;
        w.expect_new_holder(fault, Some(holder), NEW_HOLDER_BOUND, &what).await;
    }
    w.expect_progress(Instant::now(), PROGRESS_BOUND, "the last expiry").await;
    w.finish("expire-holder", "Make the server expire the current mutex holder's session, three times.", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_contenders_under_random_faults() {
    let _one = SERIAL.lock().await;
    let seconds: u64 = std::env::var("SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    let seed: u64 = std::env::var("FAULT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(7)
    });
    eprintln!("random faults: FAULT_SEED={seed} SOAK_SECONDS={seconds} (set both to replay)");
    let mut rng = fastrand::Rng::with_seed(seed);
    let cluster = Arc::new(TestingCluster::start(3).await.unwrap());
    let w = Workload::start(&cluster, "/random", 1).await;
    let histories = history::Histories::start(&cluster, "/random-history").await;
    let mut log = Vec::new();
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        sleep(2000).await;
        match rng.u8(0..5) {
            0 => {
                let i = rng.usize(0..3);
                log.push(format!("kill server {i}"));
                cluster.kill(i).unwrap();
                sleep(1000).await;
                cluster.restart(i).await.unwrap();
            }
            1 => {
                let i = rng.usize(0..3);
                log.push(format!("pause server {i}"));
                cluster.pause(i).unwrap();
                sleep(1000).await;
                cluster.resume(i).unwrap();
            }
            2 => {
                let c = rng.usize(0..w.clients.len());
                log.push(format!("blackhole client {c}"));
                w.clients[c].blackhole(true);
                sleep(1500).await;
                w.clients[c].blackhole(false);
            }
            3 => {
                let c = rng.usize(0..w.clients.len());
                log.push(format!("expire client {c}"));
                let _ = expire_session(&w.clients[c].fw).await;
            }
            _ => {
                let c = rng.usize(0..w.clients.len());
                log.push(format!("cut client {c}"));
                for p in &w.clients[c].proxies {
                    p.cut();
                }
            }
        }
    }
    w.expect_progress(Instant::now(), PROGRESS_BOUND, "the last fault").await;
    w.note(histories.finish(seed).await);
    let notes = format!(
        "16 contenders for {seconds} s, one random fault every 2 s (seed {seed}; replay with `FAULT_SEED={seed} SOAK_SECONDS={seconds}`): {}.",
        log.join(", ")
    );
    // the soak also runs on the Docker backend (scripts/test-docker.sh: ZooKeeper 3.9)
    w.finish(&scenario_name(&cluster, "random-faults"), &notes, true).await;
}
