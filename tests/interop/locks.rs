//! Curator 5.4 and our locks contend on the same paths and exclude or count each other.
//!
//! One Curator JVM serves the whole file (`CuratorPeer::shared`); every Java participant is a
//! separate client id (its own `CuratorFramework`, its own session) inside it. All tests share
//! the binary's ZooKeeper server, each under its own unique path. Run with `--nocapture` to see
//! hand-over latencies and the contention summaries.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zk_recipes::ZooKeeperError;

use tokio::task::JoinHandle;
use zk_recipes::{
    Error, Framework, HeldLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, RetryNTimes,
};
use zk_recipes_testing::curator::CuratorPeer;
use zk_recipes_testing::fixtures;

/// A timeout that must pass while the other side holds.
const SHORT: Duration = Duration::from_millis(300);
/// A timeout that must never pass.
const LONG: Duration = Duration::from_secs(30);
/// How long a hand-over (release on one side → grant on the other) may take on a loaded CI box.
const HANDOVER: Duration = Duration::from_secs(3);

// ------------------------------------------------------------------------------------------
// Set-up helpers

async fn framework(cs: &str) -> Framework {
    fixtures::framework_with(cs, |builder| {
        builder.session_timeout(Duration::from_secs(10)).retry_policy(RetryNTimes::new(10, Duration::from_millis(50)))
    })
    .await
}

/// A new Curator client (a Java participant with its own session); returns its client id.
async fn java(peer: &CuratorPeer, cs: &str) -> String {
    let cid = fixtures::unique("java");
    peer.connect(&cid, cs).await.expect("Curator client connects");
    cid
}

fn unique_path(prefix: &str) -> String {
    format!("/{}", fixtures::unique(prefix))
}

/// How long a whole test may take.
const TEST_LIMIT: Duration = Duration::from_secs(120);

/// What most tests start from: the binary's server, the Curator peer, a framework of ours and
/// a unique recipe path.
struct Scene {
    cs: String,
    peer: Arc<CuratorPeer>,
    fw: Framework,
    path: String,
}

async fn scene(prefix: &str) -> Scene {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let fw = framework(&cs).await;
    Scene { path: unique_path(prefix), cs, peer, fw }
}

/// A new Curator client (see [`java`]) and its session id.
async fn java_with_session(peer: &CuratorPeer, cs: &str) -> (String, i64) {
    let cid = java(peer, cs).await;
    let session = peer.session_id(&cid).await.unwrap();
    (cid, session)
}

/// How most tests end: once the background deletes of `fws` are done, every dir of `empty` has
/// no children left; then the Curator clients `javas` and the frameworks `fws` are closed.
async fn finish(peer: &CuratorPeer, javas: &[&str], fws: &[&Framework], empty: &[&str]) {
    fixtures::settle(fws).await;
    for dir in empty {
        assert!(children(fws[0], dir).await.is_empty(), "nothing left in {dir}");
    }
    for cid in javas {
        peer.close(cid).await.unwrap();
    }
    for fw in fws {
        fw.close();
    }
}

/// What a Curator participant acquires.
#[derive(Debug, Clone, Copy)]
enum Java {
    Mutex,
    SemaphoreMutex,
    /// `count` leases of a semaphore with `max` leases.
    Semaphore {
        max: u32,
        count: u32,
    },
    Read,
    Write,
}

impl Java {
    /// Acquires through Curator client `cid` as its holder `hid`: whether it was granted within
    /// `timeout`.
    async fn acquire(self, peer: &CuratorPeer, cid: &str, hid: &str, path: &str, timeout: Duration) -> bool {
        match self {
            Java::Mutex => peer.mutex_acquire(cid, hid, path, timeout).await,
            Java::SemaphoreMutex => peer.semmutex_acquire(cid, hid, path, timeout).await,
            Java::Semaphore { max, count } => peer.sem_acquire(cid, hid, path, max, count, timeout).await,
            Java::Read => peer.rw_read_acquire(cid, hid, path, timeout).await,
            Java::Write => peer.rw_write_acquire(cid, hid, path, timeout).await,
        }
        .unwrap()
    }

    /// The same acquire with a `LONG` timeout, owning its arguments (to be spawned).
    fn waiter(self, peer: &Arc<CuratorPeer>, cid: &str, hid: &str, path: &str) -> impl Future<Output = bool> + use<> {
        let (peer, cid, hid, path) = (peer.clone(), cid.to_string(), hid.to_string(), path.to_string());
        async move { self.acquire(&peer, &cid, &hid, &path, LONG).await }
    }
}

/// Runs `acquire` on a clone of `lock` in a task of its own.
fn spawn_ours<L: Clone, Fut>(lock: &L, acquire: impl FnOnce(L) -> Fut) -> JoinHandle<Fut::Output>
where
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    tokio::spawn(acquire(lock.clone()))
}

/// `f`'s output and when it came (to measure a hand-over from inside the waiting task).
async fn stamped<F: Future>(f: F) -> (F::Output, Instant) {
    let out = f.await;
    (out, Instant::now())
}

/// Waits until `dir` has `n` children.
async fn queued(fw: &Framework, dir: &str, n: usize, what: &str) {
    fixtures::eventually(LONG, what, || async { count(fw, dir).await == n }).await;
}

/// Asserts that `task` still waits `SHORT` from now.
async fn still_waits<T>(task: &JoinHandle<T>, why: &str) {
    tokio::time::sleep(SHORT).await;
    assert!(!task.is_finished(), "{why}");
}

/// `task`'s result, which must come within `HANDOVER`.
async fn promptly<T>(task: JoinHandle<T>) -> T {
    tokio::time::timeout(HANDOVER, task).await.expect("granted promptly").unwrap()
}

// ------------------------------------------------------------------------------------------
// Inspecting znodes

/// One child znode: its name and `ephemeralOwner` (the creating session, 0 if not ephemeral).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Znode {
    name: String,
    owner: i64,
}

