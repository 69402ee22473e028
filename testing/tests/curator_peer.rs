//! The Curator peer among its own participants, and the znode layouts Curator 5.4 writes.
//!
//! The tests share the testing kit's one ZooKeeper server (each in a chroot of its own) and
//! one Curator JVM (`CuratorPeer::shared`), simulating several Java participants as separate
//! client ids.
//! Run with `--nocapture` to see the observed layouts (recorded in `testing/src/curator/LAYOUTS.md`).

use std::net::IpAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_recipes_testing::curator::{AtomicResult, CuratorPeer};
use zk_recipes_testing::fixtures;
use zk_recipes_testing::Error;

const SHORT: Duration = Duration::from_millis(200);
const LONG: Duration = Duration::from_secs(10);

// ------------------------------------------------------------------------------------------
// The server: the testing kit's one shared server per test binary; each test works in a
// chroot of its own, so that it sees exactly the nodes it made (paths in the tests and in the
// printed layouts are relative to it).

struct ZkServer {
    connect: String,
}

impl ZkServer {
    /// A fresh, empty chroot on the shared server.
    async fn start() -> ZkServer {
        let cs = fixtures::shared_server().await;
        let base = format!("/{}", fixtures::unique("curator-peer"));
        let root = zookeeper_client::Client::connect(&cs).await.expect("connects to the shared server");
        let mode = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
        root.create(&base, &[], &mode).await.expect("creates the test's chroot");
        ZkServer { connect: format!("{cs}{base}") }
    }

    fn connect_string(&self) -> String {
        self.connect.clone()
    }

    async fn client(&self) -> zookeeper_client::Client {
        zookeeper_client::Client::connect(&self.connect).await.expect("inspector connects")
    }
}

// ------------------------------------------------------------------------------------------
// Helpers

async fn peer() -> Arc<CuratorPeer> {
    static REPORTED: std::sync::Once = std::sync::Once::new();
    let peer = CuratorPeer::shared().await.expect("Curator peer starts");
    REPORTED.call_once(|| {
        println!("Curator peer (pid {:?}) started: {:?}", peer.pid(), peer.timings());
    });
    peer
}

/// How long a whole test may take.
const TEST_LIMIT: Duration = Duration::from_secs(90);

#[derive(Debug)]
struct Node {
    name: String,
    owner: i64,
    data: Vec<u8>,
}

/// Children of `path`, sorted by name, with their ephemeral owner and data.
async fn nodes(zk: &zookeeper_client::Client, path: &str) -> Vec<Node> {
    let mut names = match zk.list_children(path).await {
        Ok(names) => names,
        Err(zookeeper_client::Error::NoNode) => return Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    };
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let full = format!("{}/{name}", path.trim_end_matches('/'));
        if let Ok((data, stat)) = zk.get_data(&full).await {
            out.push(Node { name, owner: stat.ephemeral_owner, data });
        }
    }
    out
}

async fn node(zk: &zookeeper_client::Client, path: &str) -> Node {
    let (data, stat) = zk.get_data(path).await.unwrap_or_else(|e| panic!("get {path}: {e}"));
    Node { name: path.to_string(), owner: stat.ephemeral_owner, data }
}

/// Waits until `path` has at least `n` children, at most [`LONG`]: the nodes of a call running
/// in the background take longer than a fixed pause on a loaded machine (the assertions that
/// follow check the count).
async fn until_children(zk: &zookeeper_client::Client, path: &str, n: usize) {
    let deadline = Instant::now() + LONG;
    while nodes(zk, path).await.len() < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `ephemeralOwner != 0` tells ephemeral nodes; containers and persistent nodes both show 0
/// (see [`reaped`]).
fn mode(owner: i64) -> &'static str {
    if owner == 0 {
        "persistent/container"
    } else {
        "ephemeral"
    }
}

