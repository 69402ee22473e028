//! Atomic counters against real ZooKeeper: no lost or doubled increments, also across server
//! crashes with replies lost in flight.

use assert_matches::assert_matches;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use zk_recipes::counter::PromotedToLock;
use zk_recipes::CreateMode;

use zk_recipes::{AtomicOptions, DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicValue, Error};
use zk_recipes_testing::fixtures;
use zk_recipes_testing::TestingServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_sessions_increment_without_losing_any() {
    // queueing on contention (the default), and retrying at once
    for queue in [true, false] {
        sixteen_sessions_increment(queue).await;
    }
}

async fn sixteen_sessions_increment(queue_on_contention: bool) {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}/counter", fixtures::unique("atomic"));
    let options = AtomicOptions { queue_on_contention, ..Default::default() };
    let successes = Arc::new(AtomicI64::new(0));
    let queued = Arc::new(AtomicI64::new(0));
    let joined = Arc::new(AtomicI64::new(0));
    let handed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (cs, path, options, successes, queued, joined, handed) = (
            cs.clone(),
            path.clone(),
            options.clone(),
            successes.clone(),
            queued.clone(),
            joined.clone(),
            handed.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let fw = fixtures::framework(&cs).await;
            let counter = DistributedAtomicLong::with_options(&fw, &path, options).unwrap();
            for _ in 0..25 {
                let r = if i % 2 == 0 { counter.increment().await } else { counter.add(1).await }.unwrap();
                if r.succeeded {
                    assert_eq!(r.post_value, r.pre_value + 1);
                    successes.fetch_add(1, Ordering::SeqCst);
                    handed.lock().unwrap().push(r.post_value);
                }
                if r.stats.promoted_tries > 0 || r.stats.applied_by_another {
                    queued.fetch_add(1, Ordering::SeqCst);
                }
                if r.stats.applied_by_another {
                    joined.fetch_add(1, Ordering::SeqCst);
                }
            }
            counter.close().await.unwrap();
            fw.close();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let fw = fixtures::framework(&cs).await;
    let counter = DistributedAtomicLong::new(&fw, &path).unwrap();
    assert_eq!(counter.get().await.unwrap(), successes.load(Ordering::SeqCst));
    assert_eq!(successes.load(Ordering::SeqCst), 400, "none gave up under contention");
    // every session was handed its own numbers: 1..=400, each once
    let mut handed = handed.lock().unwrap().clone();
    handed.sort_unstable();
    assert_eq!(handed, (1..=400).collect::<Vec<i64>>(), "each number handed out once");
    let (queued, joined) = (queued.load(Ordering::SeqCst), joined.load(Ordering::SeqCst));
    eprintln!("queue {queue_on_contention}: {queued} queued, {joined} applied by another session's write");
    if queue_on_contention {
        assert!(queued > 0, "contended operations queued");
        assert!(joined > 0, "queued additions were written with the turn holder's");
    } else {
        assert_eq!((queued, joined), (0, 0), "nothing queues when told not to");
    }
    // the counter's node is persistent as Curator makes it (the gate never creates it as a
    // container parent), with no owner
    let (_, stat) = fw.get_data(&path).await.unwrap();
    assert_eq!(stat.ephemeral_owner, 0);
    // transaction markers are cleaned up; the queue's container holds no contender (the gate
    // stays: it belongs to the value, like the value's node)
    let mut left = fw.children(&path).await.unwrap();
    left.retain(|c| c != "_lock_" && c != "_gate_");
    assert!(left.is_empty(), "markers left: {left:?}");
    let in_queue = queue_nodes(&fw, &path).await;
    assert!(in_queue.is_empty(), "contenders left in the queue: {in_queue:?}");
}

/// The nodes in the queue of the counter at `path` (none when the queue's container is gone).
async fn queue_nodes(fw: &zk_recipes::Framework, path: &str) -> Vec<String> {
    match fw.children(&format!("{path}/_lock_")).await {
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Vec::new(),
        other => other.unwrap(),
    }
}

