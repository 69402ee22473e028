//! Fault injection on a real 3-node ensemble: server crashes, a partitioned holder, session
//! expiry, rolling restarts, and random faults — with the invariants of every recipe checked
//! (see `workload.rs`). Scenarios run one at a time; each writes its results for
//! `docs/RELIABILITY.md`.

mod workload;

use std::sync::Arc;
use std::time::{Duration, Instant};

use workload::{Workload, SESSION_TIMEOUT};
use zk_recipes::ConnectionState;
use zk_recipes_testing::{expire_session, fixtures, TestingCluster};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn sleep(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Waits until some mutex contender holds; returns its client index.
async fn a_mutex_holder(w: &Workload, accept: impl Fn(usize) -> bool) -> usize {
    let holder = std::cell::Cell::new(None);
    fixtures::eventually(Duration::from_secs(30), "a mutex holder to target", || async {
        holder.set(w.mutex_holder.lock().unwrap().filter(|&i| accept(i)));
        holder.get().is_some()
    })
    .await;
    holder.get().expect("a holder")
}

/// Records how long `client`'s framework takes to see a state that invalidates holds.
fn time_loss_detection(w: &Workload, client: usize) -> tokio::task::JoinHandle<()> {
    let fw = w.clients[client].fw.clone();
    let latencies = w.loss_latencies.clone();
    let started = Instant::now();
    let before = fw.status();
    tokio::spawn(async move {
        let mut rx = fw.status_watch();
        let seen = rx.wait_for(|s| {
            s.losses > before.losses || s.suspensions > before.suspensions || s.state == ConnectionState::Suspended
        });
        if tokio::time::timeout(Duration::from_secs(30), seen).await.is_ok() {
            latencies.lock().unwrap().push(started.elapsed());
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_the_leader() {
    let _one = SERIAL.lock().await;
    let cluster = TestingCluster::start(3).await.unwrap();
    let w = Workload::start(&cluster, "/kill-leader", 1).await;
    sleep(2000).await;
    let leader = cluster.leader().await.unwrap().expect("a leader");
    cluster.kill(leader).unwrap();
    sleep(4000).await;
    cluster.restart(leader).await.unwrap();
    sleep(3000).await;
    w.finish("kill-the-leader", "`kill -9` the ensemble leader under load; restart it 4 s later.", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_the_follower_the_holder_is_connected_to() {
    let _one = SERIAL.lock().await;
    let cluster = TestingCluster::start(3).await.unwrap();
    let w = Workload::start(&cluster, "/kill-follower", 1).await;
    sleep(1500).await;
    let leader = cluster.leader().await.unwrap().expect("a leader");
    let mut target = None;
    for _ in 0..200 {
        let holder = a_mutex_holder(&w, |_| true).await;
        let session = w.clients[holder].fw.status().session_id;
        if let Some(server) = fixtures::server_of_session(&cluster, session).await {
            if server != leader {
                target = Some((holder, server));
                break;
            }
        }
        sleep(20).await;
    }
    let (holder, server) = target.expect("a mutex holder on a follower");
    let detect = time_loss_detection(&w, holder);
    cluster.kill(server).unwrap();
    sleep(4000).await;
    cluster.restart(server).await.unwrap();
    let _ = detect.await;
    sleep(2000).await;
    w.finish(
        "kill-the-holders-follower",
        "`kill -9` the follower that the current mutex holder is connected to; restart it 4 s later.",
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
    sleep(2000).await;
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
    for _ in 0..2 {
        let holder = a_mutex_holder(&w, |i| i == long).await;
        let detect = time_loss_detection(&w, holder);
        w.clients[holder].blackhole(true);
        sleep((SESSION_TIMEOUT + Duration::from_secs(2)).as_millis() as u64).await;
        w.clients[holder].blackhole(false);
        let _ = detect.await;
        sleep(2000).await;
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
    for _ in 0..3 {
        let holder = a_mutex_holder(&w, |i| i == long).await;
        let detect = time_loss_detection(&w, holder);
        expire_session(&w.clients[holder].fw).await.unwrap();
        let _ = detect.await;
        sleep(1500).await;
    }
    sleep(1500).await;
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
    sleep(2000).await;
    let notes = format!(
        "16 contenders for {seconds} s, one random fault every 2 s (seed {seed}; replay with `FAULT_SEED={seed} SOAK_SECONDS={seconds}`): {}.",
        log.join(", ")
    );
    w.finish("random-faults", &notes, true).await;
}
