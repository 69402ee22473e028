//! The testing kit against real ZooKeeper processes: standalone server and 3-node cluster.

mod raw;

use std::path::Path;
use std::time::{Duration, Instant};

use raw::{create, read};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zk_recipes_testing::Error;
use zk_recipes_testing::{
    four_letter_word, four_letter_word_with_timeout, running_server_pids, ServerMode, TestingCluster, TestingServer,
};

const WAIT: Duration = Duration::from_secs(20);

fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

async fn raw_srvr(connect_string: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(connect_string).await?;
    stream.write_all(b"srvr").await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

#[tokio::test]
async fn standalone_serves_srvr_over_raw_tcp() {
    let started = Instant::now();
    let server = TestingServer::start().await.expect("start");
    eprintln!("standalone server started in {:?}", started.elapsed());

    assert_eq!(server.connect_string(), format!("127.0.0.1:{}", server.port()));
    let answer = raw_srvr(server.connect_string()).await.expect("srvr");
    assert!(answer.contains("Mode: standalone"), "{answer}");
    let answer = four_letter_word(server.connect_string(), "ruok").await.expect("ruok");
    assert_eq!(answer, "imok");

    let pid = server.pid().expect("pid");
    assert!(server.is_running());
    assert!(running_server_pids().contains(&pid));
    assert!(server.data_dir().is_dir());
    assert!(server.log_path().is_file());
}

#[tokio::test]
async fn stop_refuses_connections_and_restart_keeps_port_and_data() {
    let server = TestingServer::start().await.expect("start");
    let port = server.port();
    create(server.connect_string(), "/survivor", b"still here").await;

    server.stop().await;
    assert!(!server.is_running());
    assert_eq!(server.pid(), None);
    let refused = TcpStream::connect(server.connect_string()).await;
    assert!(refused.is_err(), "port {port} still accepts connections");

    let started = Instant::now();
    server.restart().await.expect("restart");
    eprintln!("standalone server restarted in {:?}", started.elapsed());
    assert_eq!(server.port(), port);
    assert!(server.is_running());
    assert_eq!(read(server.connect_string(), "/survivor").await, b"still here");
}

#[test]
fn kill_and_drop_leave_no_process_even_outside_a_runtime() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // Started from a thread that ends right away: the JVM must outlive that thread (the parent
    // death signal is tied to the kit's own spawner thread, not to the caller's).
    let server =
        std::thread::spawn(move || runtime.block_on(TestingServer::start())).join().expect("thread").expect("start");

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let first = server.pid().expect("pid");
    runtime.block_on(four_letter_word(server.connect_string(), "srvr")).expect("server survived its starting thread");

    server.kill();
    assert!(!server.is_running());
    assert!(!process_exists(first), "killed JVM {first} still exists");
    assert!(!running_server_pids().contains(&first));

    runtime.block_on(server.restart()).expect("restart");
    let second = server.pid().expect("pid");
    drop(runtime);

    drop(server); // no runtime here
    assert!(!process_exists(second), "dropped JVM {second} still exists");
    assert!(!running_server_pids().contains(&second));
}

#[tokio::test]
async fn pause_freezes_and_resume_thaws_a_server() {
    let server = TestingServer::start().await.expect("start");
    server.pause().expect("pause");
    assert!(server.is_paused() && server.is_running());
    let short = Duration::from_millis(300);
    let frozen = four_letter_word_with_timeout(server.connect_string(), "srvr", short).await;
    assert!(matches!(frozen, Err(Error::Timeout(d)) if d == short), "{frozen:?}");

    server.resume().expect("resume");
    assert!(!server.is_paused());
    let answer = four_letter_word(server.connect_string(), "srvr").await.expect("srvr");
    assert!(answer.contains("Mode: standalone"), "{answer}");

    server.kill();
    assert!(matches!(server.pause(), Err(Error::InvalidArgument(_))));
}

