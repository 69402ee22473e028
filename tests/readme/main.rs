//! The README's quick start, run as written against a real server: a lock with its lost signal
//! and fencing token, a leader with the token of its leadership, a watched tree, a service
//! registration found by a provider. Each flow is the README's snippet with its paths made
//! unique, and asserts what the README promises. (The snippets are also compiled as doc tests:
//! `doc_pages::Readme` in src/lib.rs.)

use std::time::Duration;

use futures_util::StreamExt;

use zk_recipes::CreateMode;
use zk_recipes::{
    Cache, CacheEvent, Framework, InterProcessMutex, LeaderLatch, LossReason, ServiceDiscovery, ServiceInstance,
};
use zk_recipes_testing::fixtures;

const WAIT: Duration = Duration::from_secs(20);

/// The czxid of `path`, read by `fw`.
async fn czxid(fw: &Framework, path: &str) -> i64 {
    fw.exists(path).await.unwrap().expect("the node exists").czxid
}

/// A lock, its lost signal and its fencing token: the work runs with the token (the lock
/// node's czxid) while `lost()` stays pending; after the release and the shutdown the node is
/// gone at once, not after the session timeout.
#[tokio::test]
async fn a_lock_its_lost_signal_and_its_fencing_token() {
    let cs = fixtures::shared_server().await;
    let reader = fixtures::framework(&cs).await;
    let path = format!("/{}/locks/orders", fixtures::unique("readme"));

    let fw = Framework::connect(&cs).await.unwrap();
    let mutex = InterProcessMutex::new(&fw, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let token = guard.fencing_token();
    let node = guard.path().to_string();
    let mut worked_with = None;
    tokio::select! {
        reason = guard.lost() => panic!("lock lost ({reason}) while nothing happened"),
        _ = async { worked_with = Some(token) } => {}
    }
    assert_eq!(worked_with, Some(czxid(&reader, &node).await), "the token is the lock node's czxid");
    guard.release().await.unwrap();
    fw.shutdown(Duration::from_secs(5)).await.unwrap();

    assert_eq!(reader.exists(&node).await.unwrap(), None, "released: the node is gone");
    let next = InterProcessMutex::new(&reader, &path).unwrap().acquire_timeout(WAIT).await.unwrap();
    assert!(next.fencing_token() > token, "the next holder's token is larger");
    next.release().await.unwrap();
}

/// A leader: `await_leadership()` returns the leadership with its token (its node's czxid),
/// the work runs with it while `lost()` stays pending, and `lost()` resolves once the
/// leadership ends (here: the latch closes).
#[tokio::test]
async fn a_leader_with_the_token_of_its_leadership() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let reader = fixtures::framework(&cs).await;
    let path = format!("/{}/elections/scheduler", fixtures::unique("readme"));

    let latch = LeaderLatch::new(&fw, &path, "replica-1").unwrap();
    latch.start().await.unwrap();
    let leadership = latch.await_leadership_timeout(WAIT).await.unwrap();
    let token = leadership.fencing_token();
    let mut led_with = None;
    tokio::select! {
        reason = leadership.lost() => panic!("leadership over ({reason}) while nothing happened"),
        _ = async { led_with = Some(token) } => {}
    }
    assert_eq!(led_with, Some(czxid(&reader, leadership.node()).await), "the token is the node's czxid");
    assert_eq!(latch.leader().await.unwrap().map(|p| p.id), Some("replica-1".to_string()));

    latch.close().await.unwrap();
    let reason = tokio::time::timeout(WAIT, leadership.lost()).await.expect("lost() resolves after close");
    assert_eq!(reason, LossReason::Closed);
    assert!(leadership.is_lost());
}

/// A watched tree: after `start()`, a change of a node under the root arrives as
/// `CacheEvent::Changed` with the node's new path and data.
#[tokio::test]
async fn a_watched_tree_reports_a_change() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let writer = fixtures::framework(&cs).await;
    let root = format!("/{}/config", fixtures::unique("readme"));
    let leaf = format!("{root}/feature-flags");
    writer.create(&leaf, b"off", CreateMode::Persistent).await.unwrap();

    let cache = Cache::tree(&fw, &root).build().unwrap();
    let mut events = Box::pin(cache.events());
    cache.start().await.unwrap();
    let mut initialized = false;
    let changed = tokio::time::timeout(WAIT, async {
        while let Some(event) = events.next().await {
            match event {
                CacheEvent::Initialized => {
                    initialized = true;
                    writer.set_data(&leaf, b"on", None).await.unwrap();
                }
                CacheEvent::Changed { new, .. } => return (new.path, new.data),
                _ => {}
            }
        }
        panic!("the events ended");
    })
    .await
    .expect("a Changed event");
    assert!(initialized, "the change came after the initial load");
    assert_eq!(changed, (leaf, Some(b"on".to_vec())));
    cache.close().await.unwrap();
}

/// A service registration: the provider started right after the registration returns the
/// registered instance from its first `get_instance()` (membership's discovery tests cover a
/// provider of another framework too).
#[tokio::test]
async fn a_service_registration_is_found_by_a_provider_at_once() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}/services", fixtures::unique("readme"));

    let registry = ServiceDiscovery::<serde_json::Value>::new(&fw, &base).unwrap();
    let me = ServiceInstance::builder("orders").id("orders-1").address("10.0.0.1").port(8081).build().unwrap();
    registry.register(&me).await.unwrap();

    let provider = registry.provider("orders").build().unwrap();
    provider.start().await.unwrap();
    let target = provider.get_instance().expect("the registered instance, right after start()");
    assert_eq!(
        (target.id.as_str(), target.address.as_deref(), target.port),
        ("orders-1", Some("10.0.0.1"), Some(8081))
    );
}
