//! `Framework::shutdown` against real ZooKeeper: a process that holds a lock, a leadership or a
//! group membership under a 30 s session, drops it, shuts down and exits frees it at once for
//! another process; shutdown is idempotent, closes the framework, lets pending background
//! deletes finish, and tells when the server did not acknowledge the close.
//!
//! The "other process" is this test binary run again as a child: the test `child` acts only
//! when `SHUTDOWN_CHILD` names a role (it is a no-op in a normal run). The child prints
//! `READY <negotiated session timeout, ms>` once it holds, waits for a line on its stdin, then drops what it holds
//! (the group member only after the shutdown: its node must go with the session), shuts down, prints `SHUTDOWN <outcome>` and exits at once (`process::exit`, as a service
//! returning from `main`: nothing runs after it). The parent kills it (by pid, through
//! `kill_on_drop`) if the test fails; the child also exits when its stdin closes.

use assert_matches::assert_matches;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use zk_recipes::CreateMode;
use zk_recipes::{Error, Framework, GroupMember, InterProcessMutex, LeaderLatch};
use zk_recipes_testing::{fixtures, TestingServer};

mod faults;

/// The child's session timeout: far longer than the 1 s the tests allow after its exit.
const CHILD_SESSION: Duration = Duration::from_secs(30);
/// How long after the child's exit the other process must have what it held.
const FREED_WITHIN: Duration = Duration::from_secs(1);
const WAIT: Duration = Duration::from_secs(30);

const ROLE: &str = "SHUTDOWN_CHILD";
const CONNECT: &str = "SHUTDOWN_CHILD_CONNECT";
const PATH: &str = "SHUTDOWN_CHILD_PATH";

/// The child's side: see the module docs.
#[test]
fn child() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let cs = std::env::var(CONNECT).expect("connect string");
    let path = std::env::var(PATH).expect("path");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let outcome = runtime.block_on(async move {
        let fw = Framework::builder()
            .connect_string(cs)
            .session_timeout(CHILD_SESSION)
            .connection_timeout(Duration::from_secs(10))
            .connect()
            .await
            .expect("child: connect");
        let held: Box<dyn std::any::Any + Send> = match role.as_str() {
            "lock" => Box::new(InterProcessMutex::new(&fw, &path).unwrap().acquire().await.expect("child: acquire")),
            "latch" => {
                let latch = LeaderLatch::new(&fw, &path, "child").unwrap();
                latch.start().await.unwrap();
                latch.await_leadership().await.expect("child: leadership");
                Box::new(latch)
            }
            "member" => {
                let member = GroupMember::new(&fw, &path, "child", b"c".to_vec()).unwrap();
                member.start().await.unwrap();
                let node = member.wait_for_initial_create(WAIT).await.expect("child: member node");
                println!("NODE {node}");
                Box::new(member)
            }
            other => panic!("unknown role {other}"),
        };
        println!("READY {}", fw.negotiated_session_timeout().unwrap().as_millis());
        // the parent says when; its going away (stdin closed) ends the child as well
        let mut line = String::new();
        let _ = BufReader::new(tokio::io::stdin()).read_line(&mut line).await;
        // the member is kept through the shutdown: its node must go with the session (the
        // lock and the latch are dropped first, as a service ending normally does)
        let kept = (role == "member").then_some(held);
        let outcome = fw.shutdown(Duration::from_secs(10)).await;
        drop(kept);
        outcome
    });
    println!("SHUTDOWN {outcome:?}");
    // as a service returning from main: nothing of the runtime runs after this
    std::process::exit(0);
}

/// The parent's handle on a child; it is killed (by pid) when this drops.
struct ChildProcess {
    process: Child,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl ChildProcess {
    fn spawn(role: &str, cs: &str, path: &str) -> ChildProcess {
        let mut process = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "child", "--nocapture", "--test-threads=1"])
            .env(ROLE, role)
            .env(CONNECT, cs)
            .env(PATH, path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the child");
        let stdout = BufReader::new(process.stdout.take().expect("stdout")).lines();
        ChildProcess { process, stdout }
    }