/// Whether the server's container manager removes `path` (empty) within 1 s (ten check
/// intervals): true for an empty container that has had children, false for a persistent node.
async fn reaped(zk: &zookeeper_client::Client, path: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        match zk.check_stat(path).await.expect("stat") {
            None => return true,
            Some(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    false
}

fn show_data(data: &[u8]) -> String {
    match std::str::from_utf8(data) {
        Ok(s) if !s.is_empty() && s.chars().all(|c| !c.is_control()) => format!("{s:?}"),
        _ => format!("0x{}", data.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

fn print_layout(title: &str, path: &str, nodes: &[Node]) {
    println!("layout {title}: {path}");
    for n in nodes {
        println!("  {:<60} {:<10} owner={:#018x} data={}", n.name, mode(n.owner), n.owner, show_data(&n.data));
    }
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit() && !c.is_ascii_uppercase(),
        })
}

/// For `_c_<uuid>-<label><10 digits>`, the sequence number.
fn protected_seq(name: &str, label: &str) -> Option<u32> {
    let rest = name.strip_prefix("_c_")?;
    let (uuid, rest) = (rest.get(..36)?, rest.get(36..)?);
    let seq = rest.strip_prefix('-')?.strip_prefix(label)?;
    (is_uuid(uuid) && seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit())).then(|| seq.parse().ok())?
}

fn assert_default_data(n: &Node) {
    let text = std::str::from_utf8(&n.data).expect("default data is UTF-8");
    assert!(text.parse::<IpAddr>().is_ok(), "default data of {} is an IP address, got {text:?}", n.name);
}

// ------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn errors_are_typed() {
    fixtures::within(TEST_LIMIT, async {
        let peer = peer().await;
        peer.ping().await.expect("ping");
        match peer.mutex_release("nobody", "h").await {
            Err(Error::Peer(msg)) => assert!(msg.contains("IllegalStateException"), "{msg}"),
            other => panic!("expected a peer error, got {other:?}"),
        }
        match peer.call("bogus").await {
            Err(Error::Peer(msg)) => assert!(msg.contains("unknown command bogus"), "{msg}"),
            other => panic!("expected a peer error, got {other:?}"),
        }
        assert!(matches!(peer.close("has space").await, Err(Error::InvalidArgument(_))));
        assert!(matches!(peer.call("two\nlines").await, Err(Error::InvalidArgument(_))));
    })
    .await;
}

#[tokio::test]
async fn mutex_excludes_and_layout() {
    let zk = ZkServer::start().await;
    fixtures::within(TEST_LIMIT, async {
        let peer = peer().await;
        let cs = zk.connect_string();
        let sa = peer.connect("mx-a", &cs).await.unwrap();
        let sb = peer.connect("mx-b", &cs).await.unwrap();
        assert_eq!(peer.session_id("mx-a").await.unwrap(), sa);
        let inspector = zk.client().await;
        let path = "/locks/mutex";

        assert!(peer.mutex_acquire("mx-a", "h1", path, LONG).await.unwrap());
        let held = nodes(&inspector, path).await;
        print_layout("InterProcessMutex held by a", path, &held);
        assert_eq!(held.len(), 1);
        assert!(protected_seq(&held[0].name, "lock-").is_some(), "{}", held[0].name);
        assert_eq!(held[0].owner, sa);
        assert_default_data(&held[0]);
        let parent = node(&inspector, path).await;
        assert_eq!(parent.owner, 0);
        assert!(parent.data.is_empty());
        let root = node(&inspector, "/locks").await;
        print_layout("mutex ancestors", "/", &[root, parent]);

        // b is excluded, and its timed-out node is cleaned up.
        assert!(!peer.mutex_acquire("mx-b", "h2", path, SHORT).await.unwrap());
        assert_eq!(nodes(&inspector, path).await.len(), 1);

        // Re-entrant through the same holder: still one node.
        assert!(peer.mutex_acquire("mx-a", "h1", path, SHORT).await.unwrap());
        assert_eq!(nodes(&inspector, path).await.len(), 1);
        assert_eq!(peer.mutex_release("mx-a", "h1").await.unwrap(), 1);

        // A blocked acquire does not block other commands, and gets the lock on release.
        let waiter = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.mutex_acquire("mx-b", "h2", "/locks/mutex", LONG).await })
        };
        until_children(&inspector, path, 2).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished());
        let queued = nodes(&inspector, path).await;
        assert_eq!(queued.len(), 2);
        let mut seqs: Vec<(u32, i64)> =
            queued.iter().map(|n| (protected_seq(&n.name, "lock-").unwrap(), n.owner)).collect();
        seqs.sort();
        assert_eq!(seqs.iter().map(|s| s.1).collect::<Vec<_>>(), vec![sa, sb], "holder sorts first");
        assert_eq!(peer.mutex_release("mx-a", "h1").await.unwrap(), 0);
        assert!(waiter.await.unwrap().unwrap());
        let now = nodes(&inspector, path).await;
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].owner, sb);

        assert!(!peer.mutex_acquire("mx-a", "h1", path, SHORT).await.unwrap());
        peer.mutex_release("mx-b", "h2").await.unwrap();
        assert!(peer.mutex_acquire("mx-a", "h1", path, SHORT).await.unwrap());
        peer.mutex_release("mx-a", "h1").await.unwrap();
        assert!(nodes(&inspector, path).await.is_empty());
        assert!(reaped(&inspector, path).await, "the lock parent is a container");
        assert!(reaped(&inspector, "/locks").await, "ancestors are containers too");

        peer.close("mx-a").await.unwrap();
        peer.close("mx-b").await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn rwlock_layout_and_downgrade() {
    let zk = ZkServer::start().await;
    fixtures::within(TEST_LIMIT, async {
        let peer = peer().await;
        let cs = zk.connect_string();
        let sa = peer.connect("rw-a", &cs).await.unwrap();
        let sb = peer.connect("rw-b", &cs).await.unwrap();
        let sc = peer.connect("rw-c", &cs).await.unwrap();
        let inspector = zk.client().await;
        let path = "/rw";

        assert!(peer.rw_read_acquire("rw-a", "r1", path, LONG).await.unwrap());
        assert!(peer.rw_read_acquire("rw-b", "r2", path, LONG).await.unwrap());
        let readers = nodes(&inspector, path).await;
        print_layout("read lock held by a and b", path, &readers);
        assert_eq!(readers.len(), 2);
        for n in &readers {
            assert!(protected_seq(&n.name, "__READ__").is_some(), "{}", n.name);
            assert_default_data(n);
        }
        let mut owners: Vec<i64> = readers.iter().map(|n| n.owner).collect();
        owners.sort();
        let mut expected = vec![sa, sb];
        expected.sort();
        assert_eq!(owners, expected);

        assert!(!peer.rw_write_acquire("rw-c", "w", path, SHORT).await.unwrap());
        assert_eq!(nodes(&inspector, path).await.len(), 2);
        peer.rw_release("rw-a", "r1").await.unwrap();
        peer.rw_release("rw-b", "r2").await.unwrap();

        assert!(peer.rw_write_acquire("rw-c", "w", path, LONG).await.unwrap());
        let writer = nodes(&inspector, path).await;
        print_layout("write lock held by c", path, &writer);
        assert_eq!(writer.len(), 1);
        assert!(protected_seq(&writer[0].name, "__WRIT__").is_some(), "{}", writer[0].name);
        assert_eq!(writer[0].owner, sc);
        assert!(!peer.rw_read_acquire("rw-a", "r1", path, SHORT).await.unwrap());
        peer.rw_release("rw-c", "w").await.unwrap();

        // Downgrade: hold write, take read through the same holder, release write.
        assert!(peer.rw_write_acquire("rw-a", "d", path, LONG).await.unwrap());
        assert!(peer.rw_read_acquire("rw-a", "d", path, SHORT).await.unwrap());
        let both = nodes(&inspector, path).await;
        print_layout("downgrade: a holds write then read", path, &both);
        assert_eq!(both.len(), 2);
        assert!(both.iter().all(|n| n.owner == sa));
        assert_eq!(peer.rw_release_kind("rw-a", "d", true).await.unwrap(), 1);
        let read_only = nodes(&inspector, path).await;
        print_layout("downgrade: write released", path, &read_only);
        assert_eq!(read_only.len(), 1);
        assert!(protected_seq(&read_only[0].name, "__READ__").is_some(), "{}", read_only[0].name);
        assert!(!peer.rw_write_acquire("rw-b", "w2", path, SHORT).await.unwrap());
        assert!(peer.rw_read_acquire("rw-b", "r3", path, SHORT).await.unwrap());
        peer.rw_release("rw-b", "r3").await.unwrap();
        peer.rw_release("rw-a", "d").await.unwrap();
        assert!(nodes(&inspector, path).await.is_empty());
        assert!(reaped(&inspector, path).await, "the lock parent is a container");

        for cid in ["rw-a", "rw-b", "rw-c"] {
            peer.close(cid).await.unwrap();
        }
    })
    .await;
}

