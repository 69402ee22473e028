//! Counts through the recording recorder equal what the test did.

use std::time::Duration;

use zk_recipes::metrics::*;
use zk_recipes::CreateMode;
use zk_recipes::{Cache, Framework, InterProcessMutex, LeaderLatch, LossReason, SimpleDistributedQueue};
use zk_recipes_testing::expire_session;
use zk_recipes_testing::fixtures::{eventually, framework_with, shared_server, unique};

use crate::recorder::{serial, Metrics};

const WAIT: Duration = Duration::from_secs(20);

/// A framework whose recipes label their metrics with their path.
async fn labelled() -> Framework {
    framework_with(&shared_server().await, |b| b.metrics_path_labels(true)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_waits_holds_and_outcomes_are_counted_exactly() {
    let _serial = serial().await;
    let fw = labelled().await;
    let path = format!("/{}", unique("obs-mutex"));
    let at = |extra: &'static [(&'static str, &'static str)]| {
        let mut labels = vec![(LABEL_PATH, path.as_str()), (LABEL_KIND, "mutex")];
        labels.extend_from_slice(extra);
        labels
    };
    let mutex = InterProcessMutex::new(&fw, &path).unwrap();
    for _ in 0..3 {
        mutex.acquire().await.unwrap().release().await.unwrap();
    }
    let held = mutex.acquire().await.unwrap();
    let m = Metrics::now();
    assert_eq!(m.gauge(LOCK_HOLDERS, &at(&[])), Some(1.0), "one hold alive");
    assert_eq!(m.histogram(LOCK_HOLD_SECONDS, &at(&[])).len(), 3, "three holds ended");

    // a second contender times out, and another is cancelled while it waits
    let other = InterProcessMutex::new(&fw, &path).unwrap();
    let timed_out = other.acquire_timeout(Duration::from_millis(300)).await;
    assert!(timed_out.as_ref().is_err_and(|e| e.is_timeout()), "{timed_out:?}");
    let waiting = tokio::spawn({
        let other = other.clone();
        async move { other.acquire().await }
    });
    eventually(WAIT, "the spawned acquire waits", || async {
        Metrics::now().gauge(LOCK_WAITERS, &at(&[])) == Some(1.0)
    })
    .await;
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());

    // and one fails: its framework is closed
    let closed = labelled().await;
    closed.close();
    assert!(InterProcessMutex::new(&closed, &path).unwrap().acquire().await.is_err());

    held.release().await.unwrap();
    let m = Metrics::now();
    let waits =
        |outcome: &'static str| m.histogram(LOCK_WAIT_SECONDS, &[(LABEL_PATH, &path), (LABEL_OUTCOME, outcome)]);
    assert_eq!(waits("acquired").len(), 4);
    assert_eq!(waits("timed_out").len(), 1);
    assert!(waits("timed_out")[0] >= 0.3, "the timed-out wait lasted its timeout: {:?}", waits("timed_out"));
    assert_eq!(waits("cancelled").len(), 1);
    assert_eq!(waits("failed").len(), 1);
    assert_eq!(m.gauge(LOCK_WAITERS, &at(&[])), Some(0.0));
    assert_eq!(m.gauge(LOCK_HOLDERS, &at(&[])), Some(0.0));
    assert_eq!(m.histogram(LOCK_HOLD_SECONDS, &at(&[])).len(), 4);
    assert_eq!(m.counter(LOCK_LOSSES, &at(&[])), 0, "nothing was lost");
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_expiry_loses_the_hold_once_and_is_counted() {
    let _serial = serial().await;
    let fw = labelled().await;
    let path = format!("/{}", unique("obs-expiry"));
    let labels = [(LABEL_PATH, path.as_str())];
    let before = Metrics::now();
    let guard = InterProcessMutex::new(&fw, &path).unwrap().acquire().await.unwrap();
    expire_session(&fw).await.unwrap();
    let reason = tokio::time::timeout(WAIT, guard.lost()).await.unwrap();
    // (or the node watch tells of the server's deletion of our node at the session's end first)
    let ended = [LossReason::SessionLost, LossReason::Suspended, LossReason::NodeDeleted];
    assert!(ended.contains(&reason), "{reason:?}");
    let _ = guard.is_lost(); // asked again: still one loss
    drop(guard);
    // the counters move right after the state is published
    let recreations = before.counter(SESSION_RECREATIONS, &[]);
    eventually(WAIT, "a new session", || async { Metrics::now().counter(SESSION_RECREATIONS, &[]) > recreations })
        .await;
    let after = Metrics::now();
    assert_eq!(after.counter(LOCK_LOSSES, &labels), 1, "one loss");
    // counted under the reason `lost()` told: the hold's monitor watches from the start, so it
    // may see the connection suspended before the session is known lost
    let label = match reason {
        LossReason::SessionLost => "session_lost",
        LossReason::NodeDeleted => "node_deleted",
        _ => "suspended",
    };
    assert_eq!(after.counter(LOCK_LOSSES, &[(LABEL_PATH, &path), (LABEL_REASON, label)]), 1, "{reason:?}");
    assert_eq!(after.gauge(LOCK_HOLDERS, &labels), Some(0.0));
    let delta = |name| after.counter(name, &[]) - before.counter(name, &[]);
    assert_eq!(delta(SESSION_EXPIRIES), 1);
    assert_eq!(delta(SESSION_RECREATIONS), 1);
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_gauge_follows_leadership() {
    let _serial = serial().await;
    let path = format!("/{}", unique("obs-leader"));
    let labels = [(LABEL_PATH, path.as_str()), (LABEL_RECIPE, "latch")];
    let (fw1, fw2) = (labelled().await, labelled().await);
    let first = LeaderLatch::new(&fw1, &path, "one").unwrap();
    first.start().await.unwrap();
    first.await_leadership_timeout(WAIT).await.unwrap();
    let second = LeaderLatch::new(&fw2, &path, "two").unwrap();
    second.start().await.unwrap();
    eventually(WAIT, "the second queued", || async { second.participants().await.unwrap().len() == 2 }).await;
    let m = Metrics::now();
    assert_eq!(m.gauge(LEADER, &labels), Some(1.0));
    assert_eq!(m.counter(LEADERSHIP_CHANGES, &labels), 1);
    first.close().await.unwrap();
    second.await_leadership_timeout(WAIT).await.unwrap();
    let m = Metrics::now();
    assert_eq!(m.gauge(LEADER, &labels), Some(1.0), "handed over: still one leader here");
    assert_eq!(m.counter(LEADERSHIP_CHANGES, &labels), 3, "gained, lost, gained");
    second.close().await.unwrap();
    let m = Metrics::now();
    assert_eq!(m.gauge(LEADER, &labels), Some(0.0));
    assert_eq!(m.counter(LEADERSHIP_CHANGES, &labels), 4);
    fw1.close();
    fw2.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_nodes_and_events_are_counted() {
    let _serial = serial().await;
    let fw = labelled().await;
    let root = format!("/{}", unique("obs-cache"));
    let labels = [(LABEL_PATH, root.as_str()), (LABEL_KIND, "tree")];
    for child in ["a", "b"] {
        fw.create(&format!("{root}/{child}"), b"1", CreateMode::Persistent).await.unwrap();
    }
    let cache = Cache::tree(&fw, &root).build().unwrap();
    cache.start().await.unwrap();
    eventually(WAIT, "loaded", || async { cache.is_initialized() }).await;
    let m = Metrics::now();
    assert_eq!(m.gauge(CACHE_NODES, &labels), Some(3.0), "the root and two children");
    let events = |m: &Metrics, event| m.counter(CACHE_EVENTS, &[(LABEL_PATH, &root), (LABEL_EVENT, event)]);
    assert_eq!(events(&m, "created"), 3);
    fw.create(&format!("{root}/c"), b"1", CreateMode::Persistent).await.unwrap();
    fw.set_data(&format!("{root}/a"), b"2", None).await.unwrap();
    fw.delete(&format!("{root}/b")).await.unwrap();
    eventually(WAIT, "the changes are seen", || async {
        let m = Metrics::now();
        events(&m, "created") == 4 && events(&m, "changed") == 1 && events(&m, "deleted") == 1
    })
    .await;
    let m = Metrics::now();
    assert_eq!(m.gauge(CACHE_NODES, &labels), Some(3.0));
    assert_eq!(m.counter(CACHE_RESYNCS, &labels), 0);
    cache.close().await.unwrap();
    drop(cache);
    eventually(WAIT, "a closed cache holds nothing", || async {
        Metrics::now().gauge(CACHE_NODES, &labels) == Some(0.0)
    })
    .await;
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_puts_and_takes_are_counted() {
    let _serial = serial().await;
    let fw = labelled().await;
    let path = format!("/{}", unique("obs-queue"));
    let labels = [(LABEL_PATH, path.as_str()), (LABEL_KIND, "simple")];
    let queue = SimpleDistributedQueue::new(&fw, &path).unwrap();
    for item in [b"1", b"2", b"3"] {
        queue.offer(item).await.unwrap();
    }
    queue.take().await.unwrap();
    queue.take().await.unwrap();
    let m = Metrics::now();
    assert_eq!(m.counter(QUEUE_PUT, &labels), 3);
    assert_eq!(m.counter(QUEUE_TAKEN, &labels), 2);
    assert!(m.gauge(QUEUE_DEPTH, &labels).is_some_and(|d| d >= 1.0), "a depth was listed");
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_are_timed_by_name_and_result() {
    let _serial = serial().await;
    let fw = labelled().await;
    let path = format!("/{}", unique("obs-ops"));
    let before = Metrics::now();
    fw.create(&path, b"x", CreateMode::Persistent).await.unwrap();
    fw.get_data(&path).await.unwrap();
    fw.get_data(&path).await.unwrap();
    assert!(fw.get_data(&format!("{path}/missing")).await.is_err());
    let after = Metrics::now();
    let count =
        |m: &Metrics, op, result| m.histogram(OPERATION_SECONDS, &[(LABEL_OP, op), (LABEL_RESULT, result)]).len();
    assert_eq!(count(&after, "get_data", "ok") - count(&before, "get_data", "ok"), 2);
    assert_eq!(count(&after, "get_data", "error") - count(&before, "get_data", "error"), 1);
    assert_eq!(count(&after, "create", "ok") - count(&before, "create", "ok"), 1);
    fw.close();
}