    /// What follows `prefix` on the first line of the child's output that has it (libtest
    /// writes `test child ... ` before the child's first line).
    async fn line(&mut self, prefix: &str) -> String {
        fixtures::within(WAIT, async {
            loop {
                let line = self.stdout.next_line().await.expect("child stdout").unwrap_or_else(|| {
                    panic!("the child ended before printing {prefix:?}");
                });
                if let Some(at) = line.find(prefix) {
                    return line[at + prefix.len()..].trim().to_string();
                }
            }
        })
        .await
    }

    /// Waits until the child holds; checks that its session would outlive the test's bound.
    async fn ready(&mut self) {
        let session: u64 = self.line("READY").await.parse().expect("the session timeout");
        assert!(Duration::from_millis(session) >= CHILD_SESSION, "the child's session: {session} ms");
    }

    /// Tells the child to drop what it holds and shut down; returns its shutdown's outcome
    /// and the instant it exited.
    async fn shut_down(&mut self) -> (String, Instant) {
        let mut stdin = self.process.stdin.take().expect("stdin");
        stdin.write_all(b"go\n").await.expect("write to the child");
        stdin.flush().await.expect("flush");
        let outcome = self.line("SHUTDOWN").await;
        let status = fixtures::within(WAIT, self.process.wait()).await.expect("the child's exit");
        let exited = Instant::now();
        assert!(status.success(), "child: {status}");
        (outcome, exited)
    }
}

/// A server whose sessions may last as long as the child's.
async fn server() -> TestingServer {
    TestingServer::builder().max_session_timeout(CHILD_SESSION).start().await.expect("server")
}

fn assert_freed_in_time(what: &str, exited: Instant, freed: Instant) {
    let late = freed.saturating_duration_since(exited);
    assert!(late < FREED_WITHIN, "{what} {late:?} after the child's exit (session timeout {CHILD_SESSION:?})");
}

#[tokio::test]
async fn a_lock_of_a_process_that_shut_down_is_free_at_once() {
    let server = server().await;
    let path = format!("/{}", fixtures::unique("shutdown-lock"));
    let mut child = ChildProcess::spawn("lock", server.connect_string(), &path);
    child.ready().await;
    let fw = fixtures::framework(server.connect_string()).await;
    let mutex = InterProcessMutex::new(&fw, &path).unwrap();
    assert!(mutex.try_acquire().await.unwrap().is_none(), "the child holds the lock");
    let waiting = tokio::spawn(async move {
        let guard = mutex.acquire().await;
        (guard, Instant::now())
    });
    let (outcome, exited) = child.shut_down().await;
    assert_eq!(outcome, "Ok(())", "the child's shutdown was acknowledged");
    let (guard, acquired) = fixtures::within(WAIT, waiting).await.unwrap();
    let guard = guard.expect("acquired");
    assert_freed_in_time("the lock was acquired", exited, acquired);
    guard.release().await.unwrap();
    fw.shutdown(WAIT).await.unwrap();
}

#[tokio::test]
async fn a_leadership_of_a_process_that_shut_down_passes_at_once() {
    let server = server().await;
    let path = format!("/{}", fixtures::unique("shutdown-latch"));
    let mut child = ChildProcess::spawn("latch", server.connect_string(), &path);
    child.ready().await;
    let fw = fixtures::framework(server.connect_string()).await;
    let latch = LeaderLatch::new(&fw, &path, "parent").unwrap();
    latch.start().await.unwrap();
    // the parent is in the race, behind the child
    fixtures::eventually(WAIT, "two participants", || async {
        fw.children(&path).await.map(|c| c.len() == 2).unwrap_or(false)
    })
    .await;
    assert!(!latch.has_leadership());
    let (outcome, exited) = child.shut_down().await;
    assert_eq!(outcome, "Ok(())", "the child's shutdown was acknowledged");
    fixtures::within(WAIT, latch.await_leadership()).await.unwrap();
    assert_freed_in_time("leadership was taken", exited, Instant::now());
    latch.close().await.unwrap();
    fw.shutdown(WAIT).await.unwrap();
}

