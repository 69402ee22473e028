//! SharedCount and SharedValue against a real ZooKeeper server: versioned compare-and-set
//! under contention, the change stream across session expiry and server restarts, Curator's
//! encoding and corrupt data.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use futures_util::{Stream, StreamExt};
use zk_recipes::counter::VersionedValue;
use zk_recipes::{Error, Framework, Result, SharedCount, SharedValue};
use zk_recipes_testing::fixtures::{self, framework};
use zk_recipes_testing::{expire_session, ProxyMode, TcpProxy, TestingServer};

const WAIT: Duration = Duration::from_secs(20);

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

/// How the sessions of [`sixteen_sessions_increment`] increment.
#[derive(Debug, Clone, Copy)]
enum Increment {
    /// `get` then `try_set`, two round trips per attempt.
    GetThenTrySet,
    /// `compare_and_set` from the last value known (written or returned with a refusal).
    CompareAndSet,
}

/// 16 sessions increment one count 10 times each; checks that no increment is lost and that
/// every write took one version. Returns the count's handle and final value.
async fn sixteen_sessions_increment(how: Increment) -> (SharedCount, VersionedValue<i32>) {
    const SESSIONS: usize = 16;
    const INCREMENTS: usize = 10;
    let cs = fixtures::shared_server().await;
    let path = format!("/{}/count", fixtures::unique("shared"));
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
            let mut known = count.get().await.unwrap();
            let mut done = 0;
            while done < INCREMENTS {
                let written = match how {
                    Increment::GetThenTrySet => {
                        let current = count.get().await.unwrap();
                        count.try_set(&current, current.value + 1).await.unwrap()
                    }
                    Increment::CompareAndSet => match count.compare_and_set(&known, known.value + 1).await.unwrap() {
                        Ok(written) => {
                            assert_eq!(written.value, known.value + 1);
                            assert!(written.version > known.version, "{written:?} after {known:?}");
                            known = written;
                            true
                        }
                        Err(current) => {
                            // refused: the node has moved on from the version we knew
                            assert!(current.version > known.version, "{current:?} after {known:?}");
                            assert!(current.value > known.value, "{current:?} after {known:?}");
                            known = current;
                            false
                        }
                    },
                };
                if written {
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
        "{how:?}: {SESSIONS} sessions x {INCREMENTS} increments: {successes} successful writes, {conflicts} conflicts, {:?}",
        started.elapsed()
    );
    let last = count.get().await.unwrap();
    assert_eq!(last.value as usize, successes, "final value == successful writes");
    assert_eq!(successes, SESSIONS * INCREMENTS);
    assert_eq!(last.version as usize, successes, "one version per successful write");
    // Curator's encoding: 4 bytes, big-endian
    let (raw, stat) = setup.get_data(&path).await.unwrap();
    assert_eq!(raw, (successes as i32).to_be_bytes());
    assert_eq!(stat.ephemeral_owner, 0, "persistent");
    (count, last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_set_loops_from_16_sessions_lose_no_increment() {
    let (count, last) = sixteen_sessions_increment(Increment::GetThenTrySet).await;
    // a stale version is refused
    let stale = VersionedValue { version: last.version - 1, value: last.value };
    assert!(!count.try_set(&stale, 0).await.unwrap());
    assert_eq!(count.get().await.unwrap(), last);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_and_set_loops_from_16_sessions_lose_no_increment() {
    let (count, last) = sixteen_sessions_increment(Increment::CompareAndSet).await;
    // a stale version is refused, and the refusal carries the value on the server
    let stale = VersionedValue { version: last.version - 1, value: last.value };
    assert_eq!(count.compare_and_set(&stale, 0).await.unwrap(), Err(last.clone()));
    assert_eq!(count.get().await.unwrap(), last);
}

#[tokio::test]
async fn compare_and_set_returns_what_a_fresh_get_returns() {
    let cs = fixtures::shared_server().await;
    let (a_fw, b_fw) = (framework(&cs).await, framework(&cs).await);
    let path = format!("/{}/count", fixtures::unique("cas"));
    let a = SharedCount::new(&a_fw, &path, 5).unwrap();
    let b = SharedCount::new(&b_fw, &path, 0).unwrap();
    a.start().await.unwrap();
    // (another client's write: on an ensemble b's server may not have it yet without a sync)
    b_fw.sync(&path).await.unwrap();
    let first = b.get().await.unwrap();
    assert_eq!(first, VersionedValue { version: 0, value: 5 });

    // written: the result is what a fresh get returns (the version from the write's reply)
    let mut known = first.clone();
    for n in 1..=3 {
        known = a.compare_and_set(&known, 5 + n).await.unwrap().expect("nobody else writes");
        b_fw.sync(&path).await.unwrap();
        assert_eq!(known, b.get().await.unwrap(), "after write {n}");
        assert_eq!(known, a.get().await.unwrap(), "after write {n}");
    }
    assert_eq!(known, VersionedValue { version: 3, value: 8 });

    // refused: b's value is 3 versions behind; the refusal carries what a fresh get returns
    let current = b.compare_and_set(&first, 100).await.unwrap().expect_err("b's value is stale");
    assert_eq!(current, VersionedValue { version: 3, value: 8 });
    assert_eq!(current, b.get().await.unwrap());
    // and it is the next attempt's starting point
    let written = b.compare_and_set(&current, current.value + 1).await.unwrap().expect("current is current");
    assert_eq!(written, VersionedValue { version: 4, value: 9 });
    a_fw.sync(&path).await.unwrap();
    assert_eq!(written, a.get().await.unwrap());
    // try_set agrees: refused from the stale value, written from the current one
    assert!(!a.try_set(&current, 0).await.unwrap());
    assert!(a.try_set(&written, 10).await.unwrap());
    assert_eq!(a.get().await.unwrap(), VersionedValue { version: 5, value: 10 });

    // a refusal that finds bytes other than a count: a typed error
    let raw = a_fw.client().unwrap();
    raw.set_data(&path, &[1, 2, 3], None).await.unwrap();
    assert!(matches!(b.compare_and_set(&written, 11).await, Err(Error::CorruptData { .. })));
    assert_eq!(a_fw.get_data(&path).await.unwrap().0, [1, 2, 3], "nothing written");

    // a missing node: no current value to give (try_set says false)
    a_fw.delete(&path).await.unwrap();
    assert!(matches!(b.compare_and_set(&written, 12).await, Err(Error::ZooKeeper(ZooKeeperError::NoNode))));
    assert!(!b.try_set(&written, 12).await.unwrap());
    assert!(matches!(a.get().await, Err(Error::ZooKeeper(ZooKeeperError::NoNode))), "not created");
}

#[tokio::test]
async fn shared_value_compare_and_set_bytes() {
    let cs = fixtures::shared_server().await;
    let (a_fw, b_fw) = (framework(&cs).await, framework(&cs).await);
    let path = format!("/{}/config", fixtures::unique("value-cas"));
    let a = SharedValue::new(&a_fw, &path, b"seed".to_vec()).unwrap();
    let b = SharedValue::new(&b_fw, &path, Vec::new()).unwrap();
    let none = VersionedValue { version: 0, value: Vec::new() };
    assert!(
        matches!(a.compare_and_set(&none, b"x").await, Err(Error::ZooKeeper(ZooKeeperError::NoNode))),
        "not started"
    );
    a.start().await.unwrap();
    // (another client's writes: on an ensemble b's server may not have them yet without a sync)
    b_fw.sync(&path).await.unwrap();
    let first = b.get().await.unwrap();
    let written = a.compare_and_set(&first, b"from a").await.unwrap().expect("first write");
    assert_eq!(written, VersionedValue { version: 1, value: b"from a".to_vec() });
    b_fw.sync(&path).await.unwrap();
    assert_eq!(written, b.get().await.unwrap());
    let current = b.compare_and_set(&first, b"from b").await.unwrap().expect_err("b's read is stale");
    assert_eq!(current, written, "the refusal carries a's write");
    assert_eq!(current, b.get().await.unwrap());
    // empty bytes are a value too, and come back as such with a refusal
    let empty = b.compare_and_set(&current, b"").await.unwrap().expect("b is current now");
    assert_eq!(empty, VersionedValue { version: 2, value: Vec::new() });
    assert_eq!(a.compare_and_set(&written, b"late").await.unwrap(), Err(empty.clone()));
    assert_eq!(a.get().await.unwrap(), empty);
}

/// A framework whose connection goes through `proxy`.
async fn framework_via(proxy: &TcpProxy) -> Framework {
    framework(proxy.connect_string()).await
}

#[tokio::test]
async fn compare_and_set_with_a_lost_reply_never_reports_an_applied_write_as_refused() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = framework_via(&proxy).await;
    let direct = framework(&cs).await;
    let path = format!("/{}", fixtures::unique("cas-lost-reply"));
    let count = SharedCount::new(&fw, &path, 0).unwrap();
    let reader = SharedCount::new(&direct, &path, 0).unwrap();
    count.start().await.unwrap();
    let mut known = count.get().await.unwrap();
    for round in 1..=3 {
        // the write reaches the server and is applied; its reply (and the read's) never come back
        proxy.set_mode(ProxyMode::DropReplies);
        let pending = tokio::spawn({
            let (count, known) = (count.clone(), known.clone());
            async move { count.compare_and_set(&known, known.value + 1).await }
        });
        fixtures::eventually(WAIT, "the write never reached the server", || async {
            reader.get().await.unwrap().value >= round
        })
        .await;
        // the client reconnects and sends the write again: refused, as the first one applied
        proxy.set_mode(ProxyMode::Pass);
        proxy.cut();
        let outcome = tokio::time::timeout(WAIT, pending).await.expect("compare_and_set finished").unwrap();
        let after = reader.get().await.unwrap();
        println!("round {round}: lost reply: compare_and_set -> {outcome:?}, node now {after:?}");
        assert_eq!(after, VersionedValue { version: known.version + 1, value: round }, "written exactly once");
        match outcome {
            Ok(Ok(written)) => assert_eq!(written, after),
            // only we write, so the node moved on to our bytes: the honest answer
            Err(Error::OutcomeUnknown { .. }) => {}
            other => panic!("round {round}: an applied write reported as {other:?}"),
        }
        known = after;
    }
}

#[tokio::test]
async fn compare_and_set_with_a_lost_request_returns_the_other_write() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = framework_via(&proxy).await;
    let direct = framework(&cs).await;
    let path = format!("/{}", fixtures::unique("cas-lost-request"));
    let count = SharedCount::new(&fw, &path, 0).unwrap();
    let other = SharedCount::new(&direct, &path, 0).unwrap();
    count.start().await.unwrap();
    let known = count.get().await.unwrap();
    // our write is lost on the way; another session writes meanwhile
    proxy.set_mode(ProxyMode::Blackhole);
    let pending = tokio::spawn({
        let (count, known) = (count.clone(), known.clone());
        async move { count.compare_and_set(&known, 1).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let theirs = other.compare_and_set(&known, 7).await.unwrap().expect("the other session writes first");
    // the client reconnects and sends the write again: refused, and the node moved on to
    // bytes that are not ours, so it was not ours — the refusal carries the other write
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    let outcome = tokio::time::timeout(WAIT, pending).await.expect("compare_and_set finished").unwrap();
    println!("lost request: compare_and_set -> {outcome:?}, other wrote {theirs:?}");
    assert_eq!(outcome.unwrap(), Err(theirs.clone()));
    assert_eq!(other.get().await.unwrap(), theirs, "our write was not applied");
}

#[tokio::test]
async fn changes_see_updates_and_survive_session_expiry() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("changes"));
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
    fixtures::eventually(WAIT, "session never lost", || async { fw.status().losses != losses }).await;
    server.restart().await.unwrap();
    fw.wait_connected(WAIT).await.unwrap();
    let other = framework(cs).await;
    SharedCount::new(&other, "/restart/count", 0).unwrap().set(3).await.unwrap();
    assert_eq!(next_value(&mut changes).await.unwrap().value, 3);
    assert_quiet(&mut changes, "after the restarts").await;
}

#[tokio::test]
async fn corrupt_bytes_are_a_typed_error() {
    let cs = fixtures::shared_server().await;
    let fw = framework(&cs).await;
    let path = format!("/{}", fixtures::unique("corrupt"));
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
    let cs = fixtures::shared_server().await;
    let a = framework(&cs).await;
    let b = framework(&cs).await;
    let path = format!("/{}/config", fixtures::unique("value"));
    let va = SharedValue::new(&a, &path, b"seed".to_vec()).unwrap();
    let vb = SharedValue::new(&b, &path, b"other seed".to_vec()).unwrap();
    assert!(matches!(va.get().await, Err(Error::ZooKeeper(ZooKeeperError::NoNode))), "not started");
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