#[tokio::test]
async fn missing_installation_and_bad_settings_are_typed_errors() {
    let empty = tempfile::tempdir().expect("temp dir");
    let err = TestingServer::builder().zookeeper_home(empty.path()).start().await.unwrap_err();
    match err {
        Error::ZooKeeperNotInstalled { searched, install_hint } => {
            assert!(searched.contains(&empty.path().display().to_string()), "{searched}");
            assert!(install_hint.contains("apt-get install"), "{install_hint}");
        }
        other => panic!("expected ZooKeeperNotInstalled, got {other:?}"),
    }
    let err = TestingCluster::builder().zookeeper_home(empty.path()).start().await.unwrap_err();
    assert!(matches!(err, Error::ZooKeeperNotInstalled { .. }), "{err:?}");

    let err = TestingCluster::start(0).await.unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    let err = TestingServer::builder().tick_time(Duration::ZERO).start().await.unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
}

#[tokio::test]
async fn a_taken_port_fails_fast_with_the_log_tail() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let err = TestingServer::builder().port(port).start().await.unwrap_err();
    match err {
        Error::TestServerFailed { reason, log_tail } => {
            assert!(reason.contains("exited"), "{reason}");
            assert!(log_tail.contains("Address already in use"), "{log_tail}");
        }
        other => panic!("expected TestServerFailed, got {other:?}"),
    }
}

#[tokio::test]
async fn cluster_fails_over_and_a_restarted_leader_rejoins_as_follower() {
    let started = Instant::now();
    let cluster = TestingCluster::start(3).await.expect("start cluster");
    eprintln!("3-server cluster started in {:?}", started.elapsed());
    assert_eq!(cluster.len(), 3);
    assert_eq!(cluster.connect_string().split(',').count(), 3);
    assert!(matches!(cluster.server_connect_string(3), Err(Error::InvalidArgument(_))));

    let modes = cluster.modes().await;
    let leaders = modes.iter().filter(|m| **m == Some(ServerMode::Leader)).count();
    let followers = modes.iter().filter(|m| **m == Some(ServerMode::Follower)).count();
    assert_eq!((leaders, followers), (1, 2), "{modes:?}");
    let leader = cluster.leader().await.expect("leader").expect("a leader");
    create(cluster.connect_string(), "/replicated", b"quorum").await;

    // A paused follower: the ensemble keeps its leader; resumed, the follower answers again.
    let follower = (leader + 1) % 3;
    cluster.pause(follower).expect("pause");
    assert_eq!(cluster.mode(follower).await.expect("mode"), None);
    assert_eq!(cluster.leader().await.expect("leader"), Some(leader));
    cluster.resume(follower).expect("resume");
    let answer = four_letter_word(cluster.server_connect_string(follower).expect("index"), "srvr").await.expect("srvr");
    assert!(answer.contains("Mode: follower"), "{answer}");

    // Kill the leader: one of the others takes over, with the data.
    let old_pid = cluster.pid(leader).expect("pid");
    cluster.kill(leader).expect("kill");
    assert!(!process_exists(old_pid));
    let failover = Instant::now();
    let new_leader = cluster.wait_for_leader(WAIT).await.expect("new leader");
    eprintln!("new leader elected in {:?}", failover.elapsed());
    assert_ne!(new_leader, leader);
    let survivor = cluster.server_connect_string(new_leader).expect("index");
    assert_eq!(read(survivor, "/replicated").await, b"quorum");

    // The old leader comes back as a follower.
    let rejoin = Instant::now();
    cluster.restart(leader).await.expect("restart");
    eprintln!("old leader rejoined in {:?}", rejoin.elapsed());
    assert_eq!(cluster.mode(leader).await.expect("mode"), Some(ServerMode::Follower));
    assert_eq!(cluster.leader().await.expect("leader"), Some(new_leader));

    let pids: Vec<u32> = (0..3).filter_map(|i| cluster.pid(i)).collect();
    assert_eq!(pids.len(), 3);
    drop(cluster);
    for pid in pids {
        assert!(!process_exists(pid), "JVM {pid} outlived its cluster");
        assert!(!running_server_pids().contains(&pid));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_proxies_partition_a_local_leader_and_heal_it() {
    // without peer proxies, a local cluster cannot partition
    let plain = TestingCluster::start(1).await.expect("cluster");
    assert!(matches!(plain.partition(0).await, Err(Error::Unsupported(_))));
    drop(plain);

    let cluster = TestingCluster::builder().servers(3).peer_proxies(true).start().await.expect("cluster");
    assert!(matches!(cluster.partition(7).await, Err(Error::InvalidArgument(_))));
    // the leader's peer links cut: the others elect a leader, the healed one rejoins
    raw::partition_the_leader_and_heal(&cluster, WAIT).await;
}