/// The children of `dir` (none if it is missing), sorted by sequence text like both sides sort.
async fn children(fw: &Framework, dir: &str) -> Vec<Znode> {
    let names = match fw.children(dir).await {
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => return Vec::new(),
        other => other.unwrap_or_else(|e| panic!("list {dir}: {e}")),
    };
    let mut out = Vec::new();
    for name in names {
        if let Some(stat) = fw.exists(&format!("{dir}/{name}")).await.unwrap() {
            out.push(Znode { name, owner: stat.ephemeral_owner });
        }
    }
    out.sort_by(|a, b| seq_of(&a.name).cmp(seq_of(&b.name)));
    out
}

async fn count(fw: &Framework, dir: &str) -> usize {
    children(fw, dir).await.len()
}

/// The last 10 characters of a node name (its sequence text).
fn seq_of(name: &str) -> &str {
    &name[name.len().saturating_sub(10)..]
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_digit() || ('a'..='f').contains(&c),
        })
}

/// Whether `name` is Curator's protected ephemeral-sequential name `_c_<uuid>-<base><10 digits>`.
fn is_protected(name: &str, base: &str) -> bool {
    let Some(rest) = name.strip_prefix("_c_") else { return false };
    let (Some(uuid), Some(rest)) = (rest.get(..36), rest.get(36..)) else { return false };
    let Some(seq) = rest.strip_prefix('-').and_then(|r| r.strip_prefix(base)) else { return false };
    is_uuid(uuid) && seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit())
}

#[track_caller]
fn assert_protected(node: &Znode, base: &str, owner: i64) {
    assert!(is_protected(&node.name, base), "{:?} is not named _c_<uuid>-{base}<10 digits>", node.name);
    assert_eq!(node.owner, owner, "{}: ephemeral, owned by the expected session", node.name);
}

/// Asserts that `dir` holds exactly one node, a protected `base` node owned by `owner`; returns
/// the listing.
async fn sole(fw: &Framework, dir: &str, base: &str, owner: i64) -> Vec<Znode> {
    let nodes = children(fw, dir).await;
    assert_eq!(nodes.len(), 1, "{dir}: {nodes:?}");
    assert_protected(&nodes[0], base, owner);
    nodes
}

fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[test]
fn name_checker_accepts_curators_names_only() {
    let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
    assert!(is_protected(&format!("_c_{uuid}-lock-0000000012"), "lock-"));
    assert!(is_protected(&format!("_c_{uuid}-__READ__0000000000"), "__READ__"));
    assert!(!is_protected(&format!("_c_{uuid}-lock-000000012"), "lock-"), "9 digits");
    assert!(!is_protected(&format!("_c_{uuid}-lease-0000000012"), "lock-"));
    assert!(!is_protected(&format!("{uuid}-lock-0000000012"), "lock-"), "no _c_");
    assert!(!is_protected("_c_0F8FAD5B-D9CB-469F-A165-70867728950E-lock-0000000012", "lock-"), "upper case");
    assert!(!is_protected("_c_0f8fad5bd9cb469fa16570867728950e1234-lock-0000000012", "lock-"), "no dashes");
}

// ------------------------------------------------------------------------------------------
// Mutex

#[tokio::test]
async fn mutex_curator_holds_ours_waits_and_is_granted_on_release() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("mutex-java-holds").await;
        let (j, java_session) = java_with_session(&peer, &cs).await;

        assert!(peer.mutex_acquire(&j, "h", &path, LONG).await.unwrap());
        let held = sole(&fw, &path, "lock-", java_session).await;

        let mutex = InterProcessMutex::new(&fw, &path).unwrap();
        let started = Instant::now();
        assert!(mutex.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "Curator holds");
        assert!(started.elapsed() >= SHORT);
        assert!(mutex.try_acquire().await.unwrap().is_none(), "Curator holds");
        fixtures::settle(&[&fw]).await;
        assert_eq!(children(&fw, &path).await, held, "our timed-out nodes are gone, Curator's stays");

        // An acquire started while Curator holds queues behind it...
        let waiter = spawn_ours(&mutex, |m| stamped(async move { m.acquire_timeout(LONG).await }));
        queued(&fw, &path, 2, "our waiter queued").await;
        let queue = children(&fw, &path).await;
        assert_eq!(queue[0], held[0], "Curator's node stays first");
        assert_protected(&queue[1], "lock-", fw.status().session_id);
        still_waits(&waiter, "ours must wait while Curator holds").await;

        // ...and is granted right after Curator releases.
        let released = Instant::now(); // latencies are measured from the release request
        assert_eq!(peer.mutex_release(&j, "h").await.unwrap(), 0);
        let (guard, granted) = waiter.await.unwrap();
        let guard = guard.expect("granted after Curator's release");
        let latency = granted.saturating_duration_since(released);
        println!("mutex hand-over Curator -> ours: {latency:?}");
        assert!(latency < HANDOVER, "hand-over took {latency:?}");
        assert_eq!(name_of(guard.path()), queue[1].name);
        assert_eq!(children(&fw, &path).await, vec![queue[1].clone()]);

        guard.release().await.unwrap();
        // checked before `finish` waits for background deletes: the release itself leaves nothing
        assert!(children(&fw, &path).await.is_empty());
        finish(&peer, &[&j], &[&fw], &[]).await;
    })
    .await
}

