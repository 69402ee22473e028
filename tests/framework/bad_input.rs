//! A table of bad inputs across the public API: each gets a typed error or a documented
//! behaviour — never a panic, and nothing is left behind.

use std::time::Duration;

use zk_recipes::inspect::inspect;
use zk_recipes::CreateMode;

use zk_recipes::{
    AtomicOptions, DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicValue, DistributedBarrier,
    DistributedDoubleBarrier, Error, Framework, HeldLock, InterProcessMultiLock, InterProcessMutex,
    InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, LeaderLatch, SharedCount,
};
use zk_recipes_testing::fixtures;

fn path_error<T: std::fmt::Debug>(r: zk_recipes::Result<T>) -> bool {
    matches!(r, Err(Error::InvalidPath { .. }))
}

fn argument_error<T: std::fmt::Debug>(r: zk_recipes::Result<T>) -> bool {
    matches!(r, Err(Error::InvalidArgument { .. }))
}

/// An `InvalidArgument` that names the parameter `name` (what a caller matches on).
fn argument_named<T: std::fmt::Debug>(name: &str, r: zk_recipes::Result<T>) -> bool {
    matches!(r, Err(Error::InvalidArgument { argument, .. }) if argument == name)
}

#[tokio::test]
async fn thirty_plus_bad_inputs_get_typed_errors() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("bad"));
    let mut cases: Vec<(&str, bool)> = Vec::new();

    // framework configuration
    cases.push(("empty connect string", argument_error(Framework::builder().connect_string("").connect().await)));
    cases.push((
        "zero session timeout",
        argument_error(Framework::builder().connect_string(&cs).session_timeout(Duration::ZERO).connect().await),
    ));
    cases.push((
        "overflowing session timeout",
        argument_error(Framework::builder().connect_string(&cs).session_timeout(Duration::MAX).connect().await),
    ));
    cases.push((
        "zero connection timeout",
        argument_error(Framework::builder().connect_string(&cs).connection_timeout(Duration::ZERO).connect().await),
    ));
    cases.push((
        "namespace with //",
        path_error(Framework::builder().connect_string(&cs).namespace("a//b").connect().await),
    ));
    cases.push((
        "empty default ACL",
        argument_error(Framework::builder().connect_string(&cs).default_acl(vec![]).connect().await),
    ));

    // paths
    for (name, bad) in [
        ("relative path", "locks/a"),
        ("trailing slash", "/locks/a/"),
        ("NUL byte", "/locks/\0a"),
        ("empty segment", "/locks//a"),
        ("dot segment", "/locks/./a"),
        ("dot-dot segment", "/locks/../a"),
        ("the root", "/"),
        ("empty path", ""),
    ] {
        cases.push((name, path_error(InterProcessMutex::new(&fw, bad))));
    }
    cases.push(("rwlock bad path", path_error(InterProcessReadWriteLock::new(&fw, "x"))));
    cases.push(("semaphore bad path", path_error(InterProcessSemaphoreV2::new(&fw, "/a/", 1))));
    cases.push(("barrier bad path", path_error(DistributedBarrier::new(&fw, "rel"))));
    cases.push(("double barrier bad path", path_error(DistributedDoubleBarrier::new(&fw, "/a//b", 2))));
    cases.push(("shared count bad path", path_error(SharedCount::new(&fw, "nope", 0))));
    cases.push(("atomic bad path", path_error(DistributedAtomicLong::new(&fw, "/x/"))));
    cases.push(("latch bad path", path_error(LeaderLatch::new(&fw, "", "id"))));
    cases.push(("inspect bad path", path_error(inspect(&fw, "no/slash").await)));
    cases.push(("get_data bad path", path_error(fw.get_data("/trailing/").await)));
    cases.push((
        "protected name with /",
        argument_error(fw.create_protected(&base, "a/b", b"", CreateMode::EphemeralSequential).await),
    ));

    // counts
    cases.push(("zero leases", argument_named("max_leases", InterProcessSemaphoreV2::new(&fw, &base, 0))));
    cases.push(("overflowing leases", argument_error(InterProcessSemaphoreV2::new(&fw, &base, usize::MAX))));
    let sem = InterProcessSemaphoreV2::new(&fw, &format!("{base}/sem"), 2).unwrap();
    cases.push(("acquire_many(0)", argument_named("n", sem.acquire_many(0).await)));
    cases.push(("acquire_many above max", argument_error(sem.acquire_many(3).await)));
    cases.push(("zero barrier members", argument_named("member_qty", DistributedDoubleBarrier::new(&fw, &base, 0))));
    cases.push(("empty multi-lock", argument_named("locks", InterProcessMultiLock::new(Vec::new()))));
    cases.push(("multi-lock with a bad path", path_error(InterProcessMultiLock::from_paths(&fw, ["/ok", "bad"]))));
    cases.push((
        "zero optimistic tries",
        argument_named(
            "optimistic_tries",
            DistributedAtomicValue::new(&fw, &base, AtomicOptions { optimistic_tries: 0, ..Default::default() }),
        ),
    ));
    let value = DistributedAtomicValue::new(&fw, &format!("{base}/value"), AtomicOptions::default()).unwrap();
    cases.push(("empty atomic value", argument_error(value.force_set(b"").await)));

    // corrupt data written by a foreign client
    let corrupt = format!("{base}/corrupt");
    fw.create(&corrupt, b"\x01\x02\x03", CreateMode::Persistent).await.unwrap();
    let long = DistributedAtomicLong::new(&fw, &corrupt).unwrap();
    cases.push(("corrupt long", matches!(long.increment().await, Err(Error::CorruptData { .. }))));
    cases.push((
        "corrupt int",
        matches!(DistributedAtomicInteger::new(&fw, &corrupt).unwrap().get().await, Err(Error::CorruptData { .. })),
    ));
    cases.push((
        "corrupt shared count",
        matches!(SharedCount::new(&fw, &corrupt, 0).unwrap().get().await, Err(Error::CorruptData { .. })),
    ));
    cases.push(("corrupt bytes are left alone", fw.get_data(&corrupt).await.unwrap().0 == b"\x01\x02\x03"));

    // state errors
    let latch = LeaderLatch::new(&fw, &format!("{base}/latch"), "me").unwrap();
    latch.start().await.unwrap();
    cases.push(("latch started twice", matches!(latch.start().await, Err(Error::InvalidState(_)))));
    latch.close().await.unwrap();
    cases.push(("latch closed twice is fine", latch.close().await.is_ok()));
    let lease =
        HeldLock::from(InterProcessSemaphoreMutex::new(&fw, &format!("{base}/rw")).unwrap().acquire().await.unwrap());
    cases.push(("re-entering a semaphore lease", matches!(lease.reenter(), Err(Error::Unsupported(_)))));
    lease.release().await.unwrap();
    let closed = fixtures::framework(&cs).await;
    let m = InterProcessMutex::new(&closed, &format!("{base}/closed")).unwrap();
    closed.close();
    closed.close();
    cases.push(("acquire on a closed framework", matches!(m.acquire().await, Err(Error::Closed))));
    cases.push(("operation on a closed framework", matches!(closed.get_data("/").await, Err(Error::Closed))));

    let failed: Vec<&str> = cases.iter().filter(|(_, ok)| !ok).map(|(name, _)| *name).collect();
    // every case of the table ran once, under its own name (a case lost in an edit shows here)
    let mut names: Vec<&str> = cases.iter().map(|(name, _)| *name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!((names.len(), cases.len()), (42, 42), "the table's cases, each named once");
    assert!(failed.is_empty(), "bad inputs without their typed error: {failed:?}");

    // nothing left behind: only the nodes of the cases that were meant to create some (the
    // corrupt value; the latch's and the semaphore mutex's parents, empty containers the server may have
    // removed already), no ephemeral, no pending delete
    fixtures::settle(&[&fw]).await;
    assert_eq!(fixtures::ephemerals(&fw, &base).await.unwrap(), Vec::<String>::new(), "ephemerals left behind");
    let left = fw.children(&base).await.unwrap();
    assert!(left.contains(&"corrupt".to_string()), "{left:?}");
    for node in left.iter().filter(|n| *n != "corrupt") {
        assert!(["latch", "rw"].contains(&node.as_str()), "left under {base}: {node}");
        let below = fw.children(&format!("{base}/{node}")).await.unwrap_or_default();
        // the semaphore mutex's parents (`rw/leases`, `rw/locks`): empty containers too
        for dir in &below {
            assert!(node == "rw" && ["leases", "locks"].contains(&dir.as_str()), "left under {base}/{node}: {dir}");
            let inside = fw.children(&format!("{base}/{node}/{dir}")).await.unwrap_or_default();
            assert!(inside.is_empty(), "left under {base}/{node}/{dir}: {inside:?}");
        }
    }
}

