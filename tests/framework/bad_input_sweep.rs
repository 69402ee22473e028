//! The arguments a careless caller passes, across the public API: counts at their maximum,
//! empty and malformed names, ids, paths and templates, bad connect strings, builder settings
//! at their extremes. Each gets its typed error (or a documented behaviour) in time — never a
//! panic, never a hang — and nothing is left behind.

use std::future::Future;
use std::time::Duration;

use futures_util::future::BoxFuture;
use zk_recipes::cache::Cache;
use zk_recipes::modeled::{ModeledFramework, PathTemplate};
use zk_recipes::queue::QueueBuilder;
use zk_recipes::{
    DistributedCountDownLatch, DistributedDoubleBarrier, DistributedIdQueue, Error, Framework, InterProcessMultiLock,
    InterProcessSemaphoreV2, LeaderLatch, LeaderSelector, ShedLock, SimpleDistributedQueue,
};
use zk_recipes_testing::fixtures;

/// What a case must come to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// `Error::InvalidArgument`.
    Argument,
    /// `Error::InvalidPath`.
    Path,
    /// No session within the connection timeout (`Error::ConnectTimeout`), or the connect
    /// string refused (`Error::InvalidArgument`): either way a typed error, in time.
    Unreachable,
    /// `Ok`: legal, however odd (the case's name says what it means).
    Fine,
    /// `Error::Timeout`: legal, and cut by its deadline.
    Timeout,
}

type Case = (&'static str, Want, BoxFuture<'static, zk_recipes::Result<()>>);

