//! What an abandoned call leaves when the server freezes for longer than the operation
//! timeout (or the session) while one of its writes is in flight: each path where a write
//! whose reply never came could land later and hold what others wait for. After the server
//! answers again nothing of the abandoned call is left, and another participant gets what it
//! waited for at once (not after the session ends, a TTL runs out or a permit expires).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tracing::instrument::WithSubscriber;
use zk_recipes::queue::QueueBuilder;
use zk_recipes::{
    with_deadline, ConnectionState, DistributedDoubleBarrier, DistributedQueue, Error, Framework, InterProcessMutex,
    InterProcessSemaphoreV2,
};
use zk_recipes_testing::{fixtures, ProxyMode, TcpProxy, TestingServer};

use super::{SLACK, TIMEOUT, WAIT};

/// The session of these tests. The client drops a connection that has not answered for 2/5
/// of it (3.2 s): one answered just before a freeze of [`FREEZE`] outlives it, so what was
/// sent on it is applied when the server resumes (ZooKeeper drops what it reads from a closed
/// connection).
pub const SESSION: Duration = Duration::from_secs(8);
/// What bounds each operation: shorter than the freeze.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(1);
/// A freeze longer than the operation timeout, shorter than the client's patience with a
/// silent connection.
pub const FREEZE: Duration = Duration::from_secs(2);
/// How long another participant may wait for what an abandoned call had in flight: far less
/// than what a leak would hold it for (the session, a TTL, a permit's expiry).
pub const PROMPTLY: Duration = Duration::from_secs(5);
/// A server TTL, or a permit's expiry: far longer than the tests wait.
const LONG: Duration = Duration::from_secs(120);

/// A server that grants [`SESSION`] and has TTL nodes.
pub async fn server() -> TestingServer {
    TestingServer::builder().extended_types(true).max_session_timeout(SESSION).start().await.expect("server")
}

/// A framework with [`SESSION`] and [`OPERATION_TIMEOUT`].
pub async fn framework(cs: &str) -> Framework {
    fixtures::framework_with(cs, |b| b.session_timeout(SESSION).operation_timeout(OPERATION_TIMEOUT)).await
}

/// Freezes a server with `pause` (SIGSTOP) right after `fw`'s connection answered, and returns
/// once it is frozen (`pid`: its process): the connection outlives a freeze of [`FREEZE`], so
/// what `fw` sends meanwhile is applied when the server resumes.
pub async fn freeze<E: std::fmt::Debug>(fw: &Framework, pid: Option<u32>, pause: impl FnOnce() -> Result<(), E>) {
    with_deadline(WAIT, fw.exists("/")).await.expect("an answer before the freeze");
    pause().expect("SIGSTOP");
    stopped(pid);
}

/// Waits until every thread of the process `pid` has stopped: SIGSTOP is delivered
/// asynchronously, and a JVM may answer a request sent right after the signal. Nothing to wait
/// for without a pid (a server in a Docker container).
pub fn stopped(pid: Option<u32>) {
    let Some(pid) = pid else { return };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let all_stopped = || -> bool {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return true };
        tasks.flatten().all(|task| {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            // the state follows the command name, which ends with the last ')'
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
            matches!(state, None | Some('T' | 't' | 'Z' | 'X'))
        })
    };
    while !all_stopped() {
        assert!(std::time::Instant::now() < deadline, "process {pid} did not stop");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The children of `dir` (none when it is gone).
pub async fn children(fw: &Framework, dir: &str) -> Vec<String> {
    match fw.children(dir).await {
        Err(Error::ZooKeeper(zk_recipes::ZooKeeperError::NoNode)) => Vec::new(),
        other => other.expect("children"),
    }
}

/// Waits until `dir` has no children left.
pub async fn emptied(fw: &Framework, dir: &str, what: &str) {
    fixtures::eventually(PROMPTLY, format!("{what}: nothing left under {dir}"), || async {
        children(fw, dir).await.is_empty()
    })
    .await;
}

fn queue(fw: &Framework, base: &str) -> DistributedQueue {
    let path = format!("{base}/queue");
    QueueBuilder::new(fw, &path).lock_path(&format!("{path}-locks")).build().unwrap()
}

/// A safe take whose item lock's create is in flight when the server freezes: the take runs
/// in a task of its own, whose create gives up after the operation timeout; the create lands
/// when the server resumes. The lock must not stay: another consumer takes the item at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_safe_take_cut_by_a_freeze_leaves_no_item_lock() {
    let server = server().await;
    let cs = server.connect_string().to_string();
    let (fw, other) = (framework(&cs).await, framework(&cs).await);
    let base = format!("/{}", fixtures::unique("leak-take"));
    let (ours, theirs) = (queue(&fw, &base), queue(&other, &base));
    theirs.put(&b"first".to_vec()).await.unwrap();
    theirs.put(&b"second".to_vec()).await.unwrap();
    // our first take lists both items: the second is the next one we try, without a listing
    ours.take_safe().await.unwrap().complete().await.unwrap();

    freeze(&fw, server.pid(), || server.pause()).await;
    let started = Instant::now();
    let taken = ours.take_safe_timeout(TIMEOUT).await;
    let took = started.elapsed();
    tokio::time::sleep(FREEZE.saturating_sub(took)).await;
    server.resume().expect("SIGCONT");
    assert!(taken.as_ref().is_err_and(Error::is_timeout), "{taken:?}");
    assert!(took <= TIMEOUT + SLACK, "the take came back after {took:?}");

    let delivery = theirs.take_safe_timeout(PROMPTLY).await.expect("the other consumer takes the item at once");
    assert_eq!(delivery.items(), [b"second".to_vec()]);
    delivery.complete().await.unwrap();
    emptied(&other, &format!("{base}/queue-locks"), "item locks").await;
    // ours works
    theirs.put(&b"third".to_vec()).await.unwrap();
    let delivery = ours.take_safe_timeout(WAIT).await.expect("our consumer takes again");
    assert_eq!(delivery.items(), [b"third".to_vec()]);
    delivery.complete().await.unwrap();
    emptied(&other, &format!("{base}/queue-locks"), "item locks").await;
    assert!(fw.shutdown(WAIT).await.is_ok() && other.shutdown(WAIT).await.is_ok());
    server.stop().await;
}