/// On a 3-node ensemble the sessions on the leader's server hear of their writes first and
/// would win every race against the queue's turn on a follower; the gate makes the turn win
/// after a few refusals, so every session keeps counting while the others contend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_session_on_an_ensemble_keeps_counting_under_contention() {
    let cluster = zk_recipes_testing::TestingCluster::start(3).await.unwrap();
    let path = format!("/{}/counter", fixtures::unique("atomic-fair"));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for i in 0..9 {
        let cs = cluster.server_connect_string(i % 3).unwrap().to_string();
        let (path, stop) = (path.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let fw = fixtures::framework(&cs).await;
            let counter = DistributedAtomicLong::new(&fw, &path).unwrap();
            let mut mine = 0i64;
            while !stop.load(Ordering::SeqCst) {
                assert!(counter.increment().await.unwrap().succeeded);
                mine += 1;
            }
            counter.close().await.unwrap();
            fw.close();
            mine
        }));
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    stop.store(true, Ordering::SeqCst);
    let mut counts = Vec::new();
    for t in tasks {
        counts.push(tokio::time::timeout(Duration::from_secs(30), t).await.expect("a session stuck").unwrap());
    }
    let fw = fixtures::framework(cluster.connect_string()).await;
    let total: i64 = counts.iter().sum();
    assert_eq!(DistributedAtomicLong::new(&fw, &path).unwrap().get().await.unwrap(), total);
    eprintln!("increments per session in 4 s: {counts:?}");
    // an even share would be total / 9; each session must have had a real part of it
    let least = *counts.iter().min().unwrap();
    assert!(least * 9 * 10 >= total, "a session starved: {counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increments_survive_server_crashes_with_lost_replies() {
    increments_survive_crashes(Duration::from_millis(300)).await;
}

/// The server down longer than the session timeout: every session is lost and built again
/// while writes are in flight, and the old sessions (restored by the restarted server until it
/// expires them) may still hold queue nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increments_survive_server_outages_past_the_session_timeout() {
    increments_survive_crashes(fixtures::SESSION_TIMEOUT + Duration::from_millis(100)).await;
}

