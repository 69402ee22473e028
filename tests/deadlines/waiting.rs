//! Calls already waiting when the server freezes: each timed wait (locks, semaphore leases and
//! permits, barriers, the double barrier's enter and leave, queue takes) has its node or its
//! watch on the server when it stops answering, so its deadline passes during the freeze and
//! its withdraw (deleting its node, dropping its watch) runs against the frozen server. Each
//! returns by its deadline + 1 s, and once the server answers again nothing of them is left:
//! no node, no watch, no semaphore slot; and the recipes work. Frozen for longer than the
//! operation timeout within the session, for longer than the session (which expires), and on
//! a 3-node ensemble whose follower under the client freezes until the session moves to the
//! other follower (with writes of abandoned calls in flight on the frozen one).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use zk_recipes::queue::QueueBuilder;
use zk_recipes::{
    ConnectionState, DistributedBarrier, DistributedDoubleBarrier, DistributedQueue, Error, Framework, HeldLock,
    InterProcessLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, Lease,
    SimpleDistributedQueue,
};
use zk_recipes_testing::{fixtures, four_letter_word, TestingCluster};

use super::leaks::{self, emptied, PROMPTLY};
use super::{SLACK, TIMEOUT, WAIT};

/// How long each waiting call waits: it waits before the freeze, its deadline passes during it.
const WAITED: Duration = Duration::from_secs(2);

fn at(base: &str, name: &str) -> String {
    format!("{base}/{name}")
}

fn safe_queue(fw: &Framework, path: &str) -> DistributedQueue {
    QueueBuilder::new(fw, path).lock_path(&format!("{path}-locks")).build().unwrap()
}

/// What the holder holds while our calls wait, each recipe at a path of its own under `base`;
/// and our member of a double barrier both entered (ours leaves, theirs does not).
struct Scene {
    held: Vec<HeldLock>,
    leases: Vec<Lease>,
    /// The holder's member of the double barrier ours leaves.
    member: DistributedDoubleBarrier,
    /// Ours, until its leave is called.
    leaving: Option<DistributedDoubleBarrier>,
}

impl Scene {
    async fn new(holder: &Framework, fw: &Framework, base: &str) -> Scene {
        let locks: [Arc<dyn InterProcessLock>; 2] = [
            Arc::new(InterProcessMutex::new(holder, &at(base, "mutex")).unwrap()),
            Arc::new(InterProcessReadWriteLock::new(holder, &at(base, "rw")).unwrap().write_lock()),
        ];
        let mut held = Vec::new();
        for lock in locks {
            held.push(lock.acquire().await.expect("the holder's lock"));
        }
        let mut leases = Vec::new();
        for name in ["semaphore", "permit"] {
            leases.push(InterProcessSemaphoreV2::new(holder, &at(base, name), 1).unwrap().acquire().await.unwrap());
        }
        DistributedBarrier::new(holder, &at(base, "barrier")).unwrap().set_barrier().await.unwrap();
        let member = DistributedDoubleBarrier::new(holder, &at(base, "leave"), 2).unwrap();
        let ours = DistributedDoubleBarrier::new(fw, &at(base, "leave"), 2).unwrap();
        let (a, b) = tokio::join!(member.enter_timeout(WAIT), ours.enter_timeout(WAIT));
        a.unwrap();
        b.unwrap();
        Scene { held, leases, member, leaving: Some(ours) }
    }

    /// Releases what the holder holds (a hold the freeze took from it reports its loss; its
    /// node is gone or goes all the same), and the holder's member leaves.
    async fn release(self) {
        for held in self.held {
            let _ = held.release().await;
        }
        for lease in self.leases {
            let _ = lease.release().await;
        }
        let _ = self.member.leave_timeout(WAIT).await;
    }
}

/// What shows on the server that a call waits: its watch on a node (`wchp`: a data watch of
/// our session on a path that starts with this).
struct Probe(String);

impl Probe {
    /// Whether `wchp` (`out`) shows a watch of `session` on a path that starts with ours.
    fn shows(&self, out: &str, session: i64) -> bool {
        let session = format!("0x{session:x}");
        let mut under = false;
        for line in out.lines() {
            match line.strip_prefix('\t') {
                Some(watcher) if under && watcher.trim() == session => return true,
                Some(_) => {}
                None => under = line.starts_with(self.0.as_str()),
            }
        }
        false
    }
}

/// A call running in a task of its own: how long it took, how it came back.
type Run = JoinHandle<(Duration, Result<(), Error>)>;

