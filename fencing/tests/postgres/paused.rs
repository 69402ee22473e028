//! A holder paused (SIGSTOP) past its session while another takes the lock and writes: its
//! write, made when it resumes with the token of its lost hold, is refused by PostgreSQL.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use zk_recipes::{Framework, InterProcessMutex};
use zk_recipes_fencing::{Fence, FenceError, FencingToken};
use zk_recipes_testing::fixtures::{framework, shared_server, unique, within};

use super::{connect, connect_to, counter, counter_table, highest, pg, table};

/// What the child's lines start with (the test harness prints its own lines too).
const SAYS: &str = "paused-holder: ";
/// The child's session timeout: short, so that its pause outlasts it.
const CHILD_SESSION: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_paused_past_its_session_has_its_write_refused_by_postgres() {
    let (cs, pg) = (shared_server().await, pg().await);
    let (lock, name) = (format!("/{}", unique("fenced-paused")), table("paused"));
    let mut db = connect().await;
    counter_table(&db, &name).await;

    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "paused::paused_holder_process", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{cs}\n{}\n{lock}\n{name}", pg.connection_string()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the paused holder");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let child_token: i64 = said(&mut lines, "holding").await.parse().expect("token");
    wait_stopped(&child).await;

    // Its session expires while it is stopped; then the lock is ours, with a newer token.
    let fw = framework(&cs).await;
    let guard = InterProcessMutex::new(&fw, &lock).unwrap().acquire_timeout(Duration::from_secs(30)).await.unwrap();
    assert!(guard.fencing_token() > child_token, "a newer hold has a higher token");
    let fence = Fence::open(&db).await.unwrap();
    let token = FencingToken::of(&guard);
    let sql = format!("UPDATE {name} SET n = n + 1, last = $1 WHERE key = 'k'");
    assert_eq!(fence.execute(&mut db, &token, "k", &sql, &[&token.value()]).await.unwrap(), 1);

    // Resumed, the child writes what it decided before the pause, with its old token.
    signal(&child, libc::SIGCONT);
    assert_eq!(said(&mut lines, "refused").await, token.value().to_string(), "refused, naming our token");
    let status = within(Duration::from_secs(30), child.wait()).await.expect("child exits");
    assert!(status.success(), "the paused holder failed: {status}");

    // Nothing lost, nothing of the stale write: our increment and token only.
    assert_eq!(counter(&db, &name).await, (1, 0, token.value()));
    assert_eq!(highest(&db, token.scope(), "k").await, Some(token.value()));
    // Work goes on: a later hold writes again.
    drop(guard);
    let again = InterProcessMutex::new(&fw, &lock).unwrap().acquire().await.unwrap();
    let token = FencingToken::of(&again);
    fence.execute(&mut db, &token, "k", &sql, &[&token.value()]).await.unwrap();
    assert_eq!(counter(&db, &name).await, (2, 0, token.value()));
}

/// The environment variable that makes the test binary the paused holder: the ZooKeeper and
/// PostgreSQL connect strings, the lock path and the table, one per line.
const CHILD_ENV: &str = "FENCING_PAUSED_HOLDER";

/// The paused holder, run by the test above as a child process (this test binary, this test
/// alone): ignored in a plain run, where it has nothing to do.
#[tokio::test]
#[ignore = "the child process of a_holder_paused_past_its_session_has_its_write_refused_by_postgres"]
async fn paused_holder_process() {
    let config = std::env::var(CHILD_ENV).expect("run by the paused-holder test");
    let [zk, pg, lock, name]: [&str; 4] = config.lines().collect::<Vec<_>>().try_into().expect("four lines");
    // SAFETY: prctl with PR_SET_PDEATHSIG only sets this process's parent-death signal.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let fw = Framework::builder().connect_string(zk).session_timeout(CHILD_SESSION).connect().await.unwrap();
    let mut db = connect_to(pg).await;
    let fence = Fence::open(&db).await.unwrap();
    let guard = InterProcessMutex::new(&fw, lock).unwrap().acquire().await.unwrap();
    let token = FencingToken::of(&guard);
    println!("{SAYS}holding {}", token.value());
    // SAFETY: raise only sends a signal to this process; SIGSTOP stops it until SIGCONT.
    unsafe { libc::raise(libc::SIGSTOP) };
    // Resumed, its session long gone (it does not know yet): the write decided before.
    let sql = format!("UPDATE {name} SET n = n + 1, stale = stale + 1, last = $1 WHERE key = 'k'");
    match fence.execute(&mut db, &token, "k", &sql, &[&token.value()]).await {
        Err(FenceError::Stale { highest, token: refused, .. }) if refused == token.value() => {
            println!("{SAYS}refused {highest}")
        }
        other => println!("{SAYS}written {other:?}"),
    }
}

/// The text after `{SAYS}{word} ` in the child's next line of its own.
async fn said(lines: &mut Lines<BufReader<ChildStdout>>, word: &str) -> String {
    loop {
        let line = within(Duration::from_secs(30), lines.next_line()).await.expect("read").expect("the child's line");
        // the harness's `test … ... ` may precede it on the line
        if let Some(said) = line.split_once(SAYS).map(|(_, said)| said) {
            let (got, rest) = said.split_once(' ').unwrap_or((said, ""));
            assert_eq!(got, word, "the paused holder said {said:?}");
            return rest.to_string();
        }
    }
}

/// Waits until the child has stopped itself (state `T` in /proc).
async fn wait_stopped(child: &Child) {
    let stat = format!("/proc/{}/stat", child.id().expect("running"));
    zk_recipes_testing::fixtures::eventually(Duration::from_secs(10), "the paused holder stops", || {
        let stat = stat.clone();
        async move {
            std::fs::read_to_string(&stat)
                .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('T')))
        }
    })
    .await;
}

fn signal(child: &Child, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id().expect("running")).expect("pid");
    // SAFETY: kill(2) has no memory-safety preconditions; the child is not reaped yet.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "signal the paused holder");
}