#[tokio::test]
async fn mutex_ours_holds_curator_waits_and_is_granted_on_release() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("mutex-ours-holds").await;
        let (j, java_session) = java_with_session(&peer, &cs).await;

        let guard = InterProcessMutex::new(&fw, &path).unwrap().acquire().await.unwrap();
        let held = sole(&fw, &path, "lock-", fw.status().session_id).await;
        assert_eq!(name_of(guard.path()), held[0].name);

        let started = Instant::now();
        assert!(!peer.mutex_acquire(&j, "h", &path, SHORT).await.unwrap(), "we hold: Curator times out");
        assert!(started.elapsed() >= SHORT);
        assert_eq!(children(&fw, &path).await, held, "Curator deleted its timed-out node");

        let waiter = tokio::spawn(stamped(Java::Mutex.waiter(&peer, &j, "h", &path)));
        queued(&fw, &path, 2, "Curator's waiter queued").await;
        let queue = children(&fw, &path).await;
        assert_protected(&queue[1], "lock-", java_session);
        still_waits(&waiter, "Curator must wait while we hold").await;

        let released = Instant::now();
        guard.release().await.unwrap();
        let (ok, granted) = waiter.await.unwrap();
        assert!(ok, "Curator granted after our release");
        let latency = granted.saturating_duration_since(released);
        println!("mutex hand-over ours -> Curator: {latency:?}");
        assert!(latency < HANDOVER, "hand-over took {latency:?}");
        assert_eq!(children(&fw, &path).await, vec![queue[1].clone()]);

        // and back: Curator holds, ours times out
        let mutex = InterProcessMutex::new(&fw, &path).unwrap();
        assert!(mutex.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()));
        assert_eq!(peer.mutex_release(&j, "h").await.unwrap(), 0);
        let again = mutex.acquire_timeout(HANDOVER).await.expect("free after Curator's release");
        again.release().await.unwrap();
        finish(&peer, &[&j], &[&fw], &[&path]).await;
    })
    .await
}

/// A lease-bounded hold of ours that is not renewed ends at its deadline; Curator's waiter,
/// queued behind it, is granted then (CURATOR-28: a wedged holder cannot keep the lock).
#[tokio::test]
async fn mutex_ours_leased_curator_is_granted_when_the_lease_runs_out() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("mutex-ours-leased").await;
        let (j, _) = java_with_session(&peer, &cs).await;
        let lease = Duration::from_secs(1);
        let mutex = InterProcessMutex::new(&fw, &path).unwrap();
        let acquired = Instant::now();
        let held = zk_recipes::TimedHold::acquire(&mutex, lease).await.unwrap();
        let waiter = tokio::spawn(stamped(Java::Mutex.waiter(&peer, &j, "h", &path)));
        queued(&fw, &path, 2, "Curator's waiter queued").await;
        let (ok, granted) = waiter.await.unwrap();
        assert!(ok, "Curator granted once our lease ran out");
        let after = granted.saturating_duration_since(acquired);
        assert!(after >= lease && after < lease + HANDOVER, "granted {after:?} after our acquire (lease {lease:?})");
        assert_eq!(held.loss(), Some(zk_recipes::LossReason::Expired));
        assert_eq!(peer.mutex_release(&j, "h").await.unwrap(), 0);
        finish(&peer, &[&j], &[&fw], &[&path]).await;
    })
    .await
}

// ------------------------------------------------------------------------------------------
// Mixed contention: Curator participants and ours log their holds in one shared log

#[derive(Debug, Clone, Copy)]
enum Kind {
    Mutex,
    SemaphoreMutex,
    Semaphore(u32),
    /// Readers and writers of one read-write lock (participants alternate).
    ReadWrite,
}

#[derive(Debug, Clone)]
struct Interval {
    who: String,
    java: bool,
    /// A write (exclusive) hold; false for reads and semaphore leases.
    exclusive: bool,
    start: Instant,
    end: Instant,
}

type Log = Arc<Mutex<Vec<Interval>>>;

/// Whether cycle `i` of a read-write participant is a write (participants alternate, offset by
/// `who` so that reads and writes of both sides interleave).
fn writes(kind: Kind, who: usize, i: usize) -> bool {
    match kind {
        Kind::ReadWrite => (i + who).is_multiple_of(2),
        _ => true,
    }
}

fn hold_time(i: usize) -> Duration {
    Duration::from_millis(3 + (i as u64 * 7) % 12)
}

/// One Curator participant: `cycles` acquire/hold/release rounds; an interval is recorded from
/// when Curator's acquire has returned to before its release is sent (inside the real hold).
async fn java_participant(
    peer: Arc<CuratorPeer>,
    cs: String,
    path: String,
    kind: Kind,
    who: usize,
    cycles: usize,
    log: Log,
) {
    let cid = java(&peer, &cs).await;
    for i in 0..cycles {
        let write = writes(kind, who, i);
        let op = match kind {
            Kind::Mutex => Java::Mutex,
            Kind::SemaphoreMutex => Java::SemaphoreMutex,
            Kind::Semaphore(max) => Java::Semaphore { max, count: 1 },
            Kind::ReadWrite if write => Java::Write,
            Kind::ReadWrite => Java::Read,
        };
        assert!(op.acquire(&peer, &cid, "h", &path, LONG).await, "java-{who} acquired in time");
        let start = Instant::now();
        tokio::time::sleep(hold_time(i)).await;
        let end = Instant::now();
        log.lock().unwrap().push(Interval { who: format!("java-{who}"), java: true, exclusive: write, start, end });
        match kind {
            Kind::Mutex => peer.mutex_release(&cid, "h").await.map(drop),
            Kind::SemaphoreMutex => peer.semmutex_release(&cid, "h").await,
            Kind::Semaphore(_) => peer.sem_release(&cid, "h").await.map(drop),
            Kind::ReadWrite => peer.rw_release(&cid, "h").await.map(drop),
        }
        .unwrap();
    }
    peer.close(&cid).await.unwrap();
}