#[tokio::test]
async fn semaphore_limits_leases_and_layout() {
    let zk = ZkServer::start().await;
    fixtures::within(TEST_LIMIT, async {
        let peer = peer().await;
        let cs = zk.connect_string();
        let sa = peer.connect("sem-a", &cs).await.unwrap();
        let sb = peer.connect("sem-b", &cs).await.unwrap();
        peer.connect("sem-c", &cs).await.unwrap();
        let inspector = zk.client().await;
        let path = "/sem";

        assert!(peer.sem_acquire("sem-a", "s1", path, 2, 1, LONG).await.unwrap());
        assert!(peer.sem_acquire("sem-b", "s2", path, 2, 1, LONG).await.unwrap());
        // A third participant waits holding the `locks` mutex, with its lease node created.
        let sc = peer.session_id("sem-c").await.unwrap();
        let third = {
            let peer = peer.clone();
            tokio::spawn(
                async move { peer.sem_acquire("sem-c", "s3", "/sem", 2, 1, Duration::from_millis(1000)).await },
            )
        };
        // it takes the `locks` mutex before it creates its lease node
        until_children(&inspector, "/sem/leases", 3).await;
        let waiting_leases = nodes(&inspector, "/sem/leases").await;
        let waiting_locks = nodes(&inspector, "/sem/locks").await;
        print_layout("SemaphoreV2 while a third waits", "/sem/leases", &waiting_leases);
        print_layout("SemaphoreV2 while a third waits", "/sem/locks", &waiting_locks);
        assert_eq!(waiting_leases.len(), 3, "the waiter's lease node exists while it waits");
        assert_eq!(waiting_locks.len(), 1, "the waiter holds the acquire mutex");
        assert!(protected_seq(&waiting_locks[0].name, "lock-").is_some());
        assert_eq!(waiting_locks[0].owner, sc);
        assert!(!third.await.unwrap().unwrap(), "the third lease times out");

        let top = nodes(&inspector, path).await;
        print_layout("SemaphoreV2 (max 2) with 2 leases", path, &top);
        // `locks` is an empty container by now: the server may already have reaped it
        let names: Vec<&str> = top.iter().map(|n| n.name.as_str()).collect();
        assert!(names == ["leases", "locks"] || names == ["leases"], "{names:?}");
        assert!(top.iter().all(|n| n.owner == 0 && n.data.is_empty()));
        let leases = nodes(&inspector, "/sem/leases").await;
        print_layout("SemaphoreV2 leases", "/sem/leases", &leases);
        assert_eq!(leases.len(), 2, "the timed-out lease is gone");
        for n in &leases {
            assert!(protected_seq(&n.name, "lease-").is_some(), "{}", n.name);
            assert_default_data(n);
        }
        let mut owners: Vec<i64> = leases.iter().map(|n| n.owner).collect();
        owners.sort();
        let mut expected = vec![sa, sb];
        expected.sort();
        assert_eq!(owners, expected);
        assert!(nodes(&inspector, "/sem/locks").await.is_empty(), "the acquire mutex is released");

        assert_eq!(peer.sem_release("sem-a", "s1").await.unwrap(), 1);
        assert!(peer.sem_acquire("sem-c", "s3", path, 2, 1, LONG).await.unwrap());
        assert_eq!(peer.sem_release("sem-b", "s2").await.unwrap(), 1);
        assert_eq!(peer.sem_release("sem-c", "s3").await.unwrap(), 1);
        assert!(reaped(&inspector, "/sem/leases").await, "leases is a container");
        assert!(reaped(&inspector, "/sem/locks").await, "locks is a container");
        assert!(reaped(&inspector, path).await, "the semaphore path is a container");

        // Several leases per holder.
        assert!(peer.sem_acquire("sem-a", "s4", "/sem2", 2, 2, LONG).await.unwrap());
        assert_eq!(nodes(&inspector, "/sem2/leases").await.len(), 2);
        assert!(!peer.sem_acquire("sem-b", "s5", "/sem2", 2, 1, SHORT).await.unwrap());
        assert_eq!(peer.sem_release("sem-a", "s4").await.unwrap(), 2);

        // Semaphore mutex: SemaphoreV2 with one lease.
        assert!(peer.semmutex_acquire("sem-a", "m1", "/semmutex", LONG).await.unwrap());
        assert!(!peer.semmutex_acquire("sem-b", "m2", "/semmutex", SHORT).await.unwrap());
        let sm = nodes(&inspector, "/semmutex/leases").await;
        print_layout("InterProcessSemaphoreMutex held by a", "/semmutex/leases", &sm);
        assert_eq!(sm.len(), 1);
        assert!(protected_seq(&sm[0].name, "lease-").is_some(), "{}", sm[0].name);
        assert_eq!(sm[0].owner, sa);
        peer.semmutex_release("sem-a", "m1").await.unwrap();
        assert!(peer.semmutex_acquire("sem-b", "m2", "/semmutex", LONG).await.unwrap());
        peer.semmutex_release("sem-b", "m2").await.unwrap();

        for cid in ["sem-a", "sem-b", "sem-c"] {
            peer.close(cid).await.unwrap();
        }
    })
    .await;
}

