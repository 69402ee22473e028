//! The newer recipes under the suite's fault mix (client links cut, a follower and the leader
//! killed, sessions expired, the leader partitioned from the followers): a tree cache converges
//! to a direct read of the tree after each fault; every group member is registered exactly once,
//! by its current session, and so is every service instance registered for discovery; guarded
//! writes never commit for a non-holder (the tokens they commit
//! never go back) and go on committing after each fault; a queue fed throughout is consumed
//! after each fault, and in the end every item put is consumed exactly once (an item whose node
//! ZooKeeper itself brought back after acknowledging its delete is counted in the report, not
//! failed: see `queue_feed`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zk_recipes::CreateMode;
use zk_recipes::{
    Cache, DistributedQueue, Framework, GroupMember, InterProcessMutex, ServiceDiscovery, ServiceInstance,
};
use zk_recipes_testing::{expire_session, fixtures, TestingCluster};

use super::liveness::PROGRESS_BOUND;
use super::queue_feed::{self, QueueLog};
use super::workload::{client, save_report, Client};
use super::{sleep, SERIAL};

const TREE: &str = "/recipes/tree";
const GROUP: &str = "/recipes/group";
const GUARDED: &str = "/recipes/guarded";
const DISCOVERY: &str = "/recipes/discovery";
const SERVICE: &str = "svc";
const QUEUE: &str = "/recipes/queue";

const MEMBERS: usize = 3;

/// Every node under `root` (itself included) with its data, read directly.
async fn direct_read(fw: &Framework, root: &str) -> zk_recipes::Result<BTreeMap<String, Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_string()];
    while let Some(path) = stack.pop() {
        let Ok((data, _)) = fw.get_data(&path).await else { continue };
        for child in fw.children(&path).await.unwrap_or_default() {
            stack.push(format!("{path}/{child}"));
        }
        found.insert(path, data);
    }
    Ok(found)
}