/// One of ours: the same rounds through this crate, recorded from when the acquire has
/// returned to before the release.
async fn our_participant(cs: String, path: String, kind: Kind, who: usize, cycles: usize, log: Log) {
    let fw = framework(&cs).await;
    let mutex = InterProcessMutex::new(&fw, &path).unwrap();
    let semmutex = InterProcessSemaphoreMutex::new(&fw, &path).unwrap();
    let rw = InterProcessReadWriteLock::new(&fw, &path).unwrap();
    let sem = match kind {
        Kind::Semaphore(max) => Some(InterProcessSemaphoreV2::new(&fw, &path, max as usize).unwrap()),
        _ => None,
    };
    for i in 0..cycles {
        let write = writes(kind, who, i);
        let hold = match kind {
            Kind::Mutex => mutex.acquire_timeout(LONG).await.map(HeldLock::from),
            Kind::SemaphoreMutex => semmutex.acquire_timeout(LONG).await.map(HeldLock::from),
            Kind::Semaphore(_) => sem.as_ref().unwrap().acquire_timeout(LONG).await.map(HeldLock::from),
            Kind::ReadWrite if write => rw.write_timeout(LONG).await.map(HeldLock::from),
            Kind::ReadWrite => rw.read_timeout(LONG).await.map(HeldLock::from),
        }
        .unwrap_or_else(|e| panic!("ours-{who} acquired in time: {e}"));
        let start = Instant::now();
        tokio::time::sleep(hold_time(i)).await;
        let end = Instant::now();
        assert!(!hold.is_lost());
        log.lock().unwrap().push(Interval { who: format!("ours-{who}"), java: false, exclusive: write, start, end });
        hold.release().await.unwrap();
    }
    fw.close();
}

/// The most intervals that overlap at any instant (touching ends do not overlap).
fn peak(log: &[Interval]) -> usize {
    let mut events: Vec<(Instant, i32)> = log.iter().flat_map(|iv| [(iv.start, 1), (iv.end, -1)]).collect();
    events.sort_by_key(|&(t, delta)| (t, delta)); // ends before starts at the same instant
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, delta) in events {
        now += delta;
        peak = peak.max(now);
    }
    peak as usize
}

fn overlap(a: &Interval, b: &Interval) -> bool {
    a.start < b.end && b.start < a.end
}

