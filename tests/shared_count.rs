//! SharedCount and SharedValue against a real ZooKeeper server: versioned compare-and-set
//! under contention, the change stream across session expiry and server restarts, Curator's
//! encoding and corrupt data.

mod common;

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use zk_recipes::testing::{expire_session, TestingServer};
use zk_recipes::zk::Error as ZkError;
use zk_recipes::{Error, Framework, Result, RetryNTimes, SharedCount, SharedValue, VersionedValue};

const WAIT: Duration = Duration::from_secs(20);

async fn framework(cs: &str) -> Framework {
    Framework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(4))
        .connection_timeout(Duration::from_secs(5))
        .retry_policy(RetryNTimes::new(20, Duration::from_millis(100)))
        .connect()
        .await
        .expect("connect")
}

type Changes<T> = Pin<Box<dyn Stream<Item = Result<VersionedValue<T>>> + Send>>;

/// The next item of a change stream, skipping framework errors (a server outage may yield
/// some); corrupt data is returned.
async fn next_value(changes: &mut Changes<i32>) -> Result<VersionedValue<i32>> {
    tokio::time::timeout(WAIT, async {
        loop {
            match changes.next().await.expect("the stream goes on") {
                Err(Error::RetriesExhausted { .. }) => continue,
                other => return other,
            }
        }
    })
    .await
    .expect("a change in time")
}