/// A TTL contender whose create landed while its reply was lost, and whose session ended
/// before the background delete could find it: the node is persistent, so it is still ours
/// to delete in the next session. The server freezes with the create in flight; when it
/// resumes the link loses everything (the create lands, its reply is lost) until the
/// framework has given the session up; then the link heals.
///
/// Whether the old background delete gave up depended on where it was when the new session
/// came: pausing between attempts (it gave up), or in an attempt (which ran in the new
/// session and deleted the node). Short attempts (an operation timeout of 100 ms, against
/// pauses of up to 1 s) make the pause the likely place; the test's own calls on `fw` have
/// deadlines of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_contender_whose_create_landed_unseen_is_deleted_after_the_session_ends() {
    // a silent connection is dropped after 2 s (2/5 of the session): it outlives the freeze
    let session = Duration::from_secs(5);
    let server = server().await;
    let proxy = TcpProxy::start(server.connect_string()).await.expect("proxy");
    let cs = server.connect_string().to_string();
    let fw = fixtures::framework_with(proxy.connect_string(), |b| {
        b.session_timeout(session).operation_timeout(Duration::from_millis(100))
    })
    .await;
    let holder = framework(&cs).await;
    let path = format!("/{}", fixtures::unique("leak-ttl"));
    let mutex = InterProcessMutex::new(&fw, &path).unwrap().with_server_ttl(LONG).unwrap();
    // a first hold: the framework knows the server has TTL nodes (no probe under the freeze)
    with_deadline(WAIT, async { mutex.acquire_timeout(WAIT).await?.release().await }).await.unwrap();
    let held = InterProcessMutex::new(&holder, &path).unwrap().acquire().await.unwrap();
    let losses = fw.status().losses;

    freeze(&fw, server.pid(), || server.pause()).await;
    let started = Instant::now();
    let waited = mutex.acquire_timeout(TIMEOUT).await;
    let took = started.elapsed();
    proxy.set_mode(ProxyMode::Blackhole);
    server.resume().expect("SIGCONT");
    assert!(waited.as_ref().is_err_and(Error::is_timeout), "{waited:?}");
    assert!(took <= TIMEOUT + SLACK, "the acquire came back after {took:?}");
    // the create lands now; nothing reaches us until the framework gives the session up
    let mut status = fw.status_watch();
    tokio::time::timeout(WAIT, status.wait_for(|s| s.losses > losses)).await.expect("session lost").unwrap();
    drop(status);
    let landed = children(&holder, &path).await;
    assert_eq!(landed.len(), 2, "our create landed: {landed:?}");
    proxy.set_mode(ProxyMode::Pass);

    held.release().await.unwrap();
    let next = InterProcessMutex::new(&holder, &path).unwrap();
    let guard = next.acquire_timeout(PROMPTLY).await.expect("the next contender holds at once, not after the TTL");
    guard.release().await.unwrap();
    emptied(&holder, &path, "contenders").await;
    // ours works
    let ours = with_deadline(WAIT, async { mutex.acquire_timeout(WAIT).await?.release().await }).await;
    ours.expect("our TTL mutex works");
    emptied(&holder, &path, "contenders").await;
    assert!(fw.shutdown(WAIT).await.is_ok() && holder.shutdown(WAIT).await.is_ok());
    server.stop().await;
}