fn run<F>(call: F) -> Run
where
    F: Future<Output = Result<(), Error>> + Send + 'static,
{
    tokio::spawn(async move {
        let started = Instant::now();
        let outcome = call.await;
        (started.elapsed(), outcome)
    })
}

/// Starts a call (when called).
type Start = Box<dyn FnOnce() -> Run + Send>;

/// One waiting call.
struct Wait {
    name: &'static str,
    run: Run,
}

/// Starts every timed wait of `fw` under `base`, each for [`WAITED`], and returns once each
/// waits: its watch is on the server (`cs`, the server `fw` is connected to).
async fn start_waiting(fw: &Framework, base: &str, cs: &str, scene: &mut Scene) -> Vec<Wait> {
    let mutex = InterProcessMutex::new(fw, &at(base, "mutex")).unwrap();
    let rw = InterProcessReadWriteLock::new(fw, &at(base, "rw")).unwrap();
    let semaphore = InterProcessSemaphoreV2::new(fw, &at(base, "semaphore"), 1).unwrap();
    let permits = InterProcessSemaphoreV2::new(fw, &at(base, "permit"), 1).unwrap();
    let barrier = DistributedBarrier::new(fw, &at(base, "barrier")).unwrap();
    let entering = DistributedDoubleBarrier::new(fw, &at(base, "double"), 2).unwrap();
    let leaving = scene.leaving.take().expect("one leave");
    let queue = SimpleDistributedQueue::new(fw, &at(base, "queue")).unwrap();
    let safe = safe_queue(fw, &at(base, "safe"));
    let session = fw.status().session_id;
    // each watches a node: the holder's, the barrier, `ready`, the other member
    let watching = [
        ("mutex acquire_timeout", "mutex/", run(async move { mutex.acquire_timeout(WAITED).await.map(drop) })),
        ("read_timeout", "rw/", run(async move { rw.read_timeout(WAITED).await.map(drop) })),
        (
            "semaphore acquire_timeout",
            "semaphore/leases/",
            run(async move { semaphore.acquire_timeout(WAITED).await.map(drop) }),
        ),
        (
            "acquire_with_expiry_timeout",
            "permit/leases/",
            run(async move { permits.acquire_with_expiry_timeout(Duration::from_secs(120), WAITED).await.map(drop) }),
        ),
        (
            "barrier wait_on_barrier_timeout",
            "barrier",
            run(async move { barrier.wait_on_barrier_timeout(WAITED).await }),
        ),
        ("double barrier enter_timeout", "double/ready", run(async move { entering.enter_timeout(WAITED).await })),
        ("double barrier leave_timeout", "leave/", run(async move { leaving.leave_timeout(WAITED).await })),
    ];
    let mut waits = Vec::new();
    for (name, under, run) in watching {
        // the leave watches the holder's member
        let under = if under == "leave/" { scene.member.member_path().to_string() } else { at(base, under) };
        let probe = Probe(under);
        fixtures::eventually(WAIT, format!("{name} waits"), || async {
            four_letter_word(cs, "wchp").await.is_ok_and(|out| probe.shows(&out, session))
        })
        .await;
        waits.push(Wait { name, run });
    }
    // a take watches the queue's children, which `wchp` does not show: each is started alone,
    // and waits once the server's count of watches (children watches included) rose
    let takes: [(&'static str, Start); 2] = [
        ("queue take_timeout", Box::new(move || run(async move { queue.take_timeout(WAITED).await.map(drop) }))),
        (
            "queue take_safe_timeout",
            Box::new(move || run(async move { safe.take_safe_timeout(WAITED).await.map(drop) })),
        ),
    ];
    for (name, start) in takes {
        let before = all_watches(cs).await;
        let run = start();
        fixtures::eventually(WAIT, format!("{name} waits"), || async { all_watches(cs).await > before }).await;
        waits.push(Wait { name, run });
    }
    waits
}

/// How the calls came back: those late (past `bound` + 1 s) or with another error than a
/// timeout (empty: all on time).
async fn finish(runs: impl IntoIterator<Item = (&'static str, Run)>, bound: Duration) -> Vec<String> {
    let mut late = Vec::new();
    for (name, run) in runs {
        let (took, outcome) = run.await.expect("a call panicked");
        if took > bound + SLACK || !outcome.as_ref().is_err_and(Error::is_timeout) {
            late.push(format!("{name}: {outcome:?} after {took:?}"));
        }
    }
    late
}

/// [`finish`] of waiting calls.
async fn finish_waits(waits: Vec<Wait>) -> Vec<String> {
    finish(waits.into_iter().map(|w| (w.name, w.run)), WAITED).await
}

/// Once the server answers again: `fw` works, and after the holder let go nothing of the
/// abandoned calls is left under `base` (nodes, semaphore slots) and each recipe is ours at
/// once.
async fn recovered(fw: &Framework, holder: &Framework, base: &str, scene: Scene) {
    let free = InterProcessMutex::new(fw, &at(base, "free")).unwrap();
    free.acquire_timeout(WAIT).await.expect("the framework works after the freeze").release().await.unwrap();
    scene.release().await;
    fixtures::eventually(WAIT, "no node of the abandoned calls left", || async {
        fixtures::ephemerals(holder, base).await.unwrap().is_empty()
    })
    .await;
    emptied(holder, &at(base, "permit/leases"), "semaphore slots").await;
    let mutex = InterProcessMutex::new(fw, &at(base, "mutex")).unwrap();
    mutex.acquire_timeout(PROMPTLY).await.expect("the mutex is ours at once").release().await.unwrap();
    let semaphore = InterProcessSemaphoreV2::new(fw, &at(base, "semaphore"), 1).unwrap();
    semaphore.acquire_timeout(PROMPTLY).await.expect("the lease is ours at once").release().await.unwrap();
    emptied(holder, &at(base, "double"), "double barrier members").await;
    emptied(holder, &at(base, "leave"), "double barrier members").await;
}

/// The calls wait on a standalone server that freezes for `freeze`; `fw` has `session`.
async fn frozen_with_calls_waiting(session: Duration, freeze: Duration) -> zk_recipes::SessionStatus {
    let server = leaks::server().await;
    let cs = server.connect_string().to_string();
    let fw =
        fixtures::framework_with(&cs, |b| b.session_timeout(session).operation_timeout(leaks::OPERATION_TIMEOUT)).await;
    let holder = leaks::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("waiting"));
    let mut scene = Scene::new(&holder, &fw, &base).await;
    let quiet = all_watches(&cs).await;
    let waits = start_waiting(&fw, &base, &cs, &mut scene).await;
    let before = fw.status();

    server.pause().expect("SIGSTOP");
    leaks::stopped(server.pid());
    let frozen = Instant::now();
    let late = finish_waits(waits).await;
    tokio::time::sleep(freeze.saturating_sub(frozen.elapsed())).await;
    server.resume().expect("SIGCONT");
    assert!(late.is_empty(), "calls not back by their deadline + 1 s, or with the wrong error: {late:#?}");

    recovered(&fw, &holder, &base, scene).await;
    fixtures::eventually(WAIT, "no watch of the abandoned calls left", || async { all_watches(&cs).await <= quiet })
        .await;
    let after = fw.status();
    assert!(fw.shutdown(WAIT).await.is_ok() && holder.shutdown(WAIT).await.is_ok());
    server.stop().await;
    assert!(after.suspensions > before.suspensions, "the freeze outlasted the client's patience");
    after
}

/// Frozen longer than the operation timeout (and the client's patience with a silent
/// connection), within the session: the withdraws fail under the freeze and finish in the
/// background once the server answers, in the same session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_when_the_server_freezes_leave_nothing() {
    let after = frozen_with_calls_waiting(leaks::SESSION, Duration::from_secs(4)).await;
    assert_eq!(after.losses, 0, "the session outlived the freeze");
}

