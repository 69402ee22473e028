//! Additions of several sessions written by one write: an addition that queues names its delta
//! in its queue node, and the turn holder ahead of it writes it with its own, creating its
//! marker. Exactly once also when a queued session expires or closes.
//!
//! The tests hold the counter's queue themselves (an `InterProcessMutex` on `<path>/_lock_`,
//! the same queue) and raise the gate, so that the sessions' next additions queue, in a known
//! order, behind a head that lets go when the test says.

use std::time::Duration;

use tokio::task::JoinHandle;
use zk_recipes::counter::AtomicNumber;
use zk_recipes::counter::DistributedAtomicNumber;
use zk_recipes::{AtomicValue, Framework, InterProcessMutex, LockGuard};
use zk_recipes_testing::{expire_session, fixtures, ProxyMode, TcpProxy};

const DELTAS: [i64; 3] = [10, 200, 3000];

struct Setup<T: AtomicNumber> {
    /// In front of the second session's server, when asked for.
    proxy: Option<TcpProxy>,
    direct: Framework,
    path: String,
    sessions: Vec<Framework>,
    counters: Vec<DistributedAtomicNumber<T>>,
    /// What session `i` adds.
    deltas: Vec<T>,
}

/// Three sessions on one counter of `i64`s adding [`DELTAS`].
async fn setup(name: &str, proxied: bool) -> Setup<i64> {
    setup_with(name, proxied, DELTAS.to_vec()).await
}

async fn setup_with<T: AtomicNumber>(name: &str, proxied: bool, deltas: Vec<T>) -> Setup<T> {
    let cs = fixtures::shared_server().await;
    let direct = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique(name));
    let proxy = match proxied {
        true => Some(TcpProxy::start(&cs).await.unwrap()),
        false => None,
    };
    let mut sessions = Vec::new();
    let mut counters = Vec::new();
    for i in 0..deltas.len() {
        let fw = match (&proxy, i) {
            (Some(proxy), 1) => fixtures::framework(proxy.connect_string()).await,
            _ => fixtures::framework(&cs).await,
        };
        let counter = DistributedAtomicNumber::<T>::new(&fw, &path).unwrap();
        // one addition each: the node and the gate exist, each session knows the gate
        counter.increment().await.unwrap();
        sessions.push(fw);
        counters.push(counter);
    }
    Setup { proxy, direct, path, sessions, counters, deltas }
}

impl<T: AtomicNumber> Setup<T> {
    fn queue(&self) -> String {
        format!("{}/_lock_", self.path)
    }

    async fn queued(&self) -> Vec<String> {
        self.direct.children(&self.queue()).await.unwrap_or_default()
    }

    async fn version(&self) -> i32 {
        self.direct.get_data(&self.path).await.unwrap().1.version
    }

    /// Holds the queue's head and raises the gate: every addition from now on queues.
    async fn hold_the_queue(&self) -> LockGuard {
        let guard = InterProcessMutex::new(&self.direct, &self.queue()).unwrap().acquire().await.unwrap();
        self.direct.set_data(&format!("{}/_gate_", self.path), &[], None).await.unwrap();
        guard
    }

    /// Session `i` adds `deltas[i]`, once its addition is in the queue (behind those before).
    async fn add_queued(&self, i: usize) -> JoinHandle<zk_recipes::Result<AtomicValue<T>>> {
        let before = self.queued().await.len();
        let counter = self.counters[i].clone();
        let delta = self.deltas[i];
        let task = tokio::spawn(async move { counter.add(delta).await });
        fixtures::eventually(Duration::from_secs(10), format!("addition {i} queued"), || async {
            self.queued().await.len() == before + 1
        })
        .await;
        task
    }

    /// Every session's addition queued, in session order.
    async fn add_all_queued(&self) -> Vec<JoinHandle<zk_recipes::Result<AtomicValue<T>>>> {
        let mut tasks = Vec::new();
        for i in 0..self.deltas.len() {
            tasks.push(self.add_queued(i).await);
        }
        tasks
    }

    /// No marker and no queue node left once every handle is closed — but the last marker of
    /// a session closed before its handle (`closed`), which stays as a crashed process's does.
    async fn close_and_check_nothing_left(self, closed: Option<usize>) {
        for (i, c) in self.counters.iter().enumerate() {
            if Some(i) != closed {
                c.close().await.unwrap();
            }
        }
        let sessions: Vec<&Framework> = self.sessions.iter().collect();
        fixtures::settle(&sessions).await;
        let mut left = self.direct.children(&self.path).await.unwrap();
        left.retain(|c| c != "_lock_" && c != "_gate_");
        assert_eq!(left.len(), usize::from(closed.is_some()), "markers left: {left:?}");
        assert!(self.queued().await.is_empty(), "queue nodes left");
        for fw in self.sessions {
            fw.close();
        }
    }
}

/// The additions' results, each within 20 s.
async fn finished<T: AtomicNumber>(tasks: Vec<JoinHandle<zk_recipes::Result<AtomicValue<T>>>>) -> Vec<AtomicValue<T>> {
    let mut results = Vec::new();
    for t in tasks {
        results.push(fixtures::within(Duration::from_secs(20), t).await.unwrap().unwrap());
    }
    results
}

