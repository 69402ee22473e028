//! The line a lost hold logs names the lock in its own fields: a subscriber at INFO (which
//! disables the `DEBUG` hold span) still sees the path, kind, token and reason; so does the
//! line of a lost leadership.

use std::io::Write;
use std::sync::{Arc, Mutex};

use zk_recipes::{LeaderLatch, LossReason};
use zk_recipes_testing::fixtures;

use super::{Kind, Lock, WAIT};

/// Everything the subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An INFO subscriber, the default of this thread while the guard lives, capturing its text.
fn capture_at_info() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

/// The first captured line that contains `marker`.
fn line_with(captured: &Captured, marker: &str) -> String {
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    text.lines()
        .find(|line| line.contains(marker))
        .unwrap_or_else(|| panic!("no {marker:?} line in:\n{text}"))
        .to_string()
}

// current-thread runtime: the monitor that tells of the loss runs on the thread whose default
// subscriber is the capturing one
#[tokio::test(flavor = "current_thread")]
async fn a_subscriber_at_info_sees_the_lost_locks_path_in_the_loss_line() {
    let (captured, _default) = capture_at_info();
    let cs = fixtures::shared_server().await;
    let (fw, other) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("loss-line"));
    let hold = Lock::new(Kind::Mutex, &fw, &path).acquire().await;
    other.delete(hold.path()).await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, hold.lost()).await.unwrap(), LossReason::NodeDeleted);

    let line = line_with(&captured, "hold LOST");
    assert!(line.contains(hold.path()), "the node's path: {line}");
    assert!(line.contains("kind=\"mutex\"") || line.contains("kind=mutex"), "the kind: {line}");
    assert!(line.contains(&format!("token={}", hold.fencing_token())), "the token: {line}");
    assert!(line.contains("reason=") && line.contains("WARN"), "the reason, at WARN: {line}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_subscriber_at_info_sees_the_lost_leaderships_path_in_the_loss_line() {
    let (captured, _default) = capture_at_info();
    let cs = fixtures::shared_server().await;
    let (fw, other) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("loss-line-latch"));
    let latch = LeaderLatch::new(&fw, &path, "replica-1").unwrap();
    latch.start().await.unwrap();
    let leadership = tokio::time::timeout(WAIT, latch.await_leadership()).await.unwrap().unwrap();
    other.delete(leadership.node()).await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, leadership.lost()).await.unwrap(), LossReason::NodeDeleted);
    // the latch's task logs the loss as it sees it: wait for the line
    fixtures::eventually(WAIT, "the loss line", || async {
        String::from_utf8(captured.0.lock().unwrap().clone()).unwrap().contains("leadership LOST")
    })
    .await;

    let line = line_with(&captured, "leadership LOST");
    assert!(line.contains(&path), "the latch's path: {line}");
    assert!(line.contains("kind=\"latch\"") || line.contains("kind=latch"), "the kind: {line}");
    assert!(line.contains(&format!("token={}", leadership.fencing_token())), "the token: {line}");
    assert!(line.contains("session=") && line.contains("reason=") && line.contains("WARN"), "{line}");
    latch.close().await.unwrap();
}

/// Every public hold watches its node from the moment it holds: `is_lost()` turns true when
/// another client deletes the node, with no `lost()` (or `revoked()`) ever called; and `loss()`
/// says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn is_lost_sees_a_deleted_node_without_lost_being_called() {
    let cs = fixtures::shared_server().await;
    let (fw, other) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let path = format!("/{}", fixtures::unique("exact-loss"));
    let rw = zk_recipes::InterProcessReadWriteLock::new(&fw, &format!("{path}-rw")).unwrap();
    let read = rw.read_lock().acquire().await.unwrap();
    let lease =
        zk_recipes::InterProcessSemaphoreV2::new(&fw, &format!("{path}-sem"), 2).unwrap().acquire().await.unwrap();
    let mut holds: Vec<(&str, &zk_recipes::HeldNode)> = vec![("read", &read), ("lease", &lease)];
    let kinds: Vec<zk_recipes::HeldLock> = {
        let mut v = Vec::new();
        for kind in super::KINDS {
            v.push(Lock::new(kind, &fw, &format!("{path}-{kind:?}")).acquire().await);
        }
        v
    };
    for held in &kinds {
        holds.push(("kind", held));
    }
    for (name, held) in &holds {
        assert!(!held.is_lost(), "{name}: lost before anything happened");
        other.delete(held.path()).await.unwrap();
    }
    for (name, held) in &holds {
        fixtures::eventually(WAIT, "is_lost() after the deletion", || async { held.is_lost() }).await;
        assert_eq!(held.loss(), Some(LossReason::NodeDeleted), "{name}");
    }
    drop(kinds);
    drop((read, lease));
}

/// A release (plain, by drop, committed with a transaction, a downgrade's write node) deletes
/// our node while its watch is set: that is no loss, and logs no loss line.
#[tokio::test(flavor = "current_thread")]
async fn a_release_of_ours_is_no_loss() {
    let (captured, _default) = capture_at_info();
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("no-loss"));
    for kind in super::KINDS {
        let lock = Lock::new(kind, &fw, &format!("{path}-{kind:?}"));
        lock.acquire().await.release().await.unwrap();
        drop(lock.acquire().await);
    }
    let mutex = zk_recipes::InterProcessMutex::new(&fw, &format!("{path}-txn")).unwrap();
    let guard = mutex.acquire().await.unwrap();
    guard
        .commit_and_release(fw.transaction().create(&format!("{path}-made"), b"", zk_recipes::CreateMode::Persistent))
        .await
        .unwrap();
    let rw = zk_recipes::InterProcessReadWriteLock::new(&fw, &format!("{path}-rw")).unwrap();
    let read = rw.write_lock().acquire().await.unwrap().downgrade().await.unwrap();
    read.release().await.unwrap();
    // the watches' deletion events arrive after the releases answered: give them time
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(!text.contains("hold LOST"), "a release was reported as a loss:\n{text}");
}