/// Runs 2 Curator participants and 2 of ours on one path, `cycles` rounds each; returns the log
/// sorted by start.
async fn contend(kind: Kind, cycles: usize) -> Vec<Interval> {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let path = unique_path("contention");
    let log: Log = Arc::default();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for who in 0..2 {
        tasks.push(tokio::spawn(java_participant(
            peer.clone(),
            cs.clone(),
            path.clone(),
            kind,
            who,
            cycles,
            log.clone(),
        )));
        tasks.push(tokio::spawn(our_participant(cs.clone(), path.clone(), kind, who, cycles, log.clone())));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut log = log.lock().unwrap().clone();
    log.sort_by_key(|iv| iv.start);
    assert_eq!(log.len(), 4 * cycles, "{kind:?}: every round recorded");
    let handovers = log.windows(2).filter(|w| w[0].java != w[1].java).count();
    println!(
        "{kind:?}: {} holds in {:?}, peak {} at once, {handovers} Curator<->ours hand-overs",
        log.len(),
        started.elapsed(),
        peak(&log)
    );
    let fw = framework(&cs).await;
    for dir in [path.clone(), format!("{path}/leases"), format!("{path}/locks")] {
        // (the semaphores' two directories are containers, which the server reaps in its time)
        let left: Vec<Znode> = children(&fw, &dir)
            .await
            .into_iter()
            .filter(|n| dir != path || !["leases", "locks"].contains(&&*n.name))
            .collect();
        assert_eq!(left, Vec::new(), "{kind:?}: nothing left in {dir}");
    }
    fw.close();
    log
}

#[track_caller]
fn assert_exclusive(kind: Kind, log: &[Interval]) {
    for w in log.windows(2) {
        assert!(!overlap(&w[0], &w[1]), "{kind:?}: two holders at once: {:?} and {:?}", w[0], w[1]);
    }
    assert_eq!(peak(log), 1, "{kind:?}");
}

#[track_caller]
fn assert_mixed(kind: Kind, log: &[Interval]) {
    let to_ours = log.windows(2).any(|w| w[0].java && !w[1].java);
    let to_java = log.windows(2).any(|w| !w[0].java && w[1].java);
    // a hand-off across the sides must happen; both directions need both sides queued at
    // once, which a slow start of the Java side (under load) can prevent
    assert!(to_ours || to_java, "{kind:?}: the lock never passed between the sides: {log:?}");
    for who in ["java-0", "java-1", "ours-0", "ours-1"] {
        assert!(log.iter().any(|iv| iv.who == who), "{kind:?}: {who} never held");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex_mixed_contention_never_overlaps() {
    fixtures::within(TEST_LIMIT, async {
        let log = contend(Kind::Mutex, 10).await;
        assert_exclusive(Kind::Mutex, &log);
        assert_mixed(Kind::Mutex, &log);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_mutex_mixed_contention_never_overlaps() {
    fixtures::within(TEST_LIMIT, async {
        let log = contend(Kind::SemaphoreMutex, 8).await;
        assert_exclusive(Kind::SemaphoreMutex, &log);
        assert_mixed(Kind::SemaphoreMutex, &log);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_mixed_contention_never_exceeds_max_leases() {
    fixtures::within(TEST_LIMIT, async {
        let kind = Kind::Semaphore(2);
        let log = contend(kind, 8).await;
        let peak = peak(&log);
        assert!(peak <= 2, "{kind:?}: {peak} leases held at once");
        assert_eq!(peak, 2, "{kind:?}: two leases were never held together (the check would see nothing)");
        assert!(
            log.iter().any(|a| a.java && log.iter().any(|b| !b.java && overlap(a, b))),
            "{kind:?}: a Curator lease and one of ours were never held together"
        );
        assert_mixed(kind, &log);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_mixed_contention_writers_exclude_everyone() {
    fixtures::within(TEST_LIMIT, async {
        let kind = Kind::ReadWrite;
        let log = contend(kind, 8).await;
        for w in log.iter().filter(|iv| iv.exclusive) {
            for other in &log {
                if !std::ptr::eq(w, other) {
                    assert!(!overlap(w, other), "{kind:?}: a writer overlaps: {w:?} and {other:?}");
                }
            }
        }
        assert!(log.iter().any(|iv| iv.java && iv.exclusive) && log.iter().any(|iv| !iv.java && iv.exclusive));
        assert_mixed(kind, &log);
    })
    .await
}

// ------------------------------------------------------------------------------------------
// Semaphore V2: leases from both sides add up

#[tokio::test]
async fn semaphore_leases_add_up_across_curator_and_ours() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("semaphore").await;
        let (j1, j2, j3) = (java(&peer, &cs).await, java(&peer, &cs).await, java(&peer, &cs).await);
        let ours = fw.status().session_id;
        let leases = format!("{path}/leases");
        let locks = format!("{path}/locks");
        let sem = InterProcessSemaphoreV2::new(&fw, &path, 3).unwrap();

        // Curator holds 2 of 3; we get the third; the next of ours times out.
        assert!(peer.sem_acquire(&j1, "h", &path, 3, 2, LONG).await.unwrap());
        let l1 = sem.acquire_timeout(HANDOVER).await.expect("one lease is free");
        assert!(l1.path().starts_with(&format!("{leases}/")), "{}", l1.path());
        let started = Instant::now();
        assert!(sem.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "3 of 3 leases are taken");
        assert!(started.elapsed() >= SHORT);
        // Curator's acquire times out too while the total is 3.
        assert!(!peer.sem_acquire(&j2, "h", &path, 3, 1, SHORT).await.unwrap(), "3 of 3 leases are taken");
        fixtures::settle(&[&fw]).await;
        let held = children(&fw, &leases).await;
        assert_eq!(held.len(), 3, "{held:?}");
        let j1_session = peer.session_id(&j1).await.unwrap();
        assert_eq!(held.iter().filter(|n| n.owner == j1_session).count(), 2);
        assert_eq!(held.iter().filter(|n| n.owner == ours).count(), 1);
        assert!(children(&fw, &locks).await.is_empty(), "holders keep no node under locks");

        // One of ours waits while the total is 3 and is granted when Curator returns its leases.
        let waiter = spawn_ours(&sem, |sem| async move { sem.acquire_timeout(LONG).await });
        queued(&fw, &leases, 4, "our waiter queued").await;
        // no one queued for the internal mutex: our single acquire waits without it (fast path)
        assert!(children(&fw, &locks).await.is_empty(), "our fast-path waiter took the internal mutex");
        still_waits(&waiter, "4 leases would exceed 3").await;
        assert_eq!(peer.sem_release(&j1, "h").await.unwrap(), 2);
        let l2 = promptly(waiter).await.expect("granted after Curator's release");

        // Now ours hold 2; Curator gets the third; then a Curator acquirer waits until we release.
        assert!(peer.sem_acquire(&j2, "h", &path, 3, 1, HANDOVER).await.unwrap(), "one lease is free");
        let j3_session = peer.session_id(&j3).await.unwrap();
        let java_waiter = tokio::spawn(Java::Semaphore { max: 3, count: 1 }.waiter(&peer, &j3, "h", &path));
        queued(&fw, &leases, 4, "Curator's waiter queued").await;
        sole(&fw, &locks, "lock-", j3_session).await;
        still_waits(&java_waiter, "Curator must not take a 4th lease").await;
        assert!(
            sem.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()),
            "still 3 of 3 (and Curator queued first)"
        );
        // one of ours arriving now finds Curator's waiter under the internal mutex at its first
        // wait: it queues behind it there, not as a lease Curator's count would wait for
        let late = spawn_ours(&sem, |sem| async move { sem.acquire_timeout(LONG).await });
        queued(&fw, &locks, 2, "our late waiter queued for the internal mutex").await;
        assert_eq!(count(&fw, &leases).await, 4, "our late waiter withdrew its lease");
        let released = Instant::now();
        l1.release().await.unwrap();
        assert!(promptly(java_waiter).await);
        println!("semaphore hand-over ours -> Curator: {:?}", released.elapsed());
        still_waits(&late, "Curator took the free lease: 3 of 3 again").await;
        // it holds the internal mutex now, and waits with a lease under it as Curator does
        sole(&fw, &locks, "lock-", ours).await;
        queued(&fw, &leases, 4, "our late waiter's lease").await;

        // Every lease node, from either side, has Curator's name.
        let held = children(&fw, &leases).await;
        assert_eq!(held.len(), 4);
        let j2_session = peer.session_id(&j2).await.unwrap();
        for node in &held {
            assert!([ours, j2_session, j3_session].contains(&node.owner), "{node:?}");
            assert_protected(node, "lease-", node.owner);
        }

        l2.release().await.unwrap();
        promptly(late).await.expect("our late waiter after our release").release().await.unwrap();
        assert_eq!(peer.sem_release(&j2, "h").await.unwrap(), 1);
        assert_eq!(peer.sem_release(&j3, "h").await.unwrap(), 1);
        finish(&peer, &[&j1, &j2, &j3], &[&fw], &[&leases, &locks]).await;
    })
    .await
}

// ------------------------------------------------------------------------------------------
// Semaphore mutex

#[tokio::test]
async fn semaphore_mutex_excludes_both_ways() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("semmutex").await;
        let (j, java_session) = java_with_session(&peer, &cs).await;
        let ours = fw.status().session_id;
        let leases = format!("{path}/leases");
        let m = InterProcessSemaphoreMutex::new(&fw, &path).unwrap();

        // Curator holds: ours times out, then a waiting acquire is granted on Curator's release.
        assert!(peer.semmutex_acquire(&j, "h", &path, LONG).await.unwrap());
        let held = sole(&fw, &leases, "lease-", java_session).await;
        assert!(m.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "Curator holds");
        fixtures::settle(&[&fw]).await;
        assert_eq!(children(&fw, &leases).await, held);
        let waiter = spawn_ours(&m, |m| async move { m.acquire_timeout(LONG).await });
        queued(&fw, &leases, 2, "our waiter queued").await;
        still_waits(&waiter, "Curator holds").await;
        peer.semmutex_release(&j, "h").await.unwrap();
        let lease = promptly(waiter).await.expect("granted after Curator's release");
        let held = sole(&fw, &leases, "lease-", ours).await;
        assert_eq!(name_of(lease.path()), held[0].name);

        // We hold: Curator times out, then a waiting Curator acquire is granted on our release.
        assert!(!peer.semmutex_acquire(&j, "h", &path, SHORT).await.unwrap(), "we hold");
        assert_eq!(children(&fw, &leases).await, held);
        let java_waiter = tokio::spawn(Java::SemaphoreMutex.waiter(&peer, &j, "h", &path));
        queued(&fw, &leases, 2, "Curator's waiter queued").await;
        still_waits(&java_waiter, "we hold").await;
        lease.release().await.unwrap();
        assert!(promptly(java_waiter).await);
        assert!(m.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "Curator holds again");
        peer.semmutex_release(&j, "h").await.unwrap();
        finish(&peer, &[&j], &[&fw], &[&leases]).await;
    })
    .await
}

// ------------------------------------------------------------------------------------------
// Read-write lock

#[tokio::test]
async fn rwlock_reads_share_across_curator_and_ours() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("rw-share").await;
        let (j1, j2) = (java(&peer, &cs).await, java(&peer, &cs).await);
        let rw = InterProcessReadWriteLock::new(&fw, &path).unwrap();

        assert!(peer.rw_read_acquire(&j1, "h", &path, LONG).await.unwrap());
        let started = Instant::now();
        let ours = rw.read_timeout(HANDOVER).await.expect("readers share with Curator's reader");
        println!("our read beside Curator's read granted in {:?}", started.elapsed());
        assert!(peer.rw_read_acquire(&j2, "h", &path, HANDOVER).await.unwrap(), "Curator shares with ours");
        let nodes = children(&fw, &path).await;
        assert_eq!(nodes.len(), 3, "three readers hold together: {nodes:?}");
        let sessions =
            [peer.session_id(&j1).await.unwrap(), fw.status().session_id, peer.session_id(&j2).await.unwrap()];
        for (node, session) in nodes.iter().zip(sessions) {
            assert_protected(node, "__READ__", session);
        }
        assert!(!ours.is_lost());

        // Readers of either side keep writers of either side out.
        assert!(!peer.rw_write_acquire(&j2, "w", &path, SHORT).await.unwrap(), "readers hold");
        let writer_fw = framework(&cs).await;
        let writer = InterProcessReadWriteLock::new(&writer_fw, &path).unwrap();
        assert!(writer.write_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "readers hold");

        // Our writer queues; a new Curator reader does not overtake it (fairness across sides).
        let our_writer = spawn_ours(&writer, |writer| async move { writer.write_timeout(LONG).await });
        queued(&fw, &path, 4, "our writer queued").await;
        let j3 = java(&peer, &cs).await;
        assert!(!peer.rw_read_acquire(&j3, "h", &path, SHORT).await.unwrap(), "a writer is queued first");
        assert_eq!(peer.rw_release(&j1, "h").await.unwrap(), 0);
        assert_eq!(peer.rw_release(&j2, "h").await.unwrap(), 0);
        still_waits(&our_writer, "our reader still holds").await;
        ours.release().await.unwrap();
        let w = promptly(our_writer).await.expect("all readers gone");
        w.release().await.unwrap();

        // Our reader holds, Curator's writer queues; another of our readers does not overtake it.
        let r = rw.read().await.unwrap();
        let java_writer = tokio::spawn(Java::Write.waiter(&peer, &j3, "w", &path));
        queued(&fw, &path, 2, "Curator's writer queued").await;
        let reader = InterProcessReadWriteLock::new(&writer_fw, &path).unwrap();
        assert!(reader.read_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "a Curator writer is queued first");
        r.release().await.unwrap();
        assert!(promptly(java_writer).await);
        assert!(reader.read_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "Curator's writer holds");
        assert_eq!(peer.rw_release(&j3, "w").await.unwrap(), 0);
        reader.read_timeout(HANDOVER).await.expect("free again").release().await.unwrap();
        finish(&peer, &[&j1, &j2, &j3], &[&fw, &writer_fw], &[&path]).await;
    })
    .await
}

#[tokio::test]
async fn rwlock_curator_writer_excludes_our_readers_and_writers() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("rw-java-writes").await;
        let (j, java_session) = java_with_session(&peer, &cs).await;
        let rw = InterProcessReadWriteLock::new(&fw, &path).unwrap();

        assert!(peer.rw_write_acquire(&j, "h", &path, LONG).await.unwrap());
        let held = sole(&fw, &path, "__WRIT__", java_session).await;
        assert!(rw.read_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "Curator writes: our read waits");
        assert!(rw.write_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "Curator writes: our write waits");
        fixtures::settle(&[&fw]).await;
        assert_eq!(children(&fw, &path).await, held, "only Curator's writer node is left");

        // our reader queued behind Curator's writer is granted when it releases
        let waiter = spawn_ours(&rw, |rw| async move { rw.read_timeout(LONG).await });
        queued(&fw, &path, 2, "our reader queued").await;
        assert_protected(&children(&fw, &path).await[1], "__READ__", fw.status().session_id);
        still_waits(&waiter, "Curator writes").await;
        assert_eq!(peer.rw_release(&j, "h").await.unwrap(), 0);
        let read = promptly(waiter).await.expect("granted after Curator's write release");

        // and our reader keeps Curator's writer out
        assert!(!peer.rw_write_acquire(&j, "h", &path, SHORT).await.unwrap(), "our reader holds");
        read.release().await.unwrap();
        assert!(peer.rw_write_acquire(&j, "h", &path, HANDOVER).await.unwrap());
        assert!(rw.write_timeout(SHORT).await.is_err_and(|e| e.is_timeout()));
        assert_eq!(peer.rw_release(&j, "h").await.unwrap(), 0);
        finish(&peer, &[&j], &[&fw], &[&path]).await;
    })
    .await
}