/// A double barrier member waiting to enter when the server freezes for longer than the
/// client waits on a silent connection (it drops it, and what was in flight on it is lost):
/// its deadline passes, its withdraw (the delete of its member node) waits for a connection,
/// and the caller gives up on the call then (a `select!`, an outer timeout). The member node
/// must not stay for as long as the session lives: a phantom member opens the barrier for a
/// member too few.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_barrier_withdraw_cut_by_its_caller_leaves_no_member() {
    // the client drops a silent connection after 2/5 of the session: 2.4 s
    let session = Duration::from_secs(6);
    let server = server().await;
    let cs = server.connect_string().to_string();
    let fw = fixtures::framework_with(&cs, |b| b.session_timeout(session).operation_timeout(OPERATION_TIMEOUT)).await;
    let other = framework(&cs).await;
    let path = format!("/{}", fixtures::unique("leak-double"));
    let barrier = DistributedDoubleBarrier::new(&fw, &path, 2).unwrap();
    let waited = Duration::from_millis(3500);
    let waiting = {
        let barrier = DistributedDoubleBarrier::new(&fw, &path, 2).unwrap();
        let fw = fw.clone();
        tokio::spawn(async move {
            // given up a little after its deadline: while its member delete is under way
            let outcome =
                tokio::time::timeout(waited + Duration::from_millis(200), barrier.enter_timeout(waited)).await;
            (outcome, fw.connection_state())
        })
    };
    fixtures::eventually(WAIT, "our member is in", || async { children(&other, &path).await.len() == 1 }).await;

    freeze(&fw, server.pid(), || server.pause()).await;
    let (outcome, state) = waiting.await.unwrap();
    server.resume().expect("SIGCONT");
    assert!(outcome.is_err(), "the caller gave up first: {outcome:?}");
    assert_eq!(state, ConnectionState::Suspended, "the client dropped the silent connection");

    emptied(&other, &path, "members").await;
    // the barrier works: two members enter and leave together
    let theirs = DistributedDoubleBarrier::new(&other, &path, 2).unwrap();
    let (a, b) = tokio::join!(barrier.enter_timeout(WAIT), theirs.enter_timeout(WAIT));
    a.unwrap();
    b.unwrap();
    let (a, b) = tokio::join!(barrier.leave_timeout(WAIT), theirs.leave_timeout(WAIT));
    a.unwrap();
    b.unwrap();
    emptied(&other, &path, "members").await;
    assert!(fw.shutdown(WAIT).await.is_ok() && other.shutdown(WAIT).await.is_ok());
    server.stop().await;
}

/// A tracing subscriber for one future: runs `then` once, when the first span named `name`
/// opens in it (a hook at an exact step of a recipe, to freeze the server right there).
struct OnSpan {
    name: &'static str,
    then: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl tracing::Subscriber for OnSpan {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        if span.metadata().name() == self.name {
            if let Some(then) = self.then.lock().unwrap().take() {
                then();
            }
        }
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// An expiring permit whose swap (the transaction that turns the lease into the permit) is in
/// flight when the server freezes: the acquire ends without a permit (its outcome unknown),
/// and the swap lands when the server resumes. No slot may stay taken by a permit nobody
/// knows the id of: another acquirer gets the one slot at once, not after the expiry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiring_permit_whose_swap_was_cut_by_a_freeze_holds_no_slot() {
    let server = Arc::new(server().await);
    let cs = server.connect_string().to_string();
    let (fw, other) = (framework(&cs).await, framework(&cs).await);
    let path = format!("/{}", fixtures::unique("leak-permit"));
    let semaphore = InterProcessSemaphoreV2::new(&fw, &path, 1).unwrap();
    // a permit first: the transactions' marker node exists (a first transaction would make it)
    semaphore.acquire_with_expiry(LONG).await.unwrap().release().await.unwrap();

    // the server freezes the moment the lease is held: the swap goes to a frozen server
    let frozen = server.clone();
    let freeze = move || {
        frozen.pause().expect("SIGSTOP");
        stopped(frozen.pid());
    };
    let hook = OnSpan { name: "hold", then: Mutex::new(Some(Box::new(freeze))) };
    let started = Instant::now();
    let acquired = semaphore.acquire_with_expiry_timeout(LONG, TIMEOUT).with_subscriber(hook).await;
    let took = started.elapsed();
    assert!(server.is_paused(), "the lease was held before the freeze");
    tokio::time::sleep(FREEZE.saturating_sub(took)).await;
    server.resume().expect("SIGCONT");
    assert!(acquired.is_err(), "no permit through a frozen server: {acquired:?}");
    assert!(took <= TIMEOUT + SLACK, "the acquire came back after {took:?}");

    let theirs = InterProcessSemaphoreV2::new(&other, &path, 1).unwrap();
    let lease = theirs.acquire_timeout(PROMPTLY).await.expect("the one slot is free at once, not after the expiry");
    lease.release().await.unwrap();
    emptied(&other, &format!("{path}/leases"), "leases and permits").await;
    // ours works
    let permit = semaphore.acquire_with_expiry_timeout(LONG, WAIT).await.expect("a permit");
    permit.release().await.unwrap();
    emptied(&other, &format!("{path}/leases"), "leases and permits").await;
    // nor is the swap's transaction marker left (the framework's default marker root)
    emptied(&other, "/zk-recipes-txn", "transaction markers").await;
    assert!(fw.shutdown(WAIT).await.is_ok() && other.shutdown(WAIT).await.is_ok());
    server.stop().await;
}