#[tokio::test]
async fn a_member_of_a_process_that_shut_down_leaves_at_once() {
    let server = server().await;
    let path = format!("/{}", fixtures::unique("shutdown-group"));
    let mut child = ChildProcess::spawn("member", server.connect_string(), &path);
    let node = child.line("NODE").await;
    child.ready().await;
    let fw = fixtures::framework(server.connect_string()).await;
    let node = format!("{path}/{}", node.rsplit('/').next().unwrap());
    assert!(fw.exists(&node).await.unwrap().is_some(), "the child's member node {node}");
    let (outcome, exited) = child.shut_down().await;
    assert_eq!(outcome, "Ok(())", "the child's shutdown was acknowledged");
    fixtures::eventually(WAIT, "the member node is gone", || async { fw.exists(&node).await.unwrap().is_none() }).await;
    assert_freed_in_time("the member node was gone", exited, Instant::now());
    fw.shutdown(WAIT).await.unwrap();
}

#[tokio::test]
async fn shutdown_is_acknowledged_idempotent_and_closes() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("shutdown-eph"));
    fw.create(&path, b"", CreateMode::Ephemeral).await.unwrap();
    let clone = fw.clone();
    fw.shutdown(WAIT).await.expect("acknowledged");
    // acknowledged: the server has removed the session's ephemeral node already
    other.sync(&path).await.unwrap();
    assert_eq!(other.exists(&path).await.unwrap(), None, "the ephemeral node went with the session");
    // closed, for every clone
    assert!(fw.is_closed() && clone.is_closed());
    assert_matches!(clone.get_data("/").await, Err(Error::Closed));
    assert_matches!(fw.create("/x", b"", CreateMode::Persistent).await.unwrap_err(), Error::Closed);
    assert!(fw.client().is_err_and(|e| e.is_closed()));
    // idempotent: the same answer, at once
    let again = Instant::now();
    assert_matches!(clone.shutdown(Duration::from_millis(1)).await, Ok(()));
    assert!(again.elapsed() < Duration::from_millis(500), "{:?}", again.elapsed());
    fw.close();
    assert_matches!(fw.shutdown(WAIT).await, Ok(()));
    other.shutdown(WAIT).await.unwrap();
}

#[tokio::test]
async fn a_shutdown_after_close_still_waits_for_the_server() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("shutdown-after-close"));
    fw.create(&path, b"", CreateMode::Ephemeral).await.unwrap();
    fw.close();
    fw.shutdown(WAIT).await.expect("acknowledged");
    other.sync(&path).await.unwrap();
    assert_eq!(other.exists(&path).await.unwrap(), None);
    other.shutdown(WAIT).await.unwrap();
}

#[tokio::test]
async fn pending_background_deletes_finish_before_the_session_closes() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let root = format!("/{}", fixtures::unique("shutdown-drain"));
    let nodes: Vec<String> = (0..5).map(|i| format!("{root}/n{i}")).collect();
    for node in &nodes {
        fw.create(node, b"", CreateMode::Persistent).await.unwrap();
    }
    for node in &nodes {
        fw.delete_in_background(node.clone(), None);
    }
    assert!(fw.pending_background_deletes() > 0);
    fw.shutdown(WAIT).await.expect("acknowledged");
    assert_eq!(fw.pending_background_deletes(), 0);
    other.sync(&root).await.unwrap();
    assert_eq!(other.children(&root).await.unwrap(), Vec::<String>::new(), "persistent nodes deleted");
    other.shutdown(WAIT).await.unwrap();
}

#[tokio::test]
async fn a_shutdown_the_server_cannot_answer_times_out_and_says_so() {
    let server = server().await;
    let fw = fixtures::framework_with(server.connect_string(), |b| b.session_timeout(CHILD_SESSION)).await;
    fw.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
    server.stop().await;
    let limit = Duration::from_secs(2);
    let started = Instant::now();
    let outcome = fw.shutdown(limit).await;
    let took = started.elapsed();
    assert_matches!(outcome, Err(Error::Timeout { timeout, step: zk_recipes::TimeoutStep::Closing, .. }) if timeout == limit);
    assert!(outcome.unwrap_err().is_timeout());
    assert!(took >= limit && took < limit + Duration::from_secs(1), "{took:?}");
    // closed all the same, and the answer stays
    assert_matches!(fw.get_data("/e").await, Err(Error::Closed));
    assert_matches!(fw.shutdown(WAIT).await, Err(Error::Timeout { timeout, step: zk_recipes::TimeoutStep::Closing, .. }) if timeout == limit);
}
