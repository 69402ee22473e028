//! The request-size limit (`FrameworkBuilder::max_request_size`): a write larger than the
//! server takes is refused before it is sent — on every write path, compressed data measured
//! after compression — with `Error::TooLarge` naming the size and the limit; it is never sent
//! nor retried, so the connection is never dropped and a lock held on the same framework is not
//! lost. And the limit is the server's own measure: a request of exactly the limit is taken,
//! one byte more makes the server drop the connection.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::Instant;
use zk_recipes::modeled::ModeledFramework;
use zk_recipes::{
    CreateMode, DistributedQueue, Error, ErrorKind, Framework, InterProcessMutex, NodeMode, PersistentNode,
    ServiceDiscovery, ServiceInstance, SharedValue, SimpleDistributedQueue, DEFAULT_MAX_REQUEST_SIZE,
};
use zk_recipes_testing::fixtures;

const WAIT: Duration = Duration::from_secs(20);

/// What the server reads of a create of `data_len` bytes at `path` (no namespace) with the
/// default ACL (world:anyone, all): the header (xid, type), the path, the data, the ACL vector
/// (one entry: perms, "world", "anyone") and the flags.
fn create_size(path: &str, data_len: usize) -> usize {
    8 + (4 + path.len()) + (4 + data_len) + (4 + 4 + (4 + 5) + (4 + 6)) + 4
}

/// Bytes gzip cannot shrink.
fn noise(len: usize) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(53);
    (0..len).map(|_| rng.u8(..)).collect()
}