#[tokio::test]
async fn rwlock_our_writer_excludes_curator_readers_and_writers() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("rw-ours-writes").await;
        let (j1, j2) = (java(&peer, &cs).await, java(&peer, &cs).await);
        let rw = InterProcessReadWriteLock::new(&fw, &path).unwrap();

        let w = rw.write().await.unwrap();
        let held = sole(&fw, &path, "__WRIT__", fw.status().session_id).await;
        assert!(!peer.rw_read_acquire(&j1, "h", &path, SHORT).await.unwrap(), "we write: Curator's read waits");
        assert!(!peer.rw_write_acquire(&j1, "h", &path, SHORT).await.unwrap(), "we write: Curator's write waits");
        assert_eq!(children(&fw, &path).await, held, "Curator deleted its timed-out nodes");

        // Curator's writer queued behind ours, then Curator's reader behind that writer.
        let java_writer = tokio::spawn(Java::Write.waiter(&peer, &j1, "h", &path));
        queued(&fw, &path, 2, "Curator's writer queued").await;
        let java_reader = tokio::spawn(Java::Read.waiter(&peer, &j2, "h", &path));
        queued(&fw, &path, 3, "Curator's reader queued").await;
        still_waits(&java_writer, "we write").await;
        assert!(!java_reader.is_finished(), "we write");
        w.release().await.unwrap();
        assert!(promptly(java_writer).await);
        still_waits(&java_reader, "Curator's reader waits for Curator's writer").await;
        assert!(rw.read_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "Curator's writer holds");
        assert_eq!(peer.rw_release(&j1, "h").await.unwrap(), 0);
        assert!(promptly(java_reader).await);
        let r = rw.read_timeout(HANDOVER).await.expect("shares with Curator's reader");
        r.release().await.unwrap();
        assert_eq!(peer.rw_release(&j2, "h").await.unwrap(), 0);
        finish(&peer, &[&j1, &j2], &[&fw], &[&path]).await;
    })
    .await
}