#[tokio::test]
async fn leader_latch_elects_one() {
    let zk = ZkServer::start().await;
    fixtures::within(TEST_LIMIT, async {
        let peer = peer().await;
        let cs = zk.connect_string();
        let sa = peer.connect("ll-a", &cs).await.unwrap();
        let sb = peer.connect("ll-b", &cs).await.unwrap();
        let inspector = zk.client().await;
        let path = "/election";

        peer.latch_start("ll-a", "l", path, "alice").await.unwrap();
        peer.latch_start("ll-b", "l", path, "bob").await.unwrap();
        let deadline = Instant::now() + LONG;
        let (a, b) = loop {
            let a = peer.latch_has("ll-a", "l").await.unwrap();
            let b = peer.latch_has("ll-b", "l").await.unwrap();
            if a || b || Instant::now() > deadline {
                break (a, b);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(a ^ b, "exactly one leader (a={a}, b={b})");
        let (leader, follower, leader_id) = if a { ("ll-a", "ll-b", "alice") } else { ("ll-b", "ll-a", "bob") };
        assert_eq!(peer.latch_leader("ll-a", "l").await.unwrap(), leader_id);
        assert_eq!(peer.latch_leader("ll-b", "l").await.unwrap(), leader_id);
        assert!(!peer.latch_await(follower, "l", SHORT).await.unwrap());

        let latches = nodes(&inspector, path).await;
        print_layout("two LeaderLatches", path, &latches);
        assert_eq!(latches.len(), 2);
        for n in &latches {
            assert!(protected_seq(&n.name, "latch-").is_some(), "{}", n.name);
            let id = if n.owner == sa {
                "alice"
            } else {
                assert_eq!(n.owner, sb);
                "bob"
            };
            assert_eq!(n.data, id.as_bytes(), "latch data is the participant id");
        }
        let our = peer.latch_our_path(leader, "l").await.unwrap();
        let lowest = latches.iter().min_by_key(|n| protected_seq(&n.name, "latch-")).unwrap();
        assert_eq!(our, format!("{path}/{}", lowest.name), "the lowest sequence leads");

        peer.latch_close(leader, "l").await.unwrap();
        assert!(peer.latch_await(follower, "l", LONG).await.unwrap());
        let follower_id = if a { "bob" } else { "alice" };
        assert_eq!(peer.latch_leader(follower, "l").await.unwrap(), follower_id);
        peer.latch_close(follower, "l").await.unwrap();
        // Curator's LeaderLatch.close() deletes its node in the background (a guaranteed
        // delete), so the node may still be there when close() returns.
        fixtures::eventually(LONG, "the closed latches' nodes are deleted", || async {
            nodes(&inspector, path).await.is_empty()
        })
        .await;
        assert!(reaped(&inspector, path).await, "the latch path is a container");

        peer.close("ll-a").await.unwrap();
        peer.close("ll-b").await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn counters_add_up() {
    let zk = ZkServer::start().await;
    fixtures::within(TEST_LIMIT, async {
        let peer = peer().await;
        let cs = zk.connect_string();
        peer.connect("ct-a", &cs).await.unwrap();
        peer.connect("ct-b", &cs).await.unwrap();
        let inspector = zk.client().await;
        const N: i32 = 15;

        let add_shared = |cid: &'static str, delta: i32| {
            let peer = peer.clone();
            async move {
                for _ in 0..N {
                    peer.shared_count_add(cid, "/counters/shared", delta).await.unwrap();
                }
            }
        };
        tokio::join!(add_shared("ct-a", 1), add_shared("ct-b", 2));
        assert_eq!(peer.shared_count_get("ct-a", "/counters/shared").await.unwrap(), 3 * N);
        let shared = node(&inspector, "/counters/shared").await;
        assert_eq!(shared.owner, 0);
        assert_eq!(shared.data, (3 * N).to_be_bytes());

        let add_long = |cid: &'static str, delta: i64| {
            let peer = peer.clone();
            async move {
                for _ in 0..N {
                    let r = peer.atomic_long_add(cid, "/counters/long", delta).await.unwrap();
                    assert!(r.succeeded);
                    assert_eq!(r.post_value, r.pre_value + delta);
                }
            }
        };
        tokio::join!(add_long("ct-a", 3), add_long("ct-b", -10));
        let total = i64::from(N) * -7;
        assert_eq!(
            peer.atomic_long_get("ct-b", "/counters/long").await.unwrap(),
            AtomicResult { succeeded: true, pre_value: total, post_value: total }
        );
        let long = node(&inspector, "/counters/long").await;
        assert_eq!(long.owner, 0);
        assert_eq!(long.data, total.to_be_bytes());

        let add_int = |cid: &'static str, delta: i32| {
            let peer = peer.clone();
            async move {
                for _ in 0..N {
                    assert!(peer.atomic_int_add(cid, "/counters/int", delta).await.unwrap().succeeded);
                }
            }
        };
        tokio::join!(add_int("ct-a", 5), add_int("ct-b", 6));
        assert_eq!(peer.atomic_int_get("ct-a", "/counters/int").await.unwrap().post_value, 11 * N);
        let int = node(&inspector, "/counters/int").await;
        assert_eq!(int.data, (11 * N).to_be_bytes());

        let parent = node(&inspector, "/counters").await;
        print_layout("counters", "/counters", &[parent, shared, long, int]);

        // A missing atomic node reads as 0.
        assert_eq!(peer.atomic_long_get("ct-a", "/counters/none").await.unwrap().post_value, 0);

        assert_eq!(inspector.check_stat("/counters/none").await.unwrap(), None, "a read does not create the node");

        // The counters are persistent, their parent is a container.
        assert!(!reaped(&inspector, "/counters/shared").await, "counters are persistent");
        for counter in ["/counters/shared", "/counters/long", "/counters/int"] {
            inspector.delete(counter, None).await.unwrap();
        }
        assert!(reaped(&inspector, "/counters").await, "the counters' parent is a container");

        peer.close("ct-a").await.unwrap();
        peer.close("ct-b").await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn barriers_open() {
    let zk = ZkServer::start().await;
    fixtures::within(TEST_LIMIT, async {
        let peer = peer().await;
        let cs = zk.connect_string();
        let sa = peer.connect("db-a", &cs).await.unwrap();
        let sb = peer.connect("db-b", &cs).await.unwrap();
        let inspector = zk.client().await;
        let path = "/double";

        let first = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.dbarrier_enter("db-a", "d", "/double", 2, LONG).await })
        };
        until_children(&inspector, path, 1).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!first.is_finished(), "one member of two does not pass");
        let waiting = nodes(&inspector, path).await;
        print_layout("DistributedDoubleBarrier, 1 of 2 entered", path, &waiting);
        assert_eq!(waiting.len(), 1);
        assert!(is_uuid(&waiting[0].name), "{}", waiting[0].name);
        assert_eq!(waiting[0].owner, sa);

        assert!(peer.dbarrier_enter("db-b", "d", path, 2, LONG).await.unwrap());
        assert!(first.await.unwrap().unwrap());
        let entered = nodes(&inspector, path).await;
        print_layout("DistributedDoubleBarrier, 2 of 2 entered", path, &entered);
        assert_eq!(entered.len(), 3);
        let ready = entered.iter().find(|n| n.name == "ready").expect("ready node");
        assert_eq!(ready.owner, 0);
        let mut members: Vec<i64> = entered.iter().filter(|n| n.name != "ready").map(|n| n.owner).collect();
        members.sort();
        let mut expected = vec![sa, sb];
        expected.sort();
        assert_eq!(members, expected);
        print_layout("double barrier parent", "/", &[node(&inspector, path).await]);

        let (la, lb) = tokio::join!(peer.dbarrier_leave("db-a", "d", LONG), peer.dbarrier_leave("db-b", "d", LONG));
        assert!(la.unwrap() && lb.unwrap());
        let left = nodes(&inspector, path).await;
        print_layout("DistributedDoubleBarrier after both left", path, &left);
        assert!(left.is_empty());
        assert!(reaped(&inspector, path).await, "the double barrier path is a container");

        // DistributedBarrier.
        peer.barrier_set("db-a", "/gate").await.unwrap();
        let gate = node(&inspector, "/gate").await;
        print_layout("DistributedBarrier set", "/", &[gate]);
        assert!(!reaped(&inspector, "/gate").await, "the barrier node is persistent");
        assert!(!peer.barrier_wait("db-b", "/gate", SHORT).await.unwrap());
        let waiter = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.barrier_wait("db-b", "/gate", LONG).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        peer.barrier_remove("db-a", "/gate").await.unwrap();
        assert!(waiter.await.unwrap().unwrap());

        peer.close("db-a").await.unwrap();
        peer.close("db-b").await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn dedicated_peer_lifecycle() {
    fixtures::within(TEST_LIMIT, async {
        // Dropping a peer kills and reaps its JVM.
        let peer = CuratorPeer::start().await.expect("peer starts");
        let pid = peer.pid().expect("pid");
        assert!(peer.timings().compile.is_none() || peer.timings().jvm > Duration::ZERO);
        peer.ping().await.unwrap();
        drop(peer);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "JVM {pid} reaped");

        // `shutdown` lets it exit by itself.
        let peer = CuratorPeer::start().await.expect("peer starts");
        let pid = peer.pid().expect("pid");
        peer.shutdown().await.unwrap();
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "JVM {pid} reaped");

        // A JVM that dies fails outstanding and later calls with a peer error.
        let peer = CuratorPeer::start().await.expect("peer starts");
        let pid = peer.pid().expect("pid");
        let status = Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
        assert!(status.success());
        let err = loop {
            match peer.ping().await {
                Ok(()) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(e) => break e,
            }
        };
        match err {
            Error::Peer(msg) => assert!(msg.contains("JVM"), "{msg}"),
            other => panic!("expected a peer error, got {other:?}"),
        }
        assert!(matches!(peer.ping().await, Err(Error::Peer(_))));
    })
    .await;
}