/// `call`'s refusal as too large, in well under a second (never sent, never retried): its size
/// and limit.
async fn too_large<T: std::fmt::Debug>(
    what: &str,
    call: impl std::future::Future<Output = zk_recipes::Result<T>>,
) -> (usize, usize) {
    let started = Instant::now();
    let result = call.await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "{what}: refused in {took:?}, not at once");
    match result {
        Err(e @ Error::TooLarge { .. }) => {
            assert_eq!(e.kind(), ErrorKind::TooLarge);
            assert!(!e.is_retryable(), "{e}");
            let Error::TooLarge { size, limit, .. } = e else { unreachable!() };
            (size, limit)
        }
        other => panic!("{what}: expected TooLarge, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_write_is_refused_before_it_is_sent_and_costs_no_hold() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let gz = fw.compressed();
    let base = format!("/{}", fixtures::unique("too-large"));
    let guard = InterProcessMutex::new(&fw, &format!("{base}/lock")).unwrap().acquire().await.unwrap();
    let before = fw.status();
    let mut states = Box::pin(fw.connection_states());
    let big = vec![7u8; 2 * 1024 * 1024];
    let limit = DEFAULT_MAX_REQUEST_SIZE;

    let (size, at) = too_large("create", fw.create(&format!("{base}/a"), &big, CreateMode::Persistent)).await;
    assert_eq!(at, limit);
    assert_eq!(size, create_size(&format!("{base}/a"), big.len()), "the size as the server would read it");
    fw.create(&format!("{base}/b"), b"small", CreateMode::Persistent).await.unwrap();
    too_large("set_data", fw.set_data(&format!("{base}/b"), &big, None)).await;
    too_large("a versioned set_data", fw.set_data(&format!("{base}/b"), &big, Some(0))).await;
    // a transaction as a whole: two operations that fit alone
    let half = vec![1u8; 600 * 1024];
    let txn = fw.transaction().create(&format!("{base}/c"), &half, CreateMode::Persistent);
    let (size, _) =
        too_large("a transaction of two halves", txn.set_data(&format!("{base}/b"), &half, None).commit()).await;
    assert!(size > 2 * half.len(), "the whole multi is measured: {size}");
    too_large("protected create", fw.create_protected(&base, "p-", &big, CreateMode::EphemeralSequential)).await;
    // compressed data is measured after compression: noise does not shrink...
    too_large("compressed noise", gz.create(&format!("{base}/gz"), &noise(1_100_000), CreateMode::Persistent)).await;
    // ...and repetitive data that shrinks below the limit is taken
    gz.create(&format!("{base}/gz-ok"), &big, CreateMode::Persistent).await.expect("2 MB of sevens gzip to a few KB");
    // the recipes' writes
    let shared = SharedValue::new(&fw, &format!("{base}/shared"), b"seed".to_vec()).unwrap();
    shared.start().await.unwrap();
    too_large("SharedValue::set", shared.set(&big)).await;
    let simple = SimpleDistributedQueue::new(&fw, &format!("{base}/simple")).unwrap();
    too_large("SimpleDistributedQueue::offer", simple.offer(&big)).await;
    let queue = DistributedQueue::new(&fw, &format!("{base}/queue")).unwrap();
    let halves = [vec![2u8; 600 * 1024], vec![3u8; 600 * 1024]];
    let (_, at) = too_large("DistributedQueue::put_all", queue.put_all(&halves)).await;
    assert_eq!(at, limit, "two items that fit a queue each are one request over the framework's limit");
    let modeled = ModeledFramework::<Vec<u8>>::new(&fw, &format!("{base}/models/{{id}}")).unwrap();
    too_large("ModeledNode::set", modeled.at(&[&"m1"]).unwrap().set(&big, None)).await;
    let discovery = ServiceDiscovery::<String>::new(&fw, &format!("{base}/services")).unwrap();
    let instance = ServiceInstance::builder("api")
        .id("api-1")
        .address("127.0.0.1")
        .port(8080)
        .payload("x".repeat(2 * 1024 * 1024))
        .build()
        .unwrap();
    too_large("ServiceDiscovery::register", discovery.register(&instance)).await;
    let mutex = InterProcessMutex::new(&fw, &format!("{base}/big-lock")).unwrap().with_data(big.clone());
    too_large("a lock node's data", mutex.try_acquire()).await;
    let node = PersistentNode::new(&fw, &format!("{base}/node"), NodeMode::Persistent, big.clone()).unwrap();
    node.start().await.unwrap();
    too_large("PersistentNode", node.wait_for_initial_create(WAIT)).await;
    assert!(!guard.is_lost(), "the hold on the same framework is not lost: {:?}", guard.loss());
    let after = fw.status();
    assert_eq!((after.session_id, after.suspensions), (before.session_id, before.suspensions));
    let change = tokio::time::timeout(Duration::from_millis(200), states.next()).await;
    assert!(change.is_err(), "no connection state change: {change:?}");
    // nothing was sent: none of the refused nodes exists, and the lock is still ours
    for refused in ["a", "c", "gz", "models/m1", "node"] {
        assert!(fw.exists(&format!("{base}/{refused}")).await.unwrap().is_none(), "{refused} exists");
    }
    assert_eq!(fw.get_data(&format!("{base}/b")).await.unwrap().0, b"small");
    assert!(fw.ephemerals(&base).await.unwrap().iter().all(|p| p.starts_with(&format!("{base}/lock/"))));
    node.close().await.unwrap();
    guard.release().await.expect("the hold was never lost");
    fw.shutdown(WAIT).await.unwrap();
}

/// The limit is the server's measure, to the byte: with the framework's check lifted above the
/// server's `jute.maxbuffer`, a request of exactly 0xfffff bytes is taken and one of a byte more
/// makes the server drop the connection; with the default limit that byte more is refused
/// before it is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_is_the_size_the_server_reads() {
    let cs = fixtures::shared_server().await;
    let base = format!("/{}", fixtures::unique("limit"));
    let fw = fixtures::framework(&cs).await;
    let (exact, over) = (format!("{base}/at"), format!("{base}/up"));
    fw.create(&base, b"", CreateMode::Persistent).await.unwrap();
    let fits = DEFAULT_MAX_REQUEST_SIZE - create_size(&exact, 0);
    fw.create(&exact, &vec![1u8; fits], CreateMode::Persistent).await.expect("a request of exactly the limit");
    let (size, limit) =
        too_large("one byte over", fw.create(&over, &vec![1u8; fits + 1], CreateMode::Persistent)).await;
    assert_eq!((size, limit), (DEFAULT_MAX_REQUEST_SIZE + 1, DEFAULT_MAX_REQUEST_SIZE));

    // sent anyway (the check lifted): the server closes the connection
    let lifted = fixtures::framework_with(&cs, |b| b.max_request_size(4 * 1024 * 1024)).await;
    let before = lifted.status().suspensions;
    let sent = zk_recipes::with_deadline(
        Duration::from_secs(3),
        lifted.create(&over, &vec![1u8; fits + 1], CreateMode::Persistent),
    )
    .await;
    assert!(sent.is_err(), "the server does not take one byte over its limit: {sent:?}");
    fixtures::eventually(WAIT, "the dropped connection was seen", || {
        let lifted = lifted.clone();
        async move { lifted.status().suspensions > before }
    })
    .await;
    assert!(fw.exists(&over).await.unwrap().is_none());
    let _ = lifted.shutdown(WAIT).await;
    fw.shutdown(WAIT).await.unwrap();
}

#[tokio::test]
async fn a_limit_below_any_recipe_request_is_refused() {
    let cs = fixtures::shared_server().await;
    let built = Framework::builder().connect_string(cs).max_request_size(100).connect().await;
    assert!(matches!(built, Err(Error::InvalidArgument { argument: "max_request_size", .. })), "{built:?}");
}
