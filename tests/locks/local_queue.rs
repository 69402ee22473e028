//! The mutex's local queue: a framework's acquires of one path beyond the first eight wait in
//! the process, not as nodes, and still hold one at a time in arrival order; a timeout, a
//! `try_acquire` and a cancel work there as anywhere; another session's contender arriving
//! later queues behind the eight in ZooKeeper's queue only.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zk_recipes::{Framework, InterProcessMutex};
use zk_recipes_testing::{fixtures, ProxyMode, TcpProxy};

use super::WAIT;

/// Acquires of one framework in ZooKeeper's queue of one path at a time (the library's
/// `locks::local_queue::DEPTH`).
const DEPTH: usize = 8;

/// Returns once `polled` tasks have started their acquires and `path`'s children are the same
/// on two listings 100 ms apart; returns those children.
async fn settled(fw: &Framework, path: &str, started: &AtomicUsize, polled: usize) -> Vec<String> {
    let mut last = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let children = fw.children(path).await.unwrap();
        if started.load(Ordering::SeqCst) == polled && children == last {
            return children;
        }
        assert!(tokio::time::Instant::now() < deadline, "the queue never settled: {children:?}");
        last = children;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_beyond_eight_queue_locally_in_order_and_time_out_and_cancel_there() {
    const WAITERS: usize = 30;
    // cancelled while waiting: one in ZooKeeper's queue, two in the local queue
    const CANCELLED: [usize; 3] = [3, 12, 20];
    let cs = fixtures::shared_server().await;
    let (a, b) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("local-queue"));
    let mutex = InterProcessMutex::new(&a, &path).unwrap();
    let head = mutex.acquire().await.unwrap();
    let (order, inside, started) =
        (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let hold = |m: InterProcessMutex, who: String| {
        let (order, inside, started) = (order.clone(), inside.clone(), started.clone());
        tokio::spawn(async move {
            started.fetch_add(1, Ordering::SeqCst);
            let guard = m.acquire().await.unwrap();
            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
            order.lock().unwrap().push((who, guard.fencing_token()));
            tokio::time::sleep(Duration::from_millis(5)).await;
            inside.fetch_sub(1, Ordering::SeqCst);
            guard.release().await.unwrap();
        })
    };
    let mut waiters = Vec::new();
    for i in 0..WAITERS {
        waiters.push(hold(mutex.clone(), format!("a{i}")));
        // one at a time, so that arrival order is known
        fixtures::eventually(WAIT, format!("waiter {i} started"), || async { started.load(Ordering::SeqCst) == i + 1 })
            .await;
    }
    let queued = settled(&a, &path, &started, WAITERS).await;
    assert_eq!(queued.len(), DEPTH + 1, "the holder and eight waiters are nodes, the rest wait locally: {queued:?}");

    // behind a full local queue: a try fails at once, a timeout ends on time, neither leaves a node
    let t = tokio::time::Instant::now();
    assert!(mutex.try_acquire().await.unwrap().is_none());
    assert!(t.elapsed() < Duration::from_secs(2), "try_acquire waited {:?}", t.elapsed());
    let t = tokio::time::Instant::now();
    let timed_out = mutex.acquire_timeout(Duration::from_millis(300)).await.unwrap_err();
    assert!(timed_out.is_timeout(), "{timed_out}");
    assert!(t.elapsed() >= Duration::from_millis(300) && t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());

    for &i in &CANCELLED {
        waiters[i].abort();
    }
    // the cancelled one in ZooKeeper's queue gave its place to the next local waiter
    fixtures::settle(&[&a]).await;
    let queued = settled(&a, &path, &started, WAITERS).await;
    assert_eq!(queued.len(), DEPTH + 1, "{queued:?}");
    // another session's contender, arriving now, queues behind a's eight in ZooKeeper's queue
    let other = hold(InterProcessMutex::new(&b, &path).unwrap(), "b".into());
    fixtures::eventually(WAIT, "b queued", || async { a.children(&path).await.unwrap().len() == DEPTH + 2 }).await;

    head.release().await.unwrap();
    other.await.unwrap();
    for (i, w) in waiters.into_iter().enumerate() {
        match tokio::time::timeout(WAIT, w).await.expect("every waiter done") {
            Ok(()) => assert!(!CANCELLED.contains(&i), "a{i} was not cancelled"),
            Err(e) => assert!(e.is_cancelled() && CANCELLED.contains(&i), "a{i}: {e}"),
        }
    }
    let order = order.lock().unwrap().clone();
    let names: Vec<&str> = order.iter().map(|(who, _)| who.as_str()).collect();
    let mut expected: Vec<String> = (0..WAITERS).filter(|i| !CANCELLED.contains(i)).map(|i| format!("a{i}")).collect();
    expected.insert(DEPTH, "b".into());
    assert_eq!(names, expected, "arrival order within a; b after the eight a had in ZooKeeper's queue");
    assert!(order.windows(2).all(|w| w[0].1 < w[1].1), "fencing tokens increase: {order:?}");
    fixtures::settle(&[&a, &b]).await;
    assert!(fixtures::ephemerals(&a, &path).await.unwrap().is_empty(), "no node left");
    a.close();
    b.close();
}

/// An acquire whose create is lost with its connection (sent, unanswered, then the link drops)
/// still holds before a local acquire that arrives after it: the later one's create, sent at
/// once on the new connection, must not sort before the earlier one's, which is retried (and
/// first looks for the node it may have made).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_whose_create_is_lost_with_the_connection_holds_before_one_that_arrived_later() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(cs.split(',').next().unwrap()).await.unwrap();
    let a = fixtures::framework(proxy.connect_string()).await;
    let b = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("lost-create"));
    // b holds: neither of a's acquires holds before b lets go, whatever their nodes' order
    let head = InterProcessMutex::new(&b, &path).unwrap().acquire().await.unwrap();
    let mutex = InterProcessMutex::new(&a, &path).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let hold = |who: &'static str| {
        let (m, order) = (mutex.clone(), order.clone());
        tokio::spawn(async move {
            let guard = m.acquire().await.unwrap();
            order.lock().unwrap().push((who, guard.fencing_token()));
            guard.release().await.unwrap();
        })
    };
    // the first one's create goes into a link that answers nothing
    proxy.set_mode(ProxyMode::Blackhole);
    let first = hold("first");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // the link drops (the create fails with a lost connection) and comes back slow: the first
    // one's retry takes several round trips, a create sent at once takes one
    let before = a.status().suspensions;
    proxy.set_mode(ProxyMode::Delay(Duration::from_millis(100)));
    proxy.cut();
    fixtures::eventually(WAIT, "a reconnected", || async {
        let s = a.status();
        s.suspensions > before && s.state.is_connected()
    })
    .await;
    let second = hold("second");
    fixtures::eventually(WAIT, "both queued", || async { b.children(&path).await.unwrap().len() == 3 }).await;
    proxy.set_mode(ProxyMode::Pass);
    head.release().await.unwrap();
    for t in [first, second] {
        tokio::time::timeout(WAIT, t).await.expect("acquired in time").unwrap();
    }
    let order = order.lock().unwrap().clone();
    let names: Vec<&str> = order.iter().map(|(who, _)| *who).collect();
    assert_eq!(names, ["first", "second"], "held in arrival order: {order:?}");
    a.close();
    b.close();
}