/// Asserts that the stream yields nothing for a while.
async fn assert_quiet(changes: &mut Changes<i32>, what: &str) {
    if let Ok(item) = tokio::time::timeout(Duration::from_millis(300), changes.next()).await {
        panic!("{what}: unexpected item {item:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_set_loops_from_16_sessions_lose_no_increment() {
    const SESSIONS: usize = 16;
    const INCREMENTS: usize = 10;
    let cs = common::shared_server().await;
    let path = format!("/{}/count", common::unique("shared"));
    let setup = framework(&cs).await;
    let count = SharedCount::new(&setup, &path, 0).unwrap();
    count.start().await.unwrap();
    let successes = Arc::new(AtomicUsize::new(0));
    let conflicts = Arc::new(AtomicUsize::new(0));
    let started = tokio::time::Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..SESSIONS {
        let (cs, path, successes, conflicts) = (cs.clone(), path.clone(), successes.clone(), conflicts.clone());
        tasks.push(tokio::spawn(async move {
            let fw = framework(&cs).await;
            let count = SharedCount::new(&fw, &path, 0).unwrap();
            count.start().await.unwrap(); // an existing count is kept
            let mut done = 0;
            while done < INCREMENTS {
                let current = count.get().await.unwrap();
                if count.try_set(&current, current.value + 1).await.unwrap() {
                    successes.fetch_add(1, Ordering::SeqCst);
                    done += 1;
                } else {
                    conflicts.fetch_add(1, Ordering::SeqCst);
                }
            }
            fw.close();
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(120), t).await.expect("increments finished").unwrap();
    }
    let successes = successes.load(Ordering::SeqCst);
    let conflicts = conflicts.load(Ordering::SeqCst);
    println!(
        "{SESSIONS} sessions x {INCREMENTS} increments: {successes} successful try_sets, {conflicts} conflicts, {:?}",
        started.elapsed()
    );
    let last = count.get().await.unwrap();
    assert_eq!(last.value as usize, successes, "final value == successful try_sets");
    assert_eq!(successes, SESSIONS * INCREMENTS);
    assert_eq!(last.version as usize, successes, "one version per successful write");
    // Curator's encoding: 4 bytes, big-endian
    let (raw, stat) = setup.get_data(&path).await.unwrap();
    assert_eq!(raw, (successes as i32).to_be_bytes());
    assert_eq!(stat.ephemeral_owner, 0, "persistent");
    // a stale version is refused
    let stale = VersionedValue { version: last.version - 1, value: last.value };
    assert!(!count.try_set(&stale, 0).await.unwrap());
    assert_eq!(count.get().await.unwrap(), last);
}

#[tokio::test]
async fn changes_see_updates_and_survive_session_expiry() {
    let cs = common::shared_server().await;
    let path = format!("/{}", common::unique("changes"));
    let watcher_fw = framework(&cs).await;
    let writer_fw = framework(&cs).await;
    let watched = SharedCount::new(&watcher_fw, &path, 7).unwrap();
    let writer = SharedCount::new(&writer_fw, &path, 0).unwrap();
    let mut changes: Changes<i32> = Box::pin(watched.changes());
    // nothing while the node is missing; its creation is the first item
    assert_quiet(&mut changes, "missing node").await;
    watched.start().await.unwrap();
    assert_eq!(next_value(&mut changes).await.unwrap(), VersionedValue { version: 0, value: 7 });
    writer.start().await.unwrap(); // keeps 7: no change
    assert_quiet(&mut changes, "start on an existing node").await;

    for n in 1..=5 {
        writer.set(n * 10).await.unwrap();
        assert_eq!(next_value(&mut changes).await.unwrap().value, n * 10);
    }
    let current = writer.get().await.unwrap();
    assert!(writer.try_set(&current, 99).await.unwrap());
    assert_eq!(next_value(&mut changes).await.unwrap(), VersionedValue { version: current.version + 1, value: 99 });
    // the same value written again is a new version: a change
    writer.set(99).await.unwrap();
    assert_eq!(next_value(&mut changes).await.unwrap(), VersionedValue { version: current.version + 2, value: 99 });

    // a new session for the watcher: the stream re-arms and yields only real changes
    let before = watcher_fw.status().session_id;
    expire_session(&watcher_fw).await.unwrap();
    watcher_fw.wait_connected(WAIT).await.unwrap();
    assert_ne!(watcher_fw.status().session_id, before);
    assert_quiet(&mut changes, "a session change without a value change").await;
    writer.set(-5).await.unwrap();
    assert_eq!(next_value(&mut changes).await.unwrap().value, -5);

    // deleted and created again: nothing for the deletion, the new node for the creation
    writer_fw.delete(&path).await.unwrap();
    assert_quiet(&mut changes, "deletion").await;
    writer.set(3).await.unwrap(); // creates the node again
    assert_eq!(next_value(&mut changes).await.unwrap(), VersionedValue { version: 0, value: 3 });

    // the stream ends when the framework closes
    watcher_fw.close();
    let end = tokio::time::timeout(WAIT, changes.next()).await.expect("the stream ends");
    assert!(end.is_none(), "no item after close: {end:?}");
}

#[tokio::test]
async fn changes_survive_a_server_restart() {
    let server = TestingServer::start().await.unwrap();
    let cs = server.connect_string();
    let fw = framework(cs).await;
    let count = SharedCount::new(&fw, "/restart/count", 1).unwrap();
    count.start().await.unwrap();
    let mut changes: Changes<i32> = Box::pin(count.changes());
    assert_eq!(next_value(&mut changes).await.unwrap().value, 1);

    // short outage: same session
    server.stop().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.restart().await.unwrap();
    fw.wait_connected(WAIT).await.unwrap();
    count.set(2).await.unwrap();
    assert_eq!(next_value(&mut changes).await.unwrap().value, 2);

    // long outage: the session is lost and a new one is built
    let losses = fw.status().losses;
    server.stop().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while fw.status().losses == losses {
        assert!(tokio::time::Instant::now() < deadline, "session never lost");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.restart().await.unwrap();
    fw.wait_connected(WAIT).await.unwrap();
    let other = framework(cs).await;
    SharedCount::new(&other, "/restart/count", 0).unwrap().set(3).await.unwrap();
    assert_eq!(next_value(&mut changes).await.unwrap().value, 3);
    assert_quiet(&mut changes, "after the restarts").await;
}

#[tokio::test]
async fn corrupt_bytes_are_a_typed_error() {
    let cs = common::shared_server().await;
    let fw = framework(&cs).await;
    let path = format!("/{}", common::unique("corrupt"));
    let count = SharedCount::new(&fw, &path, 0).unwrap();
    count.start().await.unwrap();
    let mut changes: Changes<i32> = Box::pin(count.changes());
    assert_eq!(next_value(&mut changes).await.unwrap().value, 0);
    // a raw client writes 3 bytes
    let raw = fw.client().unwrap();
    raw.set_data(&path, &[1, 2, 3], None).await.unwrap();
    assert!(matches!(count.get().await, Err(Error::CorruptData { .. })), "get on 3 bytes");
    assert!(matches!(next_value(&mut changes).await, Err(Error::CorruptData { .. })), "stream on 3 bytes");
    raw.set_data(&path, &[0; 8], None).await.unwrap();
    assert!(matches!(count.get().await, Err(Error::CorruptData { .. })), "get on 8 bytes");
    assert!(matches!(next_value(&mut changes).await, Err(Error::CorruptData { .. })));
    // repaired: the stream goes on
    count.set(5).await.unwrap();
    assert_eq!(next_value(&mut changes).await.unwrap().value, 5);
    assert_eq!(count.get().await.unwrap().value, 5);
}

#[tokio::test]
async fn shared_value_bytes_seed_and_compare_and_set() {
    let cs = common::shared_server().await;
    let a = framework(&cs).await;
    let b = framework(&cs).await;
    let path = format!("/{}/config", common::unique("value"));
    let va = SharedValue::new(&a, &path, b"seed".to_vec()).unwrap();
    let vb = SharedValue::new(&b, &path, b"other seed".to_vec()).unwrap();
    assert!(matches!(va.get().await, Err(Error::ZooKeeper(ZkError::NoNode))), "not started");
    va.start().await.unwrap();
    vb.start().await.unwrap(); // keeps the first seed
    let first = vb.get().await.unwrap();
    assert_eq!(first, VersionedValue { version: 0, value: b"seed".to_vec() });
    assert!(va.try_set(&first, b"from a").await.unwrap());
    assert!(!vb.try_set(&first, b"from b").await.unwrap(), "b's read is stale");
    let now = vb.get().await.unwrap();
    assert_eq!(now.value, b"from a");
    assert!(vb.try_set(&now, b"").await.unwrap(), "empty bytes are a value too");
    assert_eq!(va.get().await.unwrap(), VersionedValue { version: 2, value: Vec::new() });
    assert!(matches!(SharedValue::new(&a, "/", Vec::new()), Err(Error::InvalidPath { .. })));
    assert!(matches!(SharedCount::new(&a, "no-slash", 0), Err(Error::InvalidPath { .. })));
}

#[tokio::test]
async fn try_set_with_a_lost_reply_never_reports_an_applied_write_as_refused() {
    let server = TestingServer::start().await.unwrap();
    let fw = framework(server.connect_string()).await;
    let count = SharedCount::new(&fw, "/lost-reply", 0).unwrap();
    count.start().await.unwrap();
    let before = count.get().await.unwrap();
    // freeze the server with the write on its way: the client times out, reconnects when the
    // server thaws, and sends the write again with the same version check
    server.pause().unwrap();
    let writing = {
        let count = count.clone();
        let before = before.clone();
        tokio::spawn(async move { count.try_set(&before, 41).await })
    };
    tokio::time::sleep(Duration::from_secs(4)).await;
    server.resume().unwrap();
    let outcome = tokio::time::timeout(WAIT, writing).await.expect("try_set finished").unwrap();
    fw.wait_connected(WAIT).await.unwrap();
    let after = count.get().await.unwrap();
    println!("lost reply: try_set -> {outcome:?}, node now {after:?}");
    // the only writer is us: the node holds our value, written exactly once
    assert_eq!(after, VersionedValue { version: before.version + 1, value: 41 });
    match outcome {
        Ok(true) | Err(Error::OutcomeUnknown { .. }) => {}
        other => panic!("an applied write reported as {other:?}"),
    }
}