#[tokio::test]
async fn documented_behaviours_for_odd_but_legal_input() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("odd"));
    // a foreign child that sorts after the sequence numbers does not block the mutex
    let lock = format!("{base}/foreign");
    fw.create(&format!("{lock}/zzz-not-a-lock"), b"", CreateMode::Persistent).await.unwrap();
    let g = InterProcessMutex::new(&fw, &lock).unwrap().acquire_timeout(Duration::from_secs(5)).await;
    g.expect("a foreign child sorting last does not block").release().await.unwrap();
    // max leases is a convention: a participant with a larger max gets a lease (as Curator)
    let a = InterProcessSemaphoreV2::new(&fw, &format!("{base}/sem"), 1).unwrap();
    let b = InterProcessSemaphoreV2::new(&fw, &format!("{base}/sem"), 2).unwrap();
    let held = a.acquire().await.unwrap();
    assert!(a.acquire_timeout(Duration::from_millis(200)).await.is_err_and(|e| e.is_timeout()));
    let extra = b.acquire_timeout(Duration::from_secs(5)).await;
    assert!(extra.is_ok(), "max leases is not checked on the server: documented");
    drop(extra);
    held.release().await.unwrap();
    // a zero timeout is a try: no waiting, no node left
    let m = InterProcessMutex::new(&fw, &format!("{base}/zero")).unwrap();
    let g = m.acquire().await.unwrap();
    let other = InterProcessMutex::new(&fixtures::framework(&cs).await, &format!("{base}/zero")).unwrap();
    assert!(other.acquire_timeout(Duration::ZERO).await.is_err_and(|e| e.is_timeout()));
    g.release().await.unwrap();
}
