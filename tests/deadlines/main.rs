//! Every wait ends on time: each timed API of the recipes, and plain framework operations
//! under a deadline scope, return by their deadline (+ 1 s) when the server stops answering
//! with the connection open — a real server frozen with SIGSTOP, or a proxy that forwards
//! nothing — and after it answers again the framework works and nothing of the abandoned
//! waits is left (nodes, watches). A binary of its own: its stalls do not disturb the timing
//! of other suites, and each test has servers of its own.
//!
//! The calls here start on a frozen server, and the freezes end before the operation timeout
//! or the session; `waiting.rs` freezes the server under calls that already wait (their
//! withdraw runs under the freeze), for longer than the operation timeout, longer than the
//! session, and on an ensemble until the session moves; `leaks.rs` freezes it with a write of
//! an abandoned call in flight, which lands when it resumes.

mod calls;
mod ensemble;
mod leaks;
mod waiting;

use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::{Cache, Error, Framework, InterProcessMutex, ServiceDiscovery, ServiceInstance};
use zk_recipes_testing::{fixtures, four_letter_word, ProxyMode, TcpProxy, TestingServer};

use calls::{run_all, Setup};

/// The timeout every timed call is given.
const TIMEOUT: Duration = Duration::from_secs(1);
/// The framework's operation timeout: what bounds a `try_*` form.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(2);
/// How long after its bound a call may return (the promise).
const SLACK: Duration = Duration::from_secs(1);
/// Long enough that no session expires while a server is frozen for a few seconds.
const SESSION: Duration = Duration::from_secs(30);
const WAIT: Duration = Duration::from_secs(30);

async fn framework(cs: &str) -> Framework {
    fixtures::framework_with(cs, |b| b.session_timeout(SESSION).operation_timeout(OPERATION_TIMEOUT)).await
}

/// The server's total of watches (`wchs`).
async fn watches(cs: &str) -> usize {
    let out = four_letter_word(cs, "wchs").await.expect("wchs");
    out.lines()
        .find_map(|l| l.strip_prefix("Total watches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no watch total in {out:?}"))
}

/// Once the server answers again: `fw` works (it takes and releases a lock), and after the
/// holder let go nothing of the abandoned waits is left under `base`.
async fn recovered(fw: &Framework, holder: &Framework, base: &str, setup: Setup) {
    let again = InterProcessMutex::new(fw, &format!("{base}/free")).unwrap();
    again.acquire_timeout(WAIT).await.expect("the framework works after the stall").release().await.unwrap();
    setup.release().await;
    fixtures::eventually(WAIT, "no node of the abandoned waits left", || async {
        fixtures::ephemerals(holder, base).await.unwrap().is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_timed_wait_returns_by_its_deadline_when_the_server_freezes() {
    let server = TestingServer::builder().extended_types(true).start().await.expect("server");
    let cs = server.connect_string().to_string();
    let (fw, holder) = (framework(&cs).await, framework(&cs).await);
    let base = format!("/{}", fixtures::unique("frozen"));
    let setup = Setup::new(&holder, &fw, &base).await;
    let quiet = watches(&cs).await;

    server.pause().expect("SIGSTOP");
    let late = run_all(&fw, &base, &setup).await;
    server.resume().expect("SIGCONT");
    assert!(late.is_empty(), "calls not back by their bound + 1 s, or with the wrong error: {late:#?}");

    recovered(&fw, &holder, &base, setup).await;
    fixtures::eventually(WAIT, "no watch of the abandoned waits left", || async { watches(&cs).await <= quiet }).await;
    assert!(fw.shutdown(WAIT).await.is_ok() && holder.shutdown(WAIT).await.is_ok());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_timed_wait_returns_by_its_deadline_when_the_link_forwards_nothing() {
    let server = TestingServer::builder().extended_types(true).start().await.expect("server");
    let proxy = TcpProxy::start(server.connect_string()).await.expect("proxy");
    let cs = server.connect_string().to_string();
    let (fw, holder) = (framework(proxy.connect_string()).await, framework(&cs).await);
    let base = format!("/{}", fixtures::unique("blackhole"));
    let setup = Setup::new(&holder, &fw, &base).await;

    proxy.set_mode(ProxyMode::Blackhole);
    let late = run_all(&fw, &base, &setup).await;
    proxy.set_mode(ProxyMode::Pass);
    assert!(late.is_empty(), "calls not back by their bound + 1 s, or with the wrong error: {late:#?}");

    recovered(&fw, &holder, &base, setup).await;
    let _ = fw.shutdown(WAIT).await;
    let _ = holder.shutdown(WAIT).await;
    server.stop().await;
}

/// The caches' first-load waits end by their deadline on a frozen server: a cache's
/// `initialized_timeout`, and a discovery provider's `start()` (which returns loaded, bounded
/// by the operation timeout); once the server answers again both load, with the instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_load_waits_end_by_their_deadline_when_the_server_freezes() {
    let server = TestingServer::start().await.expect("server");
    let cs = server.connect_string().to_string();
    let fw = framework(&cs).await;
    let base = format!("/{}", fixtures::unique("frozen-load"));
    let registry = ServiceDiscovery::<serde_json::Value>::new(&fw, &base).unwrap();
    let me = ServiceInstance::builder("orders").id("orders-1").address("127.0.0.1").port(8081).build().unwrap();
    registry.register(&me).await.unwrap();
    let cache = Cache::children(&fw, &base).build().unwrap();
    let provider = registry.provider("orders").build().unwrap();

    server.pause().expect("SIGSTOP");
    cache.start().await.unwrap();
    let started = Instant::now();
    let waited = cache.initialized_timeout(TIMEOUT).await;
    let cache_took = started.elapsed();
    let started = Instant::now();
    let provided = provider.start().await;
    let provider_took = started.elapsed();
    server.resume().expect("SIGCONT");
    assert!(waited.as_ref().is_err_and(Error::is_timeout), "{waited:?}");
    assert!(cache_took <= TIMEOUT + SLACK, "cache initialized_timeout took {cache_took:?}");
    assert!(provided.as_ref().is_err_and(Error::is_timeout), "{provided:?}");
    assert!(provider_took <= OPERATION_TIMEOUT + SLACK, "provider start took {provider_took:?}");

    // both go on loading once the server answers
    cache.initialized_timeout(WAIT).await.expect("the cache loads after the stall");
    assert_eq!(cache.child_names(&base), vec!["orders".to_string()]);
    provider.cache().initialized_timeout(WAIT).await.expect("the provider loads after the stall");
    assert_eq!(provider.get_instance().map(|i| i.id), Some("orders-1".to_string()));
    provider.close().await.unwrap();
    cache.close().await.unwrap();
    registry.close().await.unwrap();
    assert!(fw.shutdown(WAIT).await.is_ok());
    server.stop().await;
}
