//! `zkr lock` frozen with SIGSTOP past the session timeout on a real 3-node ensemble: the
//! server gives the lock away, the thawed zkr notices, stops its command and exits 76, and the
//! fenced store refuses every write the frozen holder's command made with its old token.
//! Writes its result for `docs/RELIABILITY.md` beside the fault suite's (tests/faults/).

use std::time::{Duration, Instant};

use zk_recipes_testing::fixtures;
use zk_recipes_testing::{FencedResource, TestingCluster};

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
    use std::os::unix::process::CommandExt;
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
    let guard = mutex.acquire_timeout(Duration::from_secs(30)).await.unwrap().expect("the lock after the expiry");
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