/// Frozen longer than the session: it expires, and the calls' nodes go with it; the framework
/// builds a new session, where nothing of them is left either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_when_the_server_freezes_past_the_session_leave_nothing() {
    let after = frozen_with_calls_waiting(Duration::from_secs(4), Duration::from_secs(6)).await;
    assert_eq!(after.losses, 1, "the session did not outlive the freeze");
}

/// A 3-node ensemble: the follower the client is connected to freezes with calls waiting and
/// writes of abandoned calls in flight (a safe take's item lock, a TTL contender); the client
/// moves its session to the other follower. Nothing of the calls is left once the frozen
/// follower resumes (its requests from the old connection are dropped, or refused as from a
/// moved session), and what they waited for is another participant's at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_or_in_flight_when_the_session_moves_leave_nothing() {
    let cluster =
        TestingCluster::builder().extended_types(true).max_session_timeout(leaks::SESSION).start().await.unwrap();
    let leader = cluster.wait_for_leader(WAIT).await.expect("a leader");
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    let both = followers.iter().map(|&i| cluster.server_connect_string(i).unwrap()).collect::<Vec<_>>().join(",");
    // the client drops a silent connection after 2.4 s, long before its 6 s session ends
    let fw = fixtures::framework_with(&both, |b| {
        b.session_timeout(Duration::from_secs(6)).operation_timeout(leaks::OPERATION_TIMEOUT)
    })
    .await;
    let session = fw.status().session_id;
    let ours = fixtures::server_of_session(&cluster, session).await.expect("our server");
    let theirs = *followers.iter().find(|&&i| i != ours).unwrap();
    let (cs, other_cs) = (cluster.server_connect_string(ours).unwrap(), cluster.server_connect_string(theirs).unwrap());
    let holder = leaks::framework(other_cs).await;
    let base = format!("/{}", fixtures::unique("moving"));
    let mut scene = Scene::new(&holder, &fw, &base).await;
    // a safe take whose next item is known without a listing, and a TTL mutex held elsewhere
    let (taking, giving) = (safe_queue(&fw, &at(base.as_str(), "items")), safe_queue(&holder, &at(&base, "items")));
    giving.put(&b"first".to_vec()).await.unwrap();
    giving.put(&b"second".to_vec()).await.unwrap();
    taking.take_safe().await.unwrap().complete().await.unwrap();
    let ttl =
        InterProcessMutex::new(&fw, &at(&base, "ttl")).unwrap().with_server_ttl(Duration::from_secs(120)).unwrap();
    ttl.acquire_timeout(WAIT).await.unwrap().release().await.unwrap();
    let ttl_held = InterProcessMutex::new(&holder, &at(&base, "ttl")).unwrap().acquire().await.unwrap();
    let quiet = total_watches(&cluster).await;
    let waits = start_waiting(&fw, &base, cs, &mut scene).await;
    let before = fw.status();

    leaks::freeze(&fw, cluster.pid(ours), || cluster.pause(ours)).await;
    let in_flight = [
        ("in-flight take_safe_timeout", run(async move { taking.take_safe_timeout(TIMEOUT).await.map(drop) })),
        ("in-flight TTL acquire_timeout", run(async move { ttl.acquire_timeout(TIMEOUT).await.map(drop) })),
    ];
    let late = finish_waits(waits).await;
    let mut status = fw.status_watch();
    let moved = status.wait_for(|s| s.suspensions > before.suspensions && s.state.is_connected());
    tokio::time::timeout(WAIT, moved).await.expect("the session moved").unwrap();
    drop(status);
    let late_in_flight = finish(in_flight, TIMEOUT).await;
    let cons = four_letter_word(other_cs, "cons").await.unwrap();
    cluster.resume(ours).expect("SIGCONT");
    assert!(cons.contains(&format!("sid=0x{session:x}")), "the session moved to the other follower: {cons}");
    assert!(late.is_empty(), "calls not back by their deadline + 1 s, or with the wrong error: {late:#?}");
    assert!(late_in_flight.is_empty(), "{late_in_flight:#?}");
    let after = fw.status();
    assert_eq!((after.session_id, after.losses), (session, before.losses), "the session moved, not lost");
    assert_ne!(after.state, ConnectionState::Lost);

    let delivery = giving.take_safe_timeout(PROMPTLY).await.expect("the other consumer takes the item at once");
    assert_eq!(delivery.items(), [b"second".to_vec()]);
    delivery.complete().await.unwrap();
    emptied(&holder, &at(&base, "items-locks"), "item locks").await;
    ttl_held.release().await.unwrap();
    let next = InterProcessMutex::new(&holder, &at(&base, "ttl")).unwrap();
    next.acquire_timeout(PROMPTLY).await.expect("the TTL mutex is free at once").release().await.unwrap();
    recovered(&fw, &holder, &base, scene).await;
    emptied(&holder, &at(&base, "ttl"), "TTL contenders").await;
    fixtures::eventually(WAIT, "no watch of the abandoned calls left", || async {
        total_watches(&cluster).await <= quiet
    })
    .await;
    let _ = fw.shutdown(WAIT).await;
    let _ = holder.shutdown(WAIT).await;
}

/// The watches of every server of `cluster` (`wchs`).
async fn total_watches(cluster: &TestingCluster) -> usize {
    let mut total = 0;
    for i in 0..cluster.len() {
        total += all_watches(cluster.server_connect_string(i).unwrap()).await;
    }
    total
}

/// The server's count of watches, children watches included (`mntr`'s `zk_watch_count`;
/// `wchs` counts data watches only).
async fn all_watches(cs: &str) -> usize {
    let out = four_letter_word(cs, "mntr").await.expect("mntr");
    out.lines()
        .find_map(|l| l.strip_prefix("zk_watch_count"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no watch count in {out:?}"))
}