fn case<F>(name: &'static str, want: Want, call: F) -> Case
where
    F: Future<Output = zk_recipes::Result<()>> + Send + 'static,
{
    (name, want, Box::pin(call))
}

/// How long a case may take: a connect attempt's timeout and a few round trips.
const BOUND: Duration = Duration::from_secs(10);
const CONNECT: Duration = Duration::from_millis(700);

/// A connect to `hosts` with a short connection timeout, closed again when it connects.
async fn connect(hosts: String) -> zk_recipes::Result<()> {
    let fw = Framework::builder().connect_string(hosts).connection_timeout(CONNECT).connect().await?;
    fw.shutdown(Duration::from_secs(5)).await
}

/// A connect with `configure` applied to a builder for the shared server.
async fn build(
    cs: String,
    configure: impl FnOnce(zk_recipes::FrameworkBuilder) -> zk_recipes::FrameworkBuilder,
) -> zk_recipes::Result<()> {
    let fw =
        configure(Framework::builder().connect_string(cs).connection_timeout(Duration::from_secs(5))).connect().await?;
    fw.shutdown(Duration::from_secs(5)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_careless_callers_arguments_get_typed_errors_in_time() {
    use Want::{Argument, Fine, Path, Timeout, Unreachable};
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("careless"));
    let at = |rest: &str| format!("{base}/{rest}");
    let port = fixtures::closed_port();
    let mut cases: Vec<Case> = Vec::new();

    // connect strings
    for (name, hosts) in [
        ("connect: no port", "127.0.0.1".to_string()),
        ("connect: port 0", "127.0.0.1:0".to_string()),
        ("connect: port 99999", "127.0.0.1:99999".to_string()),
        ("connect: negative port", "127.0.0.1:-1".to_string()),
        ("connect: garbage", "%%% not a host %%%".to_string()),
        ("connect: only commas", ",,,".to_string()),
        ("connect: empty hosts between commas", format!("127.0.0.1:{port},,,127.0.0.1:{port}")),
        ("connect: IPv6 in brackets, nothing there", format!("[::1]:{port}")),
        ("connect: IPv6 bracket unclosed", "[::1:2181".to_string()),
        ("connect: IPv6 without brackets", "::1:2181".to_string()),
        ("connect: a chroot only", "/chroot".to_string()),
        ("connect: a bad chroot", format!("127.0.0.1:{port}/a//b")),
        ("connect: a scheme only", "tcp://".to_string()),
        ("connect: many hosts, none there", vec![format!("127.0.0.1:{port}"); 200].join(",")),
        ("connect: a NUL byte", "127.0.0.1\0:2181".to_string()),
        ("connect: a very long host", format!("{}:2181", "h".repeat(10_000))),
    ] {
        cases.push(case(name, Unreachable, connect(hosts)));
    }
    cases.push(case("connect: the server with a chroot", Fine, connect(format!("{cs}/careless-chroot"))));

    // builder settings at their extremes
    cases.push(case("builder: namespace \"/\"", Fine, build(cs.clone(), |b| b.namespace("/"))));
    cases.push(case("builder: namespace with NUL", Path, build(cs.clone(), |b| b.namespace("a\0b"))));
    cases.push(case("builder: namespace a/../b", Path, build(cs.clone(), |b| b.namespace("a/../b"))));
    cases.push(case("builder: namespace of spaces", Fine, build(cs.clone(), |b| b.namespace("   "))));
    cases.push(case("builder: marker root \"/\"", Path, build(cs.clone(), |b| b.transaction_marker_root("/"))));
    cases.push(case("builder: marker root relative", Path, build(cs.clone(), |b| b.transaction_marker_root("txn"))));
    cases.push(case("builder: an empty auth scheme", Argument, build(cs.clone(), |b| b.auth("", "x"))));
    cases.push(case(
        "builder: retry policy of u32::MAX retries and MAX pauses",
        Fine,
        build(cs.clone(), |b| b.retry_policy(zk_recipes::RetryNTimes::new(u32::MAX, Duration::MAX))),
    ));
    cases.push(case(
        "builder: exponential backoff at its extremes",
        Fine,
        build(cs.clone(), |b| b.retry_policy(zk_recipes::ExponentialBackoff::new(Duration::MAX, u32::MAX))),
    ));

    // counts at their maximum
    let sem = InterProcessSemaphoreV2::new(&fw, &at("sem"), 2).unwrap();
    let s = sem.clone();
    cases.push(case("semaphore: acquire_many(usize::MAX)", Argument, async move {
        s.acquire_many(usize::MAX).await.map(drop)
    }));
    let s = sem.clone();
    cases.push(case("semaphore: acquire_many_timeout(usize::MAX)", Argument, async move {
        s.acquire_many_timeout(usize::MAX, Duration::from_secs(1)).await.map(drop)
    }));
    let huge = InterProcessSemaphoreV2::new(&fw, &at("huge"), i32::MAX as usize).unwrap();
    // legal, if absurd: leases are taken one node at a time until the deadline, then returned
    cases.push(case("semaphore: i32::MAX leases, acquire_many_timeout(i32::MAX)", Timeout, async move {
        huge.acquire_many_timeout(i32::MAX as usize, Duration::from_millis(500)).await.map(drop)
    }));
    cases.push(case("double barrier: usize::MAX members", Argument, async move {
        DistributedDoubleBarrier::new(&fixtures::framework(&fixtures::shared_server().await).await, "/x", usize::MAX)
            .map(drop)
    }));
    let latch = DistributedCountDownLatch::new(&fw, &at("latch")).unwrap();
    let l = latch.clone();
    cases.push(case(
        "count-down latch: count u64::MAX",
        Argument,
        async move { l.try_set_count(u64::MAX).await.map(drop) },
    ));
    let l = latch.clone();
    cases.push(case("count-down latch: count 0", Argument, async move { l.try_set_count(0).await.map(drop) }));
    for (name, participant) in [
        ("count-down latch: empty participant", ""),
        ("count-down latch: participant with /", "a/b"),
        ("count-down latch: participant ..", ".."),
        ("count-down latch: participant with NUL", "a\0b"),
    ] {
        let l = latch.clone();
        cases.push(case(name, Argument, async move { l.count_down(participant).await.map(drop) }));
    }
    let queue = |max: usize| QueueBuilder::new(&fw, &at("bounded")).max_items(max).build::<zk_recipes::queue::Fifo>();
    cases.push(case("queue: max_items(0)", Argument, std::future::ready(queue(0).map(drop))));
    cases.push(case("queue: max_items(usize::MAX)", Fine, std::future::ready(queue(usize::MAX).map(drop))));
    let simple = SimpleDistributedQueue::new(&fw, &at("simple")).unwrap();
    cases.push(case(
        "simple queue: with_max_items(0)",
        Argument,
        std::future::ready(simple.with_max_items(0).map(drop)),
    ));
    cases.push(case("multi-lock: 1000 locks built", Fine, {
        let paths: Vec<String> = (0..1_000).map(|i| at(&format!("multi/{i}"))).collect();
        std::future::ready(InterProcessMultiLock::from_paths(&fw, paths).map(drop))
    }));
    cases.push(case(
        "cache: event_capacity(usize::MAX)",
        Fine,
        std::future::ready(Cache::tree(&fw, &at("cache")).event_capacity(usize::MAX).build().map(drop)),
    ));
    cases.push(case(
        "cache: max_depth(usize::MAX)",
        Fine,
        std::future::ready(Cache::tree(&fw, &at("cache")).max_depth(usize::MAX).build().map(drop)),
    ));

    // ids and names
    let ids: DistributedIdQueue = DistributedIdQueue::new(&fw, &at("ids")).unwrap();
    for (name, id, want) in [
        ("id queue: empty id", "", Argument),
        ("id queue: id with NUL", "a\0b", Argument),
        ("id queue: id of 300 bytes", "x", Fine),
    ] {
        let q = ids.clone();
        let id = if id == "x" { "x".repeat(300) } else { id.to_string() };
        cases.push(case(name, want, async move { q.put(&b"item".to_vec(), &id).await.map(drop) }));
    }
    let permits = InterProcessSemaphoreV2::new(&fw, &at("permits"), 2).unwrap();
    for (name, id) in [
        ("release_permit: empty id", ""),
        ("release_permit: id ..", ".."),
        ("release_permit: id with /", "a/b"),
        ("release_permit: a lease's name", "_c_00000000-0000-0000-0000-000000000000-lease-0000000001"),
        (
            "release_permit: an expiry past u64",
            "_c_00000000-0000-0000-0000-000000000000-expires-99999999999999999999999-lease-0000000001",
        ),
    ] {
        let p = permits.clone();
        cases.push(case(name, Argument, async move { p.release_permit(id).await }));
    }
    for (name, id) in [("leader latch: empty id", ""), ("leader latch: id with NUL", "a\0b")] {
        let path = at(&format!("leader-{}", id.len()));
        let fw = fw.clone();
        cases.push(case(name, Fine, async move {
            let latch = LeaderLatch::new(&fw, &path, id)?;
            latch.start().await?;
            latch.await_leadership_timeout(Duration::from_secs(5)).await?;
            let ids: Vec<String> = latch.participants().await?.into_iter().map(|p| p.id.clone()).collect();
            latch.close().await?;
            if ids == [id.to_string()] {
                Ok(())
            } else {
                Err(Error::InvalidState("the participant's id did not round-trip"))
            }
        }));
    }
    cases.push(case("leader selector: bad path", Path, {
        std::future::ready(LeaderSelector::new(&fw, "no-slash", "id", |_ctx| async {}).map(drop))
    }));
    let shedlock = ShedLock::new(&fw).root(&at("shedlock")).unwrap();
    for (name, job, want) in [
        ("ShedLock: empty name", "", Argument),
        ("ShedLock: name with /", "a/b", Argument),
        ("ShedLock: name ..", "..", Path),
        ("ShedLock: name with NUL", "a\0b", Path),
    ] {
        let lock = shedlock.clone();
        cases.push(case(name, want, async move {
            lock.try_lock(job, Duration::from_secs(60), Duration::ZERO).await.map(drop)
        }));
    }
    cases.push(case("ShedLock: root \"/\"", Path, std::future::ready(ShedLock::new(&fw).root("/").map(drop))));

    // modeled-node templates and their values
    for (name, template, want) in [
        ("template: empty", "", Argument),
        ("template: unclosed brace", "/a/{b", Argument),
        ("template: empty parameter", "/a/{}", Argument),
        ("template: parameter inside a name", "/a/x{b}", Argument),
        ("template: the same parameter twice", "/a/{b}/{b}", Argument),
        ("template: relative", "a/{b}", Argument),
    ] {
        cases.push(case(name, want, std::future::ready(PathTemplate::new(template).map(drop))));
    }
    let modeled = ModeledFramework::<serde_json::Value>::new(&fw, &at("tenants/{tenant}")).unwrap();
    for (name, value, want) in [
        ("template value: empty", "", Argument),
        ("template value: with /", "a/b", Argument),
        ("template value: ..", "..", Argument),
        ("template value: NUL", "a\0b", Argument),
    ] {
        let m = modeled.clone();
        cases.push(case(name, want, std::future::ready(m.at(&[&value]).map(drop))));
    }
    let m = modeled.clone();
    cases.push(case("template: too few values", Argument, std::future::ready(m.at(&[]).map(drop))));
    let m = modeled.clone();
    cases.push(case("template: too many values", Argument, std::future::ready(m.at(&[&"a", &"b"]).map(drop))));

    // all at once, each watched for a panic and for time
    let runs: Vec<_> = cases
        .into_iter()
        .map(|(name, want, call)| {
            (
                name,
                want,
                tokio::spawn(async move {
                    let started = tokio::time::Instant::now();
                    let outcome = tokio::time::timeout(BOUND, call).await;
                    (outcome, started.elapsed())
                }),
            )
        })
        .collect();
    let mut failed = Vec::new();
    let count = runs.len();
    for (name, want, run) in runs {
        let (outcome, took) = match run.await {
            Ok(done) => done,
            Err(e) => {
                failed.push(format!("{name}: PANICKED {e}"));
                continue;
            }
        };
        let right = match (&outcome, want) {
            (Err(_), _) => false,
            (Ok(Ok(())), Fine) => true,
            (Ok(Err(Error::InvalidArgument { .. })), Argument | Unreachable) => true,
            (Ok(Err(Error::InvalidPath { .. })), Path) => true,
            (Ok(Err(Error::ConnectTimeout { .. })), Unreachable) => true,
            (Ok(Err(e)), Timeout) => e.is_timeout(),
            _ => false,
        };
        if !right {
            let got = match outcome {
                Ok(outcome) => format!("{outcome:?}"),
                Err(_) => "still running (a hang)".to_string(),
            };
            failed.push(format!("{name}: want {want:?}, got {got} after {took:?}"));
        }
    }
    assert!(failed.is_empty(), "{} of {count} cases did not behave:\n{}", failed.len(), failed.join("\n"));

    // nothing left behind: no ephemeral node, no pending delete
    fixtures::settle(&[&fw]).await;
    assert_eq!(fixtures::ephemerals(&fw, &base).await.unwrap(), Vec::<String>::new(), "ephemerals left behind");
    let _ = fw.delete_recursive(&base).await;
    fw.close();
}