/// Four sessions increment one counter while the server is killed (`kill -9`, replies lost in
/// flight) and restarted twice, `down` apart: no increment lost or doubled, increments go on
/// after the last restart, and no queue node is left once every increment has returned.
async fn increments_survive_crashes(down: Duration) {
    let server = TestingServer::start().await.unwrap();
    let cs = server.connect_string().to_string();
    let successes = Arc::new(AtomicI64::new(0));
    let failures = Arc::new(AtomicI64::new(0));
    let unknown = Arc::new(AtomicI64::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (cs, successes, failures, unknown, stop) =
            (cs.clone(), successes.clone(), failures.clone(), unknown.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let fw = fixtures::framework(&cs).await;
            let counter = DistributedAtomicLong::new(&fw, "/crash/counter").unwrap();
            while !stop.load(Ordering::SeqCst) {
                match counter.increment().await {
                    Ok(_) => {
                        successes.fetch_add(1, Ordering::SeqCst);
                    }
                    // applied or not: a queued addition a turn holder may have written
                    Err(Error::OutcomeUnknown { .. }) => {
                        unknown.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => {
                        failures.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            fw
        }));
    }
    // kill -9 the server twice while writes are in flight (replies are lost), restart it
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        server.kill();
        tokio::time::sleep(down).await;
        server.restart().await.unwrap();
    }
    // liveness: increments go on after the last restart (however long the reconnection takes
    // on a loaded machine, within a bound)
    let at_restart = successes.load(Ordering::SeqCst);
    fixtures::eventually(Duration::from_secs(20), "increments resume after the last restart", || async {
        successes.load(Ordering::SeqCst) >= at_restart + 20
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    let mut fws = Vec::new();
    for t in tasks {
        // every increment returns
        fws.push(fixtures::within(Duration::from_secs(30), t).await.unwrap());
    }
    let fw = fixtures::framework(&cs).await;
    // no orphan: every increment returned, so no session may still queue (a node of a session
    // that was lost goes when the server expires it; our own nodes' deletes may be in flight)
    fixtures::eventually(Duration::from_secs(20), "the counter's queue is empty", || async {
        queue_nodes(&fw, "/crash/counter").await.is_empty()
    })
    .await;
    let value = DistributedAtomicLong::new(&fw, "/crash/counter").unwrap().get().await.unwrap();
    let ok = successes.load(Ordering::SeqCst);
    let (failed, unknown) = (failures.load(Ordering::SeqCst), unknown.load(Ordering::SeqCst));
    eprintln!("crash test ({down:?} down): {ok} successes, {failed} failures, {unknown} outcomes unknown");
    // every success counted once, every failure not at all, an unknown outcome once or not
    assert!(
        (ok..=ok + unknown).contains(&value),
        "counter {value} outside the successful increments {ok} (+ {unknown} unknown; failures: {failed})"
    );
}

#[tokio::test]
async fn operations_and_their_results() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("ops"));
    let long = DistributedAtomicLong::new(&fw, &path).unwrap();
    assert_eq!(long.get().await.unwrap(), 0, "a missing node reads as 0");
    assert!(long.initialize(10).await.unwrap());
    assert!(!long.initialize(99).await.unwrap(), "initialize does not overwrite");
    let r = long.add(5).await.unwrap();
    assert!(r.succeeded && r.pre_value == 10 && r.post_value == 15);
    assert!(r.stats.optimistic_tries >= 1);
    let r = long.subtract(20).await.unwrap();
    assert_eq!((r.pre_value, r.post_value), (15, -5));
    assert_eq!(long.decrement().await.unwrap().post_value, -6);
    let miss = long.compare_and_set(100, 1).await.unwrap();
    assert!(!miss.succeeded && miss.pre_value == -6 && miss.post_value == -6);
    let hit = long.compare_and_set(-6, 1).await.unwrap();
    assert!(hit.succeeded && hit.post_value == 1);
    let set = long.try_set(42).await.unwrap();
    assert!(set.succeeded && set.pre_value == 1);
    long.force_set(i64::MAX).await.unwrap();
    assert_eq!(long.increment().await.unwrap().post_value, i64::MIN, "wraps like Java");
    let (data, _) = fw.get_data(&path).await.unwrap();
    assert_eq!(data, i64::MIN.to_be_bytes(), "8-byte big-endian on the wire");
    let int = DistributedAtomicInteger::new(&fw, &format!("{path}-int")).unwrap();
    int.add(7).await.unwrap();
    assert_eq!(fw.get_data(&format!("{path}-int")).await.unwrap().0, 7i32.to_be_bytes());
}

#[tokio::test]
async fn corrupt_and_bad_input_give_typed_errors() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("corrupt"));
    fw.create(&path, b"abc", CreateMode::Persistent).await.unwrap();
    let long = DistributedAtomicLong::new(&fw, &path).unwrap();
    assert!(matches!(long.get().await, Err(Error::CorruptData { .. })));
    assert!(matches!(long.increment().await, Err(Error::CorruptData { .. })));
    assert_eq!(fw.get_data(&path).await.unwrap().0, b"abc", "corrupt data is not overwritten by an increment");
    long.force_set(3).await.unwrap();
    assert_eq!(long.get().await.unwrap(), 3);
    let int = DistributedAtomicInteger::new(&fw, &path).unwrap();
    assert!(matches!(int.get().await, Err(Error::CorruptData { .. })), "8 bytes are not an i32");
    let value = DistributedAtomicValue::new(&fw, &format!("{path}-v"), AtomicOptions::default()).unwrap();
    assert!(matches!(value.force_set(b"").await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(value.try_set(b"").await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(DistributedAtomicLong::new(&fw, "no-slash"), Err(Error::InvalidPath { .. })));
    let zero = AtomicOptions { optimistic_tries: 0, ..Default::default() };
    assert!(matches!(DistributedAtomicValue::new(&fw, "/x", zero), Err(Error::InvalidArgument { .. })));
}

#[tokio::test]
async fn promotion_to_a_lock_after_the_optimistic_tries() {
    let cs = fixtures::shared_server().await;
    let base = format!("/{}", fixtures::unique("promoted"));
    let options = AtomicOptions {
        optimistic_tries: 1,
        promoted: Some(PromotedToLock {
            lock_path: format!("{base}/lock"),
            timeout: Duration::from_secs(10),
            tries: 50,
        }),
        ..Default::default()
    };
    let successes = Arc::new(AtomicI64::new(0));
    let promoted = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (cs, base, options, successes, promoted) =
            (cs.clone(), base.clone(), options.clone(), successes.clone(), promoted.clone());
        tasks.push(tokio::spawn(async move {
            let fw = fixtures::framework(&cs).await;
            let counter = DistributedAtomicLong::with_options(&fw, &format!("{base}/n"), options).unwrap();
            for _ in 0..10 {
                let r = counter.increment().await.unwrap();
                if r.succeeded {
                    successes.fetch_add(1, Ordering::SeqCst);
                }
                if r.stats.promoted_tries > 0 {
                    promoted.fetch_add(1, Ordering::SeqCst);
                }
            }
            counter.close().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let fw = fixtures::framework(&cs).await;
    let value = DistributedAtomicLong::new(&fw, &format!("{base}/n")).unwrap().get().await.unwrap();
    assert_eq!(value, successes.load(Ordering::SeqCst));
    assert_eq!(value, 60);
    assert!(promoted.load(Ordering::SeqCst) > 0, "with one optimistic try, contention promotes");
}

#[tokio::test]
async fn a_write_whose_reply_is_lost_counts_once() {
    use zk_recipes_testing::{ProxyMode, TcpProxy};
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let direct = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("lost-reply"));
    let counter = DistributedAtomicLong::new(&fw, &path).unwrap();
    // one write first: afterwards the counter writes from the value and version it knows,
    // so the next increment's first request is the write itself
    assert!(counter.increment().await.unwrap().succeeded);
    for round in 2..=6i64 {
        // the increment reaches the server and is applied; its reply never comes back
        proxy.set_mode(ProxyMode::DropReplies);
        let pending = tokio::spawn({
            let counter = counter.clone();
            async move { counter.increment().await }
        });
        let reader = DistributedAtomicLong::new(&direct, &path).unwrap();
        fixtures::eventually(Duration::from_secs(10), "the write reached the server", || async {
            reader.get().await.unwrap() >= round
        })
        .await;
        // the client times the connection out, reconnects, and must not apply it again
        proxy.set_mode(ProxyMode::Pass);
        proxy.cut();
        let result = pending.await.unwrap().unwrap();
        assert!(result.succeeded, "round {round}: the applied write is reported as done");
        assert_eq!(reader.get().await.unwrap(), round, "round {round}: counted exactly once");
    }
}

#[tokio::test]
async fn an_update_whose_tries_ran_out_is_an_error_not_an_ok() {
    let cs = fixtures::shared_server().await;
    let (a_fw, b_fw) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("contended"));
    // one try, no queue, no promotion: a refused write is the end of the operation
    let options = AtomicOptions { optimistic_tries: 1, promoted: None, queue_on_contention: false };
    let a = DistributedAtomicLong::with_options(&a_fw, &path, options).unwrap();
    // b, the other writer, has the default tries: it never gives up here
    let b = DistributedAtomicLong::new(&b_fw, &path).unwrap();
    // a missing node is created without costing the one try
    assert_eq!(a.increment().await.unwrap().post_value, 1, "a creates the node, writes 1 and remembers it");
    assert_eq!(b.increment().await.unwrap().post_value, 2, "b writes 2: a's value is stale");
    // a's one try writes from its stale value and is refused: an error, and nothing applied
    let refused = a.increment().await;
    assert_matches!(&refused, Err(Error::Contended { path: p, attempts: 1, .. }) if *p == path);
    assert!(refused.unwrap_err().to_string().contains("not applied"));
    assert_eq!(b.get().await.unwrap(), 2, "the refused increment was not applied");
    // the refusal forgot the stale value: the next try reads the server's and writes
    let r = a.increment().await.unwrap();
    assert!(r.succeeded && (r.pre_value, r.post_value) == (2, 3), "{r:?}");
    // the same for a forced set from a stale value
    assert_eq!(b.increment().await.unwrap().post_value, 4);
    assert!(matches!(a.force_set(7).await, Err(Error::Contended { attempts: 1, .. })));
    assert_eq!(b.get().await.unwrap(), 4, "the refused set was not applied");
    // a failed compare is an answer, not an error
    let miss = a.compare_and_set(99, 5).await.unwrap();
    assert!(!miss.succeeded && miss.pre_value == 4, "{miss:?}");
    a.close().await.unwrap();
    b.close().await.unwrap();
}

#[tokio::test]
async fn a_stale_cached_value_is_checked_against_the_server() {
    let cs = fixtures::shared_server().await;
    let (a_fw, b_fw) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("stale"));
    let a = DistributedAtomicLong::new(&a_fw, &path).unwrap();
    let b = DistributedAtomicLong::new(&b_fw, &path).unwrap();
    assert!(a.increment().await.unwrap().succeeded, "a writes 1 and remembers it");
    assert!(b.increment().await.unwrap().succeeded, "b writes 2: a's value is stale");
    // a compare against the server's value succeeds although a remembers another one (on an
    // ensemble a's server may not have b's write yet: ZooKeeper orders reads per session, so a
    // syncs first, as an application that needs another session's write does)
    a_fw.sync(&path).await.unwrap();
    let hit = a.compare_and_set(2, 10).await.unwrap();
    assert!(hit.succeeded && hit.pre_value == 2 && hit.post_value == 10, "{hit:?}");
    // a miss reports the server's value, not the remembered one
    assert_eq!(b.add(5).await.unwrap().post_value, 15);
    a_fw.sync(&path).await.unwrap();
    let miss = a.compare_and_set(99, 20).await.unwrap();
    assert!(!miss.succeeded && miss.pre_value == 15 && miss.post_value == 15, "{miss:?}");
    // an increment from a stale value: refused, then written from the value that won
    assert_eq!(b.add(5).await.unwrap().post_value, 20);
    let r = a.increment().await.unwrap();
    assert!(r.succeeded && r.pre_value == 20 && r.post_value == 21, "{r:?}");
    assert_eq!(b.get().await.unwrap(), 21);
    a.close().await.unwrap();
    b.close().await.unwrap();
}
