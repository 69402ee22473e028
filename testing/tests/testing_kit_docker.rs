//! The testing kit's Docker backend (feature `docker`): servers and ensembles in containers of
//! `zk-recipes/zookeeper:3.8` (`bash docker/build-image.sh`; `ZK_TEST_IMAGE` names another). Every test checks that the
//! containers (and networks) it started are gone once their handles are dropped.
//!
//! The tests run one at a time (a lock), so that "no container of this process is left" can be
//! checked after each one, and two cores are not asked to run several ensembles at once.

mod raw;

use std::process::Command;
use std::time::{Duration, Instant};

use raw::{create, read};
use tokio::sync::Mutex;
use zk_recipes_testing::Error;
use zk_recipes_testing::{
    four_letter_word, four_letter_word_with_timeout, Backend, ServerMode, TestingCluster, TestingServer,
};

const WAIT: Duration = Duration::from_secs(30);

static SERIAL: Mutex<()> = Mutex::const_new(());

/// `docker <args>`, its standard output split into lines.
fn docker(args: &[&str]) -> Vec<String> {
    let out = Command::new("docker").args(args).output().expect("run docker");
    assert!(out.status.success(), "docker {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).filter(|l| !l.is_empty()).collect()
}

/// Containers and networks labelled as the kit's and as this process's.
fn leftovers() -> (Vec<String>, Vec<String>) {
    let pid = format!("label=zk-recipes.pid={}", std::process::id());
    let test = "label=zk-recipes.test=1";
    (
        docker(&["ps", "-aq", "--filter", test, "--filter", &pid]),
        docker(&["network", "ls", "-q", "--filter", test, "--filter", &pid]),
    )
}

fn assert_nothing_left() {
    assert_eq!(leftovers(), (vec![], vec![]), "containers or networks left behind");
}

fn label_of(container: &str, key: &str) -> String {
    docker(&["inspect", "-f", &format!("{{{{index .Config.Labels \"{key}\"}}}}"), container]).join("")
}

async fn docker_server() -> TestingServer {
    let started = Instant::now();
    let server = TestingServer::builder().backend(Backend::Docker).start().await.expect("start a container");
    eprintln!("container server serving after {:?}", started.elapsed());
    server
}

async fn docker_cluster() -> TestingCluster {
    let started = Instant::now();
    let cluster = TestingCluster::builder().backend(Backend::Docker).servers(3).start().await.expect("start");
    eprintln!("3 containers in a quorum after {:?}", started.elapsed());
    cluster
}

#[tokio::test]
async fn server_serves_and_restart_keeps_data_and_connect_string() {
    let _serial = SERIAL.lock().await;
    let server = docker_server().await;
    assert_eq!(server.backend(), Backend::Docker);
    let id = server.container_id().expect("a container").to_string();
    assert_eq!(label_of(&id, "zk-recipes.test"), "1");
    assert_eq!(server.connect_string(), format!("127.0.0.1:{}", server.port()));
    assert!(server.is_running());
    assert_eq!(server.pid(), None);
    let answer = four_letter_word(server.connect_string(), "srvr").await.expect("srvr");
    assert!(answer.contains("Mode: standalone"), "{answer}");
    // The kit's timing reached the server: a 200 ms tick bounds sessions to 4 s.
    let conf = four_letter_word(server.connect_string(), "conf").await.expect("conf");
    assert!(conf.contains("tickTime=200"), "{conf}");
    create(server.connect_string(), "/kept", b"across restarts").await;

    let connect_string = server.connect_string().to_string();
    server.stop().await;
    assert!(!server.is_running());
    assert!(four_letter_word(&connect_string, "ruok").await.is_err(), "a stopped server answers");
    server.restart().await.expect("restart after stop");
    assert_eq!(server.connect_string(), connect_string);
    assert_eq!(server.container_id(), Some(id.as_str()));
    assert_eq!(read(&connect_string, "/kept").await, b"across restarts");

    server.kill();
    assert!(!server.is_running());
    let started = Instant::now();
    server.restart().await.expect("restart after kill");
    eprintln!("killed container serving again after {:?}", started.elapsed());
    assert_eq!(read(server.connect_string(), "/kept").await, b"across restarts");
    assert!(server.log_tail(500).contains("ZooKeeper"), "the log tail reads the container's output");

    drop(server);
    assert!(docker(&["ps", "-aq", "--filter", &format!("id={id}")]).is_empty());
    assert_nothing_left();
}

#[tokio::test]
async fn pause_makes_srvr_time_out() {
    let _serial = SERIAL.lock().await;
    let server = docker_server().await;
    server.pause().expect("pause");
    assert!(server.is_paused());
    assert!(server.is_running(), "a paused container still runs");
    let answer = four_letter_word_with_timeout(server.connect_string(), "srvr", Duration::from_secs(1)).await;
    assert!(matches!(answer, Err(Error::Timeout(d)) if d == Duration::from_secs(1)), "{answer:?}");
    server.resume().expect("resume");
    assert!(!server.is_paused());
    let answer = four_letter_word(server.connect_string(), "srvr").await.expect("srvr after resume");
    assert!(answer.contains("Mode: standalone"), "{answer}");
    // Dropped while paused: still removed.
    server.pause().expect("pause again");
    drop(server);
    assert_nothing_left();
}

#[tokio::test]
async fn cluster_elects_one_leader_and_survives_a_killed_leader() {
    let _serial = SERIAL.lock().await;
    let cluster = docker_cluster().await;
    assert_eq!(cluster.backend(), Backend::Docker);
    let modes = cluster.modes().await;
    assert_eq!(modes.iter().filter(|m| **m == Some(ServerMode::Leader)).count(), 1, "{modes:?}");
    assert_eq!(modes.iter().filter(|m| **m == Some(ServerMode::Follower)).count(), 2, "{modes:?}");
    let group = label_of(cluster.container_id(0).expect("container"), "zk-recipes.group");
    for i in 1..3 {
        assert_eq!(label_of(cluster.container_id(i).expect("container"), "zk-recipes.group"), group);
    }

    create(cluster.connect_string(), "/before", b"1").await;
    let leader = cluster.wait_for_leader(WAIT).await.expect("a leader");
    let killed = Instant::now();
    cluster.kill(leader).expect("kill");
    assert!(!cluster.is_running(leader));
    let new_leader = cluster.wait_for_leader(WAIT).await.expect("a new leader");
    eprintln!("new leader {new_leader} after {:?}", killed.elapsed());
    assert_ne!(new_leader, leader);
    create(cluster.connect_string(), "/after", b"2").await;

    cluster.restart(leader).await.expect("the old leader rejoins");
    assert_eq!(cluster.mode(leader).await.expect("mode"), Some(ServerMode::Follower));
    let alone = cluster.server_connect_string(leader).expect("connect string");
    assert_eq!(read(alone, "/after").await, b"2", "the rejoined server caught up");

    drop(cluster);
    assert_nothing_left();
}

#[tokio::test]
async fn a_partitioned_leader_is_replaced_and_rejoins_when_healed() {
    let _serial = SERIAL.lock().await;
    let cluster = docker_cluster().await;
    // the peer links only: its client port keeps answering (checked inside)
    raw::partition_the_leader_and_heal(&cluster, WAIT).await;

    // A partition holds across a restart (a start makes a new network namespace: the kit cuts
    // it off again) until it is healed.
    let leader = cluster.wait_for_leader(WAIT).await.expect("a leader");
    let follower = (leader + 1) % 3;
    cluster.partition(follower).await.expect("partition a follower");
    cluster.stop(follower).await.expect("stop");
    let restart = tokio::time::timeout(Duration::from_secs(8), cluster.restart(follower)).await;
    assert!(restart.is_err(), "a partitioned follower rejoined after its restart: {restart:?}");
    assert!(cluster.is_running(follower), "restarted");
    assert_eq!(cluster.mode(follower).await.expect("mode"), None, "cut off after its restart");
    let answer = four_letter_word(cluster.server_connect_string(follower).unwrap(), "srvr").await.expect("srvr");
    assert!(answer.contains("not currently serving"), "its client port answers: {answer}");
    assert_eq!(cluster.leader().await.expect("leader"), Some(leader), "the others kept their quorum");
    let healed = Instant::now();
    cluster.heal(follower).await.expect("heal");
    let deadline = Instant::now() + WAIT;
    while cluster.mode(follower).await.expect("mode") != Some(ServerMode::Follower) {
        assert!(Instant::now() < deadline, "the healed follower rejoins: {:?}", cluster.modes().await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("healed follower serving after {:?}", healed.elapsed());

    drop(cluster);
    assert_nothing_left();
}

/// The kit's image with iptables removed, as images built before it was added: removed again
/// when dropped.
struct ImageWithoutIptables(String);

impl ImageWithoutIptables {
    fn make() -> ImageWithoutIptables {
        let base = Backend::image_from_env();
        let (name, container) = (
            format!("zk-recipes/no-iptables-test:{}", std::process::id()),
            format!("zkr-no-iptables-{}", std::process::id()),
        );
        let removal = "rm -f /usr/sbin/iptables* /usr/sbin/ip6tables* /usr/sbin/xtables*";
        docker(&[
            "run",
            "--name",
            &container,
            "--label",
            "zk-recipes.test=1",
            "--entrypoint",
            "sh",
            &base,
            "-c",
            removal,
        ]);
        let entrypoint = docker(&["inspect", "-f", "{{json .Config.Entrypoint}}", &base]).join("");
        let changes = [format!("ENTRYPOINT {entrypoint}"), "CMD []".to_string()];
        docker(&["commit", "--change", &changes[0], "--change", &changes[1], &container, &name]);
        docker(&["rm", "-f", &container]);
        ImageWithoutIptables(name)
    }
}

impl Drop for ImageWithoutIptables {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rmi", "-f", &self.0]).output();
    }
}

#[tokio::test]
async fn an_image_without_iptables_cannot_partition_and_says_how_to_rebuild() {
    let _serial = SERIAL.lock().await;
    let image = ImageWithoutIptables::make();
    let cluster = TestingCluster::builder().backend(Backend::Docker).image(&image.0).servers(1).start().await;
    let cluster = cluster.expect("a one-server ensemble");
    let err = cluster.partition(0).await.expect_err("no iptables");
    assert!(matches!(&err, Error::Unsupported(m) if m.contains("build-image.sh --force")), "{err:?}");
    // nothing was cut: it still leads
    assert_eq!(cluster.mode(0).await.expect("mode"), Some(ServerMode::Leader));
    drop(cluster);
    drop(image);
    assert_nothing_left();
}

#[tokio::test]
async fn a_cancelled_start_leaves_nothing_behind() {
    let _serial = SERIAL.lock().await;
    let start = TestingCluster::builder().backend(Backend::Docker).servers(3).start();
    // Long enough to create the network and some containers, too short to elect a leader.
    assert!(tokio::time::timeout(Duration::from_millis(400), start).await.is_err());
    // Requests given up on still finish on the kit's runtime, and remove what they made.
    let deadline = Instant::now() + WAIT;
    while leftovers() != (vec![], vec![]) {
        assert!(Instant::now() < deadline, "left behind: {:?}", leftovers());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn an_image_that_is_not_there_is_an_error_and_leaves_nothing() {
    let _serial = SERIAL.lock().await;
    let started = TestingServer::builder().backend(Backend::Docker).image("zk-recipes/no-such-image:0").start().await;
    let err = started.expect_err("no such image");
    assert!(matches!(err, Error::Docker(_)), "{err:?}");
    assert_nothing_left();
}

#[test]
fn dropped_outside_a_runtime_the_container_is_still_removed() {
    let _serial = SERIAL.blocking_lock();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let server = runtime.block_on(docker_server());
    let id = server.container_id().expect("container").to_string();
    drop(runtime);
    // No runtime on this thread any more.
    drop(server);
    assert!(docker(&["ps", "-aq", "--filter", &format!("id={id}")]).is_empty());
    assert_nothing_left();
}