/// Our downgrade (write held → read → write released) keeps the writer's place with a plain
/// ephemeral `__READ__<writer's seq>` node: Curator's readers share with it, and writers queued
/// behind our writer — Curator's and ours — stay out until the downgraded read is released.
#[tokio::test]
async fn rwlock_our_downgrade_keeps_queued_writers_out() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("rw-downgrade").await;
        let (j1, j2) = (java(&peer, &cs).await, java(&peer, &cs).await);
        let other_fw = framework(&cs).await;
        let rw = InterProcessReadWriteLock::new(&fw, &path).unwrap();

        // Without writers queued: Curator's reader shares with the downgraded read.
        let w = rw.write().await.unwrap();
        let write_seq = seq_of(w.path()).to_string();
        let r = tokio::time::timeout(SHORT, w.downgrade()).await.expect("downgrade is immediate").unwrap();
        assert_eq!(seq_of(r.path()), write_seq, "the read node keeps the writer's place");
        let nodes = children(&fw, &path).await;
        let read_node = nodes.iter().find(|n| n.name.contains("__READ__")).expect("our read node");
        assert_protected(read_node, "__READ__", fw.status().session_id);
        assert!(!nodes.iter().any(|n| n.name.contains("__WRIT__")), "the write node went: {nodes:?}");
        assert!(peer.rw_read_acquire(&j1, "h", &path, HANDOVER).await.unwrap(), "readers share");
        assert!(!peer.rw_write_acquire(&j2, "h", &path, SHORT).await.unwrap(), "readers hold");
        assert_eq!(peer.rw_release(&j1, "h").await.unwrap(), 0);
        r.release().await.unwrap();

        // With writers queued right behind our writer: ours first, then Curator's.
        let order: Arc<Mutex<Vec<&'static str>>> = Arc::default();
        let w = rw.write().await.unwrap();
        let our_writer = tokio::spawn({
            let rw = InterProcessReadWriteLock::new(&other_fw, &path).unwrap();
            let order = order.clone();
            async move {
                let g = rw.write_timeout(LONG).await.expect("our queued writer granted");
                order.lock().unwrap().push("ours");
                tokio::time::sleep(Duration::from_millis(50)).await;
                g.release().await.unwrap();
            }
        });
        queued(&fw, &path, 2, "our writer queued").await;
        let java_writer = tokio::spawn({
            let (peer, j2, path, order) = (peer.clone(), j2.clone(), path.clone(), order.clone());
            async move {
                assert!(Java::Write.acquire(&peer, &j2, "h", &path, LONG).await);
                order.lock().unwrap().push("java");
                assert_eq!(peer.rw_release(&j2, "h").await.unwrap(), 0);
            }
        });
        queued(&fw, &path, 3, "Curator's writer queued").await;
        let r = tokio::time::timeout(SHORT, w.downgrade()).await.expect("downgrade is immediate").unwrap();
        tokio::time::sleep(SHORT * 2).await;
        assert!(
            !our_writer.is_finished() && !java_writer.is_finished(),
            "a writer got in beside the downgraded reader: {:?}",
            order.lock().unwrap()
        );
        assert!(order.lock().unwrap().is_empty());
        r.release().await.unwrap();
        tokio::time::timeout(LONG, our_writer).await.unwrap().unwrap();
        tokio::time::timeout(LONG, java_writer).await.unwrap().unwrap();
        assert_eq!(*order.lock().unwrap(), vec!["ours", "java"], "queue order kept");
        finish(&peer, &[&j1, &j2], &[&fw, &other_fw], &[&path]).await;
    })
    .await
}

// ------------------------------------------------------------------------------------------
// Znode names: ours look exactly like Curator's

/// The shape of a lock node: its path relative to the recipe path with the protection prefix
/// and the sequence digits blanked, e.g. `leases/_c_<uuid>-lease-<seq>`.
fn shape(recipe: &str, node_path: &str) -> String {
    let rel = node_path.strip_prefix(recipe).and_then(|r| r.strip_prefix('/')).expect("under the recipe path");
    let (dir, name) = rel.rsplit_once('/').map_or(("", rel), |(d, n)| (d, n));
    let rest = name.strip_prefix("_c_").and_then(|r| r.get(37..)).unwrap_or(name);
    let base = rest.trim_end_matches(|c: char| c.is_ascii_digit());
    assert!(is_protected(name, base), "{node_path}: not a protected sequential name");
    let dir = if dir.is_empty() { String::new() } else { format!("{dir}/") };
    format!("{dir}_c_<uuid>-{base}<seq>")
}