/// Writes under the tree until `stop`, except while `paused`.
async fn write_the_tree(fw: Framework, seed: u64, paused: Arc<AtomicBool>, stop: Arc<AtomicBool>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    while !stop.load(Ordering::SeqCst) {
        if !paused.load(Ordering::SeqCst) {
            let path = format!("{TREE}/k{}", rng.u8(0..6));
            let _ = match rng.u8(0..3) {
                0 => fw.create(&path, rng.u32(..).to_string().as_bytes(), CreateMode::Persistent).await.map(|_| ()),
                1 => fw.set_data(&path, rng.u32(..).to_string().as_bytes(), None).await.map(|_| ()),
                _ => fw.delete(&path).await,
            };
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Holds the mutex and writes its token with guarded transactions until `stop` (each write a
/// sequential node under `GUARDED`, so that the server's order of the writes can be read
/// back); records the tokens and times of the commits that returned.
async fn guarded_writes(c: Arc<Client>, commits: Arc<Mutex<Vec<(i64, Instant)>>>, stop: Arc<AtomicBool>) {
    let mutex = InterProcessMutex::new(&c.fw, "/recipes/lock").unwrap();
    while !stop.load(Ordering::SeqCst) {
        let Ok(guard) = mutex.acquire_timeout(Duration::from_secs(2)).await else { continue };
        let token = guard.fencing_token();
        for _ in 0..5 {
            let write = format!("{GUARDED}/w-");
            let txn = c.fw.transaction().while_held(&guard).create(
                &write,
                &token.to_be_bytes(),
                CreateMode::PersistentSequential,
            );
            if txn.commit().await.is_ok() {
                commits.lock().unwrap().push((token, Instant::now()));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = guard.release().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_registrations_and_guarded_writes_under_faults() {
    let _one = SERIAL.lock().await;
    let cluster = TestingCluster::builder().servers(3).peer_proxies(true).start().await.unwrap();
    let admin = fixtures::framework(cluster.connect_string()).await;
    admin.create(TREE, b"", CreateMode::Persistent).await.unwrap();
    admin.create(GUARDED, b"", CreateMode::Persistent).await.unwrap();
    let (stop, paused) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let commits: Arc<Mutex<Vec<(i64, Instant)>>> = Arc::default();
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    let writer = Arc::new(client(&cluster).await);
    tasks.push(tokio::spawn(write_the_tree(writer.fw.clone(), 7, paused.clone(), stop.clone())));
    clients.push(writer);
    let reader = Arc::new(client(&cluster).await);
    let cache = Cache::tree(&reader.fw, TREE).build().unwrap();
    cache.start().await.unwrap();
    clients.push(reader);
    let mut members = Vec::new();
    let mut registries = Vec::new();
    for i in 0..MEMBERS {
        let c = Arc::new(client(&cluster).await);
        let member = GroupMember::new(&c.fw, GROUP, &format!("m{i}"), "").unwrap();
        member.start().await.unwrap();
        // the same client also registers a service instance (kept registered by its session)
        let registry = ServiceDiscovery::<String>::new(&c.fw, DISCOVERY).unwrap();
        let instance = ServiceInstance::builder(SERVICE)
            .id(format!("i{i}"))
            .address("127.0.0.1")
            .port(8000 + i as u32)
            .payload(format!("instance {i}"))
            .build()
            .unwrap();
        registry.register(&instance).await.unwrap();
        members.push((c.clone(), member));
        registries.push(registry);
        clients.push(c);
    }
    for _ in 0..2 {
        let c = Arc::new(client(&cluster).await);
        tasks.push(tokio::spawn(guarded_writes(c.clone(), commits.clone(), stop.clone())));
        clients.push(c);
    }
    // a queue: one producer, two safe consumers, each client behind its own proxies
    let queue_log = Arc::new(QueueLog::default());
    let stop_feeding = Arc::new(AtomicBool::new(false));
    let producer = Arc::new(client(&cluster).await);
    let feeder = tokio::spawn(queue_feed::feed(
        DistributedQueue::new(&producer.fw, QUEUE).unwrap(),
        queue_log.clone(),
        stop_feeding.clone(),
    ));
    clients.push(producer);
    let mut consumers = Vec::new();
    for _ in 0..2 {
        let c = Arc::new(client(&cluster).await);
        let queue = DistributedQueue::new(&c.fw, QUEUE).unwrap();
        consumers.push(tokio::spawn(queue_feed::consume(queue, c.fw.clone(), queue_log.clone(), stop.clone())));
        clients.push(c);
    }
    sleep(1500).await;

    let mut lines = Vec::new();
    let faults = [
        "cut every client's links",
        "kill a follower",
        "kill the leader",
        "expire every session",
        "partition the leader",
    ];
    for fault in faults {
        let started = Instant::now();
        queue_log.fault(format!("started: {fault}"));
        match fault {
            "cut every client's links" => clients.iter().flat_map(|c| &c.proxies).for_each(|p| p.cut()),
            "kill a follower" | "kill the leader" => {
                let leader = cluster.wait_for_leader(Duration::from_secs(20)).await.unwrap();
                let i = if fault == "kill the leader" { leader } else { (leader + 1) % 3 };
                cluster.kill(i).unwrap();
                sleep(2000).await;
                cluster.restart(i).await.unwrap();
            }
            "expire every session" => {
                for c in &clients {
                    let _ = expire_session(&c.fw).await;
                }
            }
            _ => {
                let leader = cluster.wait_for_leader(Duration::from_secs(20)).await.unwrap();
                cluster.partition(leader).await.unwrap();
                sleep(8000).await;
                cluster.heal(leader).await.unwrap();
            }
        }
        let after = Instant::now();
        queue_log.fault(format!("ended: {fault}"));
        // guarded writes go on
        fixtures::eventually(PROGRESS_BOUND, format!("a guarded write after: {fault}"), || async {
            commits.lock().unwrap().last().is_some_and(|(_, at)| *at > after)
        })
        .await;
        // the queue is consumed again
        fixtures::eventually(PROGRESS_BOUND, format!("a queue item consumed after: {fault}"), || async {
            queue_log.consumed_since(after)
        })
        .await;
        // one registration per id, by the member's current session: group members and service
        // instances alike
        let instances = format!("{DISCOVERY}/{SERVICE}");
        fixtures::eventually(
            PROGRESS_BOUND,
            format!("every member and instance registered once after: {fault}"),
            || async {
                let mut ok = admin.children(GROUP).await.is_ok_and(|ids| ids.len() == MEMBERS);
                ok &= admin.children(&instances).await.is_ok_and(|ids| ids.len() == MEMBERS);
                for (i, (c, _)) in members.iter().enumerate() {
                    for node in [format!("{GROUP}/m{i}"), format!("{instances}/i{i}")] {
                        let owner = admin.exists(&node).await.ok().flatten().map(|s| s.ephemeral_owner);
                        ok &= owner == Some(c.fw.status().session_id);
                    }
                }
                ok
            },
        )
        .await;
        // the cache converges to a direct read of the tree (the writer paused)
        paused.store(true, Ordering::SeqCst);
        sleep(100).await;
        fixtures::eventually(PROGRESS_BOUND, format!("the cache equal to the tree after: {fault}"), || async {
            let direct = direct_read(&admin, TREE).await.unwrap_or_default();
            let cached: BTreeMap<String, Vec<u8>> =
                cache.snapshot().into_iter().map(|(p, n)| (p, n.data.unwrap_or_default())).collect();
            !direct.is_empty() && cached == direct
        })
        .await;
        paused.store(false, Ordering::SeqCst);
        lines.push(format!(
            "- {fault}: guarded writes, queue items consumed, one registration per member and per instance, and the cache equal to the tree again {:.1} s after the fault ended (bound {:.0} s; the fault took {:.1} s)",
            after.elapsed().as_secs_f64(),
            PROGRESS_BOUND.as_secs_f64(),
            (after - started).as_secs_f64()
        ));
    }
    stop_feeding.store(true, Ordering::SeqCst);
    fixtures::within(Duration::from_secs(30), feeder).await.unwrap();
    stop.store(true, Ordering::SeqCst);
    for t in tasks.into_iter().chain(consumers) {
        fixtures::within(Duration::from_secs(60), t).await.unwrap();
    }
    // every item put consumed exactly once (see `queue_feed`)
    let queue_verdict = queue_log.verdict().unwrap_or_else(|failure| panic!("{failure}"));
    // guarded writes never commit for a non-holder: in the server's order of the writes, the
    // writers' fencing tokens never go back; every commit that returned is there exactly once
    let commits = commits.lock().unwrap().clone();
    let mut writes = admin.children(GUARDED).await.unwrap();
    writes.sort();
    let mut tokens = Vec::new();
    for w in &writes {
        let data = admin.get_data(&format!("{GUARDED}/{w}")).await.unwrap().0;
        tokens.push(i64::from_be_bytes(data.try_into().expect("8 bytes")));
    }
    let back: Vec<_> = tokens.windows(2).filter(|w| w[1] < w[0]).collect();
    assert!(back.is_empty(), "a guarded write committed for a holder that had lost the mutex: {back:?} in {tokens:?}");
    // (a commit whose outcome was unknown may be there too)
    assert!(tokens.len() >= commits.len(), "{} writes stored, {} commits returned", tokens.len(), commits.len());
    cache.close().await.unwrap();
    for (_, m) in &members {
        let _ = m.close().await;
    }
    for r in &registries {
        let _ = r.close().await;
    }
    for c in &clients {
        c.fw.close();
    }
    admin.close();
    let report = format!(
        "### recipes-under-faults\n\nA tree cache following a tree written by another client, three group members (each also registering a service instance for discovery), two mutex holders writing with guarded transactions and a queue fed throughout with two safe consumers, each client behind its own proxies, through: {}. After each fault (table below) the cache converged to a direct read of the tree, every member and every service instance was registered exactly once by its current session, guarded writes committed again and queue items were consumed again; over the run {} guarded writes were stored ({} commits returned) and, in the server's order, their fencing tokens never went back (no write committed for a non-holder); {}.\n\n{}\n",
        faults.join(", "),
        tokens.len(),
        commits.len(),
        queue_verdict,
        lines.join("\n")
    );
    save_report("recipes-under-faults", &report);
    eprintln!("{report}");
}
