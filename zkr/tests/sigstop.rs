//! `zkr lock` frozen with SIGSTOP past the session timeout on a real 3-node ensemble: the
//! server gives the lock away, the thawed zkr notices, stops its command and exits 76, and the
//! fenced store refuses every write the frozen holder's command made with its old token.
//! Writes its result for `docs/RELIABILITY.md` beside the fault suite's (tests/faults/).
//!
//! The same for every other holding recipe: a leader latch (`zkr elect`), a semaphore lease
//! (`zkr semaphore`) and a group member (`zkr group join`), each in a `zkr` frozen past the
//! session timeout on a server of its own: the server expires its session and a contender in
//! the test takes over (the leadership, the lease) or sees it leave (the group); after SIGCONT
//! the latch and the lease holder exit 76, the member registers again (a new session, one node
//! for its id).

use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

use zk_recipes::{GroupMember, InterProcessSemaphoreV2, LeaderLatch};
use zk_recipes_testing::fixtures;
use zk_recipes_testing::{FencedResource, TestingCluster, TestingServer};

async fn sleep(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Where the fault suite's scenarios leave their reports (scripts/reliability.sh reads them).
fn save_report(scenario: &str, report: &str) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("reliability");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{scenario}.md")), report);
}

/// Kills a process group on drop (SIGCONT first, so a stopped one can die), and reaps.
struct Group(std::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        let pgid = self.0.id() as i32;
        // SAFETY: signals to the process group we created.
        unsafe {
            libc::kill(-pgid, libc::SIGCONT);
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigstop_a_zkr_holder_past_the_session_timeout() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let cs = cluster.connect_string().to_string();
    let dir = tempfile::tempdir().unwrap();
    let writes = dir.path().join("writes");
    let term = dir.path().join("term");
    // the holder's command writes its fencing token every 20 ms, and notes a SIGTERM
    let script = format!(
        "trap 'echo term > {t}; exit 0' TERM; while :; do echo $ZK_FENCING_TOKEN >> {w}; sleep 0.02; done",
        t = term.display(),
        w = writes.display()
    );
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_zkr"));
    command.args(["--connect", &cs, "--session-timeout", "4s", "lock", "/sigstop", "--", "sh", "-c", &script]);
    command.process_group(0);
    let mut holder = Group(command.spawn().unwrap());
    let read_tokens = || -> Vec<i64> {
        std::fs::read_to_string(&writes).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
    };
    fixtures::eventually(Duration::from_secs(20), "the zkr holder never ran its command", || async {
        !read_tokens().is_empty()
    })
    .await;
    let old_token = read_tokens()[0];
    // freeze zkr (its command keeps running: the classic paused holder)
    let paused_at = Instant::now();
    // SAFETY: a signal to our child process.
    unsafe { libc::kill(holder.0.id() as i32, libc::SIGSTOP) };
    let fw = fixtures::framework(&cs).await;
    let mutex = zk_recipes::InterProcessMutex::new(&fw, "/sigstop").unwrap();
    let guard = mutex.acquire_timeout(Duration::from_secs(30)).await.expect("the lock after the expiry");
    let waited = paused_at.elapsed();
    assert!(guard.fencing_token() > old_token, "a higher token for the new holder");
    assert!(waited >= Duration::from_secs(3), "the server kept the paused holder's lock for its session: {waited:?}");
    // the new holder writes; the store remembers its token
    let resource = FencedResource::default();
    for t in read_tokens() {
        resource.write(t);
    }
    assert!(resource.write(guard.fencing_token()));
    let seen_before_resume = read_tokens().len();
    // meanwhile the frozen holder's command goes on writing with its old token
    sleep(300).await;
    // thaw zkr: it learns its session is gone, stops its command, exits 76
    // SAFETY: as above.
    unsafe { libc::kill(holder.0.id() as i32, libc::SIGCONT) };
    let resumed = Instant::now();
    let code = loop {
        if let Some(status) = holder.0.try_wait().unwrap() {
            break status.code();
        }
        assert!(resumed.elapsed() < Duration::from_secs(20), "zkr did not exit after SIGCONT");
        sleep(20).await;
    };
    let reacted = resumed.elapsed();
    assert_eq!(code, Some(76), "zkr exits 76 when the lock was lost while held");
    assert!(term.exists(), "the command got SIGTERM");
    // the paused holder's command kept writing with the old token: the store refuses all of it
    let late: Vec<i64> = read_tokens().into_iter().skip(seen_before_resume).collect();
    let refused = late.iter().filter(|t| !resource.write(**t)).count();
    assert!(!late.is_empty(), "the frozen holder's command wrote on (the paused-holder problem)");
    assert_eq!(refused, late.len(), "the fenced store refuses every stale write");
    assert!(resource.rejected().iter().all(|(t, _)| *t == old_token));
    guard.release().await.unwrap();
    let report = format!(
        "### sigstop-zkr-holder\n\n`zkr lock /sigstop -- <command writing its token>` is frozen with SIGSTOP (its command keeps running) for longer than the session timeout, then thawed with SIGCONT.\n\nThe lock went to a new holder {:.1} s after the freeze (the server expired the frozen session), with a higher fencing token ({} > {}). After SIGCONT, zkr noticed the loss, sent SIGTERM to its command and exited 76 within {:.0} ms. The frozen holder's command wrote {} times with the old token after the new holder's first write: the fenced store refused all of them ({} stale writes refused, 0 accepted). A paused process cannot notice anything; fencing is what protects the resource.\n",
        waited.as_secs_f64(),
        resource.highest(),
        old_token,
        reacted.as_secs_f64() * 1000.0,
        late.len(),
        refused,
    );
    save_report("sigstop-zkr-holder", &report);
    eprintln!("{report}");
    drop(holder);
}

/// The session timeout zkr runs with.
const SESSION: Duration = Duration::from_secs(4);
/// The bound within which a contender takes over after the freeze: the session timeout + 3 s.
const TAKE_OVER: Duration = Duration::from_secs(7);
/// The bound within which the thawed zkr exits.
const EXIT: Duration = Duration::from_secs(10);

impl Group {
    fn signal(&self, signal: i32) {
        // SAFETY: a signal to our child process (zkr itself, not its command).
        unsafe { libc::kill(self.0.id() as i32, signal) };
    }

    /// Freezes zkr until `taken` (a contender took `what` over, which must be true) and
    /// checks that it took no less than the session timeout; says how long it took.
    async fn freeze_until(&self, what: &str, taken: impl std::future::Future<Output = bool>) -> String {
        let frozen = Instant::now();
        self.signal(libc::SIGSTOP);
        assert!(taken.await, "{what}: not taken over within {TAKE_OVER:?} of the freeze");
        let took = frozen.elapsed();
        assert!(took >= SESSION - Duration::from_millis(500), "{what} moved before the session expired: {took:?}");
        format!("{:.1} s after the freeze", took.as_secs_f64())
    }

    /// Thaws zkr and waits for it to exit 76; says how long that took.
    async fn thaw_until_exit_76(&mut self) -> String {
        self.signal(libc::SIGCONT);
        let thawed = Instant::now();
        assert_eq!(self.exit_code(EXIT).await, Some(76), "the thawed zkr exits 76");
        format!("the thawed zkr exited 76 after {:.0} ms", thawed.elapsed().as_secs_f64() * 1000.0)
    }

    /// Waits for zkr's exit code.
    async fn exit_code(&mut self, bound: Duration) -> Option<i32> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.code();
            }
            assert!(started.elapsed() < bound, "zkr did not exit within {bound:?} after SIGCONT");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// `zkr --connect cs --session-timeout 4s ARGS -- sh -c 'touch READY; sleep 60'`, holding once
/// READY exists.
async fn holding_zkr(cs: &str, args: &[&str], dir: &tempfile::TempDir, name: &str) -> Group {
    let ready = dir.path().join(name);
    let script = format!("touch {}; sleep 60", ready.display());
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_zkr"));
    command.args(["--connect", cs, "--session-timeout", "4s"]).args(args).args(["--", "sh", "-c", &script]);
    command.stdout(std::process::Stdio::null()).process_group(0);
    let zkr = Group(command.spawn().unwrap());
    fixtures::eventually(Duration::from_secs(20), format!("zkr {args:?} holding"), || async { ready.exists() }).await;
    zkr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigstop_a_latch_a_lease_and_a_member_past_the_session_timeout() {
    let server = TestingServer::start().await.unwrap();
    let cs = server.connect_string().to_string();
    let fw = fixtures::framework(&cs).await;
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();

    // a leader latch: the contender leads once the frozen leader's session expires
    let mut zkr = holding_zkr(&cs, &["elect", "/sigstop/latch", "--id", "frozen"], &dir, "latch").await;
    let latch = LeaderLatch::new(&fw, "/sigstop/latch", "contender").unwrap();
    latch.start().await.unwrap();
    assert!(!latch.has_leadership(), "the frozen zkr leads first");
    let took = zkr
        .freeze_until("leadership", async { fixtures::in_time(latch.await_leadership_timeout(TAKE_OVER).await) })
        .await;
    let exited = zkr.thaw_until_exit_76().await;
    lines.push(format!("leader latch (`zkr elect`): the contender led {took}; {exited}"));
    latch.close().await.unwrap();

    // a semaphore lease: the contender gets the one lease once the frozen holder's session expires
    let args = ["semaphore", "/sigstop/sem", "--leases", "1"];
    let mut zkr = holding_zkr(&cs, &args, &dir, "sem").await;
    let sem = InterProcessSemaphoreV2::new(&fw, "/sigstop/sem", 1).unwrap();
    assert!(sem.try_acquire().await.unwrap().is_none(), "the frozen zkr holds the lease");
    let lease = std::cell::RefCell::new(None);
    let took = zkr
        .freeze_until("the lease", async {
            *lease.borrow_mut() = Some(sem.acquire_timeout(TAKE_OVER).await.unwrap());
            lease.borrow().is_some()
        })
        .await;
    let exited = zkr.thaw_until_exit_76().await;
    lines.push(format!("semaphore lease (`zkr semaphore`): the contender got the lease {took}; {exited}"));
    lease.into_inner().expect("the lease").release().await.unwrap();

    // a group member: it leaves the other members' view once its session expires
    let args = ["group", "join", "/sigstop/group", "--id", "frozen"];
    let mut zkr = holding_zkr(&cs, &args, &dir, "group").await;
    let observer = GroupMember::new(&fw, "/sigstop/group", "observer", "").unwrap();
    observer.start().await.unwrap();
    fixtures::eventually(TAKE_OVER, "the frozen member in the view", || async {
        observer.members().contains_key("frozen")
    })
    .await;
    let took = zkr
        .freeze_until("the membership", async {
            fixtures::eventually(TAKE_OVER, "the frozen member gone from the view", || async {
                !observer.members().contains_key("frozen")
            })
            .await;
            true
        })
        .await;
    zkr.signal(libc::SIGCONT);
    let thawed = Instant::now();
    // the thawed member registers again at once, in a new session (`zkr group join` exits 76
    // only when the registration stays gone for a session timeout), one node for its id
    fixtures::eventually(EXIT, "the thawed member back in the view", || async {
        observer.members().contains_key("frozen")
    })
    .await;
    let back = thawed.elapsed();
    assert!(zkr.0.try_wait().unwrap().is_none(), "the thawed member keeps running");
    let ids = fw.children("/sigstop/group").await.unwrap();
    assert_eq!(ids.iter().filter(|id| *id == "frozen").count(), 1, "one registration per id: {ids:?}");
    lines.push(format!(
        "group member (`zkr group join`): it left the observer's view {took}; the thawed zkr registered again (a new session, one node for its id) {:.0} ms after SIGCONT and kept running",
        back.as_secs_f64() * 1000.0
    ));
    drop(zkr);
    fixtures::eventually(TAKE_OVER, "the killed member gone (its session expired)", || async {
        !observer.members().contains_key("frozen")
    })
    .await;
    observer.close().await.unwrap();
    fw.close();

    let report = format!(
        "### sigstop-zkr-recipes\n\nA `zkr` holding a leader latch, a semaphore lease or a group membership is frozen with SIGSTOP for longer than the session timeout ({SESSION:?}), then thawed: in each case the server expired the frozen session, a contender in the test took over (or saw the member leave) no earlier than the session timeout and within {TAKE_OVER:?}; the thawed zkr noticed the loss and exited 76 (latch, lease) or registered again in a new session (group member).\n\n{}\n",
        lines.iter().map(|l| format!("- {l}")).collect::<Vec<_>>().join("\n")
    );
    save_report("sigstop-zkr-recipes", &report);
    eprintln!("{report}");
}