fn check<T: AtomicNumber>(r: &AtomicValue<T>, before: T, delta: T, by_another: bool, who: &str) {
    assert!(r.succeeded, "{who}: {r:?}");
    assert_eq!(
        (r.pre_value, r.post_value),
        (before, before.wrapping_add(delta)),
        "{who}: its own slice, in queue order"
    );
    assert_eq!(r.stats.applied_by_another, by_another, "{who}: written by another session's write: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_additions_of_three_sessions_are_written_by_one_write() {
    let s = setup("joint-three", false).await;
    let guard = s.hold_the_queue().await;
    let version = s.version().await;
    let tasks = s.add_all_queued().await;
    let names = s.queued().await;
    for d in DELTAS {
        assert_eq!(names.iter().filter(|n| n.contains(&format!(".{d}.lock-"))).count(), 1, "{d} named in {names:?}");
    }
    assert_eq!(s.version().await, version, "nothing written while the queue is held");
    guard.release().await.unwrap();
    let results = finished(tasks).await;
    // the first in the queue wrote its own addition and the two behind it, in one write
    check(&results[0], 3, 10, false, "the turn holder");
    check(&results[1], 13, 200, true, "the second");
    check(&results[2], 213, 3000, true, "the third");
    assert_eq!(s.version().await, version + 1, "one write for the three sessions");
    assert_eq!(s.counters[0].get().await.unwrap(), 3213);
    // and each session goes on from there
    let next = s.counters[2].increment().await.unwrap();
    assert_eq!((next.pre_value, next.post_value), (3213, 3214));
    s.close_and_check_nothing_left(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_addition_whose_session_expires_or_closes_is_written_once_or_not_at_all() {
    let s = setup("joint-faults", false).await;
    let guard = s.hold_the_queue().await;
    let version = s.version().await;
    let first = s.add_queued(0).await;
    let expiring = s.add_queued(1).await;
    let closing = s.add_queued(2).await;
    // the third session closes: its node goes, and nobody may write its addition after that;
    // its caller cannot tell whether a turn holder wrote it before
    s.sessions[2].close();
    let closed = fixtures::within(Duration::from_secs(20), closing).await.unwrap();
    assert!(closed.is_err(), "{closed:?}");
    fixtures::eventually(Duration::from_secs(10), "the closed session's node deleted", || async {
        !s.queued().await.iter().any(|n| n.contains(".3000.lock-"))
    })
    .await;
    // the second session expires while queued: it queues again in its new session
    let before = s.queued().await;
    expire_session(&s.sessions[1]).await.unwrap();
    fixtures::eventually(Duration::from_secs(20), "the expired session's addition queued again", || async {
        let now = s.queued().await;
        now.len() == 3 && now.iter().any(|n| n.contains(".200.lock-") && !before.contains(n))
    })
    .await;
    assert_eq!(s.version().await, version, "nothing written while the queue is held");
    guard.release().await.unwrap();
    let first = fixtures::within(Duration::from_secs(20), first).await.unwrap().unwrap();
    let expired = fixtures::within(Duration::from_secs(20), expiring).await.unwrap().unwrap();
    check(&first, 3, 10, false, "the turn holder");
    check(&expired, 13, 200, true, "the expired session's addition, queued again");
    assert_eq!(s.version().await, version + 1, "one write");
    assert_eq!(s.counters[0].get().await.unwrap(), 213, "the closed session's addition was not applied");
    s.close_and_check_nothing_left(Some(2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_session_that_hears_nothing_while_it_is_written_learns_its_values_from_its_marker() {
    let s = setup("joint-deaf", true).await;
    let proxy = s.proxy.as_ref().unwrap();
    let guard = s.hold_the_queue().await;
    let version = s.version().await;
    let first = s.add_queued(0).await;
    let deaf = s.add_queued(1).await;
    // the second session's server answers into the void: its queue node's deletion, and
    // whatever it asks, go unheard
    proxy.set_mode(ProxyMode::DropReplies);
    guard.release().await.unwrap();
    let first = fixtures::within(Duration::from_secs(20), first).await.unwrap().unwrap();
    check(&first, 3, 10, false, "the turn holder");
    assert_eq!(s.version().await, version + 1, "one write for both");
    assert_eq!(s.counters[0].get().await.unwrap(), 213, "the deaf session's addition is written");
    assert!(!deaf.is_finished(), "the deaf session cannot know yet");
    // it hears again (a new connection, the same session) and must neither drop nor repeat it
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    let deaf = fixtures::within(Duration::from_secs(30), deaf).await.unwrap().unwrap();
    check(&deaf, 13, 200, true, "the deaf session");
    assert_eq!(s.counters[1].get().await.unwrap(), 213, "written once");
    assert_eq!(s.version().await, version + 1, "and by one write");
    s.close_and_check_nothing_left(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_integer_additions_are_written_by_one_write_and_wrap_as_java_does() {
    // DistributedAtomicInteger: 4-byte values, queue nodes named `add4`, and a sum that wraps
    // past i32::MAX in the middle of the joined additions
    let deltas = vec![10, 200, -3000];
    let s = setup_with::<i32>("joint-int", false, deltas.clone()).await;
    let start = i32::MAX - 100;
    s.counters[0].force_set(start).await.unwrap();
    let guard = s.hold_the_queue().await;
    let version = s.version().await;
    let tasks = s.add_all_queued().await;
    let names = s.queued().await;
    assert_eq!(names.iter().filter(|n| n.contains("add4.")).count(), 3, "4-byte additions named in {names:?}");
    guard.release().await.unwrap();
    let results = finished(tasks).await;
    let second = start.wrapping_add(10);
    let third = second.wrapping_add(200);
    assert!(third < 0, "the second addition wraps past i32::MAX");
    check(&results[0], start, 10, false, "the turn holder");
    check(&results[1], second, 200, true, "the second");
    check(&results[2], third, -3000, true, "the third");
    assert_eq!(s.version().await, version + 1, "one write for the three sessions");
    let data = s.direct.get_data(&s.path).await.unwrap().0;
    assert_eq!(data, third.wrapping_add(-3000).to_be_bytes().to_vec(), "4 bytes, big-endian, as Curator writes them");
    s.close_and_check_nothing_left(None).await;
}