/// Every node under `path` (recursively) with its shape, for nodes owned by `session`.
async fn shapes_of(fw: &Framework, path: &str, session: i64) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![path.to_string()];
    while let Some(dir) = dirs.pop() {
        for node in children(fw, &dir).await {
            let full = format!("{dir}/{}", node.name);
            if node.owner == session {
                out.push(shape(path, &full));
            } else if node.owner == 0 {
                dirs.push(full);
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn znode_names_match_curators() {
    fixtures::within(TEST_LIMIT, async {
        let Scene { cs, peer, fw, path } = scene("names-mutex").await;
        let ((j1, s1), (j2, s2)) = (java_with_session(&peer, &cs).await, java_with_session(&peer, &cs).await);
        let ours = fw.status().session_id;

        // Mutex: one holder from each side in turn.
        assert!(peer.mutex_acquire(&j1, "h", &path, LONG).await.unwrap());
        let java_shapes = shapes_of(&fw, &path, s1).await;
        peer.mutex_release(&j1, "h").await.unwrap();
        let g = InterProcessMutex::new(&fw, &path).unwrap().acquire().await.unwrap();
        assert_eq!(shapes_of(&fw, &path, ours).await, java_shapes);
        assert_eq!(java_shapes, vec!["_c_<uuid>-lock-<seq>"]);
        assert_eq!(shape(&path, g.path()), java_shapes[0]);
        g.release().await.unwrap();

        // Read-write lock: a reader and a writer from each side.
        let path = unique_path("names-rw");
        let rw = InterProcessReadWriteLock::new(&fw, &path).unwrap();
        assert!(peer.rw_read_acquire(&j1, "h", &path, LONG).await.unwrap());
        let r = rw.read().await.unwrap();
        let java_writer = tokio::spawn(Java::Write.waiter(&peer, &j2, "h", &path));
        queued(&fw, &path, 3, "Curator's writer queued").await;
        let other = framework(&cs).await;
        let our_writer = spawn_ours(&InterProcessReadWriteLock::new(&other, &path).unwrap(), |rw| async move {
            rw.write_timeout(LONG).await.expect("granted")
        });
        queued(&fw, &path, 4, "our writer queued").await;
        let java_shapes = [shapes_of(&fw, &path, s1).await, shapes_of(&fw, &path, s2).await].concat();
        let our_shapes =
            [shapes_of(&fw, &path, ours).await, shapes_of(&fw, &path, other.status().session_id).await].concat();
        assert_eq!(java_shapes, vec!["_c_<uuid>-__READ__<seq>", "_c_<uuid>-__WRIT__<seq>"]);
        assert_eq!(our_shapes, java_shapes);
        r.release().await.unwrap();
        peer.rw_release(&j1, "h").await.unwrap();
        assert!(java_writer.await.unwrap(), "Curator's writer queued first");
        assert!(!our_writer.is_finished());
        peer.rw_release(&j2, "h").await.unwrap();
        our_writer.await.unwrap().release().await.unwrap();
        assert!(children(&fw, &path).await.is_empty());
        other.close();

        // Semaphore: a lease each, and a waiter from each side (Curator's waiter holds `locks`).
        let path = unique_path("names-sem");
        let sem = InterProcessSemaphoreV2::new(&fw, &path, 2).unwrap();
        assert!(peer.sem_acquire(&j1, "h", &path, 2, 1, LONG).await.unwrap());
        let lease = sem.acquire().await.unwrap();
        let java_shapes = shapes_of(&fw, &path, s1).await;
        assert_eq!(java_shapes, vec!["leases/_c_<uuid>-lease-<seq>"]);
        assert_eq!(shapes_of(&fw, &path, ours).await, java_shapes);
        let java_waiter = tokio::spawn(Java::Semaphore { max: 2, count: 1 }.waiter(&peer, &j2, "h", &path));
        queued(&fw, &format!("{path}/leases"), 3, "Curator waits").await;
        let java_waiting = shapes_of(&fw, &path, s2).await;
        assert_eq!(java_waiting, vec!["leases/_c_<uuid>-lease-<seq>", "locks/_c_<uuid>-lock-<seq>"]);
        assert_eq!(peer.sem_release(&j1, "h").await.unwrap(), 1);
        assert!(java_waiter.await.unwrap());
        let waiter = spawn_ours(&sem, |sem| async move { sem.acquire_timeout(LONG).await.expect("granted") });
        queued(&fw, &format!("{path}/leases"), 3, "ours waits").await;
        let our_waiting = shapes_of(&fw, &path, ours).await;
        assert_eq!(
            our_waiting,
            vec!["leases/_c_<uuid>-lease-<seq>", "leases/_c_<uuid>-lease-<seq>"],
            "our held lease and our waiting lease (no one queued for the internal mutex: our \
             single acquire waits without it)"
        );
        // the recipe path holds nothing but the two directories Curator uses (`locks` is a
        // container that the server may have reaped since Curator's waiter left it)
        let dirs: Vec<String> = children(&fw, &path).await.into_iter().map(|n| n.name).collect();
        assert!(dirs.contains(&"leases".to_string()), "{dirs:?}");
        assert!(dirs.iter().all(|d| d == "leases" || d == "locks"), "{dirs:?}");
        assert_eq!(peer.sem_release(&j2, "h").await.unwrap(), 1);
        let second = waiter.await.unwrap();
        lease.release().await.unwrap();
        second.release().await.unwrap();
        finish(&peer, &[&j1, &j2], &[&fw], &[&format!("{path}/leases")]).await;
    })
    .await
}
