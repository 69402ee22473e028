//! The `zkr` binary against real ZooKeeper: exit codes, CMD supervision, what it prints, what
//! it leaves on the server. Every test runs under its own unique paths on the shared server;
//! the server-stop test has a server of its own.
//!
//! Every zkr process is started in a process group of its own and held by a [`Zkr`] guard
//! whose `Drop` SIGKILLs the whole group (zkr and its CMD) and reaps zkr, also when a test
//! fails.

mod bad_input;
mod compressed;
mod hostile;
mod latch;
mod lease;
mod queue;
mod registry;
mod rm;
mod tooling;
mod transport;
mod watch;

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use tokio::sync::mpsc;
use tokio::time::Instant;
use zk_recipes::{
    DistributedAtomicInteger, DistributedAtomicLong, DistributedBarrier, DistributedDoubleBarrier, Error, Framework,
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, LeaderLatch, SharedCount,
};
use zk_recipes_testing::fixtures;
use zk_recipes_testing::TestingServer;

const ZKR: &str = env!("CARGO_BIN_EXE_zkr");
const WAIT: Duration = Duration::from_secs(20);

/// A running zkr. `Drop` SIGKILLs its process group and reaps it.
struct Zkr {
    what: String,
    child: std::process::Child,
    pid: i32,
    lines: mpsc::UnboundedReceiver<String>,
    stderr: Arc<Mutex<String>>,
    stderr_closed: Option<tokio::sync::oneshot::Receiver<()>>,
    code: Option<i32>,
}

impl Zkr {
    /// `zkr --connect <cs> <args...>` with extra environment `env`.
    fn start(cs: &str, args: &[&str], env: &[(&str, &str)]) -> Zkr {
        let what = format!("zkr {}", args.join(" "));
        let mut command = Command::new(ZKR);
        command
            .args(["--connect", cs])
            .args(args)
            .env_remove("ZK_CONNECT")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().expect("spawn zkr");
        let pid = child.id() as i32;
        let (tx, lines) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (sink, pipe) = (stderr.clone(), child.stderr.take().expect("stderr"));
        let (closed, stderr_closed) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
            let _ = closed.send(());
        });
        Zkr { what, child, pid, lines, stderr, stderr_closed: Some(stderr_closed), code: None }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The next line on stdout.
    async fn line(&mut self) -> String {
        match tokio::time::timeout(WAIT, self.lines.recv()).await {
            Ok(Some(line)) => line,
            other => panic!("{}: no line on stdout ({other:?}); stderr:\n{}", self.what, self.stderr()),
        }
    }

    /// Every further line on stdout, until it closes (and stderr is closed too).
    async fn rest(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            match tokio::time::timeout(WAIT, self.lines.recv()).await {
                Ok(Some(line)) => out.push(line),
                Ok(None) => break,
                Err(_) => panic!("{}: stdout never closed; stderr:\n{}", self.what, self.stderr()),
            }
        }
        if let Some(closed) = self.stderr_closed.take() {
            let closed = tokio::time::timeout(WAIT, closed).await;
            assert!(closed.is_ok(), "{}: stderr never closed", self.what);
        }
        out
    }

    /// Waits for zkr to exit: its exit code (128 + signal when killed).
    async fn exit_code(&mut self) -> i32 {
        if let Some(code) = self.code {
            return code;
        }
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
                self.code = Some(code);
                return code;
            }
            assert!(Instant::now() < deadline, "{} did not exit; stderr:\n{}", self.what, self.stderr());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Sends `sig` to zkr (not to its group), unless it was reaped.
    fn signal(&self, sig: i32) {
        if self.code.is_none() {
            // SAFETY: kill(2) on our own unreaped child.
            unsafe {
                libc::kill(self.pid, sig);
            }
        }
    }
}

impl Drop for Zkr {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group we created (zkr is its leader); a group whose
        // members are all gone answers ESRCH.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// Runs zkr to completion: (exit code, stdout lines, stderr).
async fn run(cs: &str, args: &[&str]) -> (i32, Vec<String>, String) {
    run_with(cs, args, &[]).await
}

async fn run_with(cs: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, Vec<String>, String) {
    let mut zkr = Zkr::start(cs, args, env);
    let code = zkr.exit_code().await;
    let lines = zkr.rest().await;
    (code, lines, zkr.stderr())
}

fn path(prefix: &str) -> String {
    format!("/{}", fixtures::unique(&format!("cli-{prefix}")))
}

/// Children of `path` (none when it does not exist), sorted.
async fn children(fw: &Framework, path: &str) -> Vec<String> {
    let mut found = match fw.children(path).await {
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Vec::new(),
        other => other.unwrap(),
    };
    found.sort();
    found
}

async fn wait_for_children(fw: &Framework, path: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + WAIT;
    loop {
        let found = children(fw, path).await;
        if found.len() == n {
            return found;
        }
        assert!(Instant::now() < deadline, "{path} never had {n} children: {found:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `<node path> <token>` split, the node checked against the server: it exists, is
/// ephemeral, and its czxid is the token.
async fn check_held_line(fw: &Framework, line: &str, under: &str) -> (String, i64) {
    let (node, token) = line.split_once(' ').unwrap_or_else(|| panic!("not `<path> <token>`: {line:?}"));
    assert!(node.starts_with(&format!("{under}/")), "{node} is not under {under}");
    let token: i64 = token.parse().unwrap_or_else(|_| panic!("token in {line:?}"));
    let (_, stat) = fw.get_data(node).await.expect("the held node exists");
    assert_eq!(stat.czxid, token, "the fencing token is the node's czxid");
    assert_ne!(stat.ephemeral_owner, 0, "the node is ephemeral");
    (node.to_string(), token)
}

fn temp_file(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_str().unwrap().to_string()
}

fn read(file: &str) -> String {
    std::fs::read_to_string(file).unwrap_or_default()
}

/// A CMD that prints `ready`, then waits; on SIGTERM it writes `term` into `$FILE` and exits 0.
const TERM_RECORDER: &str =
    r#"trap 'echo term > "$FILE"; kill $! 2>/dev/null; exit 0' TERM; echo ready; sleep 30 & wait"#;

#[tokio::test]
async fn usage_errors_exit_2_and_unreachable_exits_69() {
    let closed = format!("127.0.0.1:{}", fixtures::closed_port());
    // refused before connecting: exit 2 even with ZooKeeper unreachable
    for args in [
        &["lock", "relative/path"][..],
        &["lock", "/a//b", "--", "true"],
        &["lock", "/"],
        &["lock", "/a", "/a"],
        &["semaphore", "/s", "--leases", "0"],
        &["semaphore", "/s", "--leases", "2", "--count", "3"],
        &["atomic", "/c", "add", "3000000000", "--int"],
        &["double-barrier", "/d", "--members", "0"],
        &["inspect", "no-slash"],
        &["--namespace", "bad//ns", "inspect", "/x"],
    ] {
        let (code, out, err) = run(&closed, args).await;
        assert_eq!(code, 2, "zkr {args:?}: {err}");
        assert!(out.is_empty(), "{out:?}");
        assert!(err.starts_with("zkr: "), "a message on stderr for {args:?}: {err:?}");
    }
    // clap's own usage errors
    for args in [&["lock", "/a", "--kind", "spin"][..], &["lock", "/a", "--timeout", "5"], &["frobnicate"]] {
        let (code, _, err) = run(&closed, args).await;
        assert_eq!(code, 2, "zkr {args:?}: {err}");
        assert!(!err.is_empty());
    }
    let started = Instant::now();
    let (code, _, err) = run(&closed, &["--connection-timeout", "300ms", "lock", "/a", "--", "true"]).await;
    assert_eq!(code, 69, "{err}");
    assert!(err.contains("cannot reach ZooKeeper"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "gave up in {:?}", started.elapsed());
    // global options also after the subcommand
    let (code, _, err) = run(&closed, &["inspect", "/a", "--connection-timeout", "300ms"]).await;
    assert_eq!(code, 69, "{err}");
}

#[tokio::test]
async fn cmd_gets_the_lock_env_and_its_exit_code_passes_through() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let lock = path("env");
    let dir = tempfile::tempdir().unwrap();
    let go = temp_file(&dir, "go");
    let script = r#"echo "$ZK_LOCK_PATH $ZK_FENCING_TOKEN"; while [ ! -e "$GO" ]; do sleep 0.02; done; exit 7"#;
    let mut zkr = Zkr::start(&cs, &["lock", &lock, "--data", "who: me", "--", "sh", "-c", script], &[("GO", &go)]);
    let line = zkr.line().await;
    let (node, _) = check_held_line(&fw, &line, &lock).await;
    assert_eq!(fw.get_data(&node).await.unwrap().0, b"who: me", "--data is the node's data");
    std::fs::write(&go, "").unwrap();
    assert_eq!(zkr.exit_code().await, 7, "{}", zkr.stderr());
    assert!(children(&fw, &lock).await.is_empty(), "released after CMD");

    let (code, _, err) = run(&cs, &["lock", &lock, "--", "sh", "-c", "exit 0"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&cs, &["lock", &lock, "--", "/no/such/program"]).await;
    assert_eq!(code, 127, "{err}");
    assert!(children(&fw, &lock).await.is_empty(), "released after a failed spawn");
}

#[tokio::test]
async fn without_cmd_prints_the_held_node_and_sigterm_releases() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let lock = path("hold");
    let mut holder = Zkr::start(&cs, &["lock", &lock], &[]);
    let line = holder.line().await;
    let (node, _) = check_held_line(&fw, &line, &lock).await;

    // held: another zkr times out (75) and leaves no node behind
    let started = Instant::now();
    let (code, _, err) = run(&cs, &["lock", &lock, "--timeout", "300ms", "--", "true"]).await;
    assert_eq!(code, 75, "{err}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(children(&fw, &lock).await, [zk_node_name(&node)], "only the holder's node");

    holder.signal(libc::SIGTERM);
    assert_eq!(holder.exit_code().await, 0, "{}", holder.stderr());
    assert!(fw.exists(&node).await.unwrap().is_none(), "released on SIGTERM");

    // the write side with --json: one JSON object per held node
    let mut holder = Zkr::start(&cs, &["--json", "lock", &lock, "--kind", "write"], &[]);
    let line = holder.line().await;
    let (path_part, token_part) = line
        .strip_prefix(r#"{"path":""#)
        .and_then(|rest| rest.strip_suffix('}'))
        .and_then(|rest| rest.split_once(r#"","fencing_token":"#))
        .unwrap_or_else(|| panic!("not the documented JSON: {line}"));
    check_held_line(&fw, &format!("{path_part} {token_part}"), &lock).await;
    assert!(path_part.contains("__WRIT__"), "{path_part}");
    // a reader waits for the writer
    let (code, _, err) = run(&cs, &["lock", &lock, "--kind", "read", "--timeout", "200ms"]).await;
    assert_eq!(code, 75, "{err}");
    holder.signal(libc::SIGINT);
    assert_eq!(holder.exit_code().await, 0, "{}", holder.stderr());
    assert!(children(&fw, &lock).await.is_empty());

    // under --namespace, printed paths are relative to it, like PATH
    let namespace = fixtures::unique("cli-ns");
    let mut holder = Zkr::start(&cs, &["--namespace", &namespace, "lock", "/l"], &[]);
    let line = holder.line().await;
    let (node, token) = line.split_once(' ').unwrap();
    assert!(node.starts_with("/l/"), "{line}");
    check_held_line(&fw, &format!("/{namespace}{node} {token}"), &format!("/{namespace}/l")).await;
    holder.signal(libc::SIGTERM);
    assert_eq!(holder.exit_code().await, 0, "{}", holder.stderr());
}

fn zk_node_name(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_string()
}

#[tokio::test]
async fn signals_to_zkr_are_forwarded_to_cmd_and_the_lock_released_after() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let lock = path("forward");
    let script = r#"trap 'kill $! 2>/dev/null; exit 3' TERM; echo ready; sleep 30 & wait"#;
    let mut zkr = Zkr::start(&cs, &["lock", &lock, "--", "sh", "-c", script], &[]);
    assert_eq!(zkr.line().await, "ready");
    assert_eq!(children(&fw, &lock).await.len(), 1);
    zkr.signal(libc::SIGTERM);
    assert_eq!(zkr.exit_code().await, 3, "CMD's code after the forwarded SIGTERM: {}", zkr.stderr());
    assert!(children(&fw, &lock).await.is_empty());
}

/// Deletes the only child of `dir` (someone else deleting our lock node: NodeDeleted).
async fn delete_only_child(fw: &Framework, dir: &str) {
    let nodes = wait_for_children(fw, dir, 1).await;
    fw.delete(&format!("{dir}/{}", nodes[0])).await.unwrap();
}

#[tokio::test]
async fn loss_by_node_deletion_exits_76_after_acting_on_cmd() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let dir = tempfile::tempdir().unwrap();

    // term (the default): CMD gets SIGTERM
    let (lock, file) = (path("lost-term"), temp_file(&dir, "term"));
    let mut zkr = Zkr::start(&cs, &["lock", &lock, "--", "sh", "-c", TERM_RECORDER], &[("FILE", &file)]);
    assert_eq!(zkr.line().await, "ready");
    delete_only_child(&fw, &lock).await;
    assert_eq!(zkr.exit_code().await, 76, "{}", zkr.stderr());
    assert_eq!(read(&file).trim(), "term", "CMD got SIGTERM");
    assert!(zkr.stderr().contains("lock lost (lock node deleted)"), "{}", zkr.stderr());

    // kill: CMD gets SIGKILL (its trap never runs)
    let (lock, file) = (path("lost-kill"), temp_file(&dir, "kill"));
    let args = ["lock", &lock, "--on-lost", "kill", "--", "sh", "-c", TERM_RECORDER];
    let mut zkr = Zkr::start(&cs, &args, &[("FILE", &file)]);
    assert_eq!(zkr.line().await, "ready");
    delete_only_child(&fw, &lock).await;
    assert_eq!(zkr.exit_code().await, 76, "{}", zkr.stderr());
    assert_eq!(read(&file), "", "no trap ran under SIGKILL");

    // ignore: CMD finishes, then 76
    let (lock, go, file) = (path("lost-ignore"), temp_file(&dir, "go"), temp_file(&dir, "done"));
    let script = r#"echo ready; while [ ! -e "$GO" ]; do sleep 0.02; done; echo done > "$FILE"; exit 0"#;
    let args = ["lock", &lock, "--on-lost", "ignore", "--", "sh", "-c", script];
    let mut zkr = Zkr::start(&cs, &args, &[("FILE", &file), ("GO", &go)]);
    assert_eq!(zkr.line().await, "ready");
    delete_only_child(&fw, &lock).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(zkr.child.try_wait().unwrap().is_none(), "zkr waits for CMD under ignore");
    std::fs::write(&go, "").unwrap();
    assert_eq!(zkr.exit_code().await, 76, "{}", zkr.stderr());
    assert_eq!(read(&file).trim(), "done");

    // without CMD
    let lock = path("lost-hold");
    let mut zkr = Zkr::start(&cs, &["lock", &lock], &[]);
    zkr.line().await;
    delete_only_child(&fw, &lock).await;
    assert_eq!(zkr.exit_code().await, 76, "{}", zkr.stderr());

    // leadership: the latch node deleted while CMD runs
    let (election, file) = (path("lost-leader"), temp_file(&dir, "leader"));
    let mut zkr = Zkr::start(&cs, &["elect", &election, "--", "sh", "-c", TERM_RECORDER], &[("FILE", &file)]);
    assert_eq!(zkr.line().await, "ready");
    delete_only_child(&fw, &election).await;
    assert_eq!(zkr.exit_code().await, 76, "{}", zkr.stderr());
    assert_eq!(read(&file).trim(), "term");
    assert!(children(&fw, &election).await.is_empty(), "the latch closed, no node re-queued");
}

#[tokio::test]
async fn loss_by_server_stop_exits_76_and_terminates_cmd() {
    let server = TestingServer::start().await.expect("server");
    let cs = server.connect_string().to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = temp_file(&dir, "term");
    let lock = path("server-stop");
    let args = ["--session-timeout", "2s", "lock", &lock, "--", "sh", "-c", TERM_RECORDER];
    let mut zkr = Zkr::start(&cs, &args, &[("FILE", &file)]);
    assert_eq!(zkr.line().await, "ready");
    let stopped = Instant::now();
    server.stop().await;
    // past the session timeout the server would have given the lock away: zkr must be gone
    assert_eq!(zkr.exit_code().await, 76, "{}", zkr.stderr());
    assert!(stopped.elapsed() < Duration::from_secs(10), "exited {:?} after the stop", stopped.elapsed());
    assert_eq!(read(&file).trim(), "term", "CMD got SIGTERM");
}

#[tokio::test]
async fn multi_lock_over_several_paths() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let (b, a) = (path("multi-b"), path("multi-a"));
    // the nodes are printed in the order of the PATHs given
    let mut holder = Zkr::start(&cs, &["lock", &b, &a], &[]);
    let (first, second) = (holder.line().await, holder.line().await);
    check_held_line(&fw, &first, &b).await;
    check_held_line(&fw, &second, &a).await;
    let (code, _, err) = run(&cs, &["lock", &a, "--timeout", "200ms"]).await;
    assert_eq!(code, 75, "each path is held: {err}");
    holder.signal(libc::SIGTERM);
    assert_eq!(holder.exit_code().await, 0, "{}", holder.stderr());
    assert!(children(&fw, &a).await.is_empty() && children(&fw, &b).await.is_empty());

    // CMD: all node paths in ZK_LOCK_PATH, the first one's token in ZK_FENCING_TOKEN
    let script = r#"echo "$ZK_LOCK_PATH"; echo "$ZK_FENCING_TOKEN""#;
    let args = ["lock", &a, &b, "--kind", "semaphore-mutex", "--", "sh", "-c", script];
    let (code, out, err) = run(&cs, &args).await;
    assert_eq!(code, 0, "{err}");
    let nodes: Vec<&str> = out[0].split(' ').collect();
    assert_eq!(nodes.len(), 2, "{out:?}");
    assert!(nodes[0].starts_with(&format!("{a}/leases/")) && nodes[1].starts_with(&format!("{b}/leases/")));
    assert!(out[1].parse::<i64>().is_ok(), "{out:?}");
}

#[tokio::test]
async fn semaphore_leases() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let sem = path("semaphore");
    let leases = format!("{sem}/leases");
    let mut holder = Zkr::start(&cs, &["--json", "semaphore", &sem, "--leases", "3", "--count", "2"], &[]);
    for _ in 0..2 {
        let line = holder.line().await;
        assert!(
            line.starts_with(&format!(r#"{{"path":"{leases}/"#)) && line.contains(r#","fencing_token":"#),
            "{line}"
        );
    }
    assert_eq!(children(&fw, &leases).await.len(), 2);
    // one lease left: two more do not fit
    let (code, _, err) = run(&cs, &["semaphore", &sem, "--leases", "3", "--count", "2", "--timeout", "300ms"]).await;
    assert_eq!(code, 75, "{err}");
    let script = r#"echo "$ZK_LEASE_PATHS"; echo "$ZK_FENCING_TOKEN"; exit 4"#;
    let (code, out, err) = run(&cs, &["semaphore", &sem, "--leases", "3", "--", "sh", "-c", script]).await;
    assert_eq!(code, 4, "{err}");
    assert!(out[0].starts_with(&format!("{leases}/")) && !out[0].contains(' '), "{out:?}");
    assert!(out[1].parse::<i64>().is_ok(), "{out:?}");
    holder.signal(libc::SIGTERM);
    assert_eq!(holder.exit_code().await, 0, "{}", holder.stderr());
    assert!(children(&fw, &leases).await.is_empty());
}

/// The expected `--json` of an inspection, without the ages (they move).
fn expected_json(found: &zk_recipes::inspect::Inspection) -> String {
    let node = |n: &zk_recipes::inspect::NodeInfo| {
        format!(
            r#"{{"name":"{}","session_id":"0x{:x}","fencing_token":{},"data":"{}"}}"#,
            n.name, n.session_id, n.fencing_token, n.data
        )
    };
    let list = |nodes: &[zk_recipes::inspect::NodeInfo]| nodes.iter().map(node).collect::<Vec<_>>().join(",");
    let value = found.value.as_ref().map(|v| format!(r#","value":"{v}""#)).unwrap_or_default();
    format!(
        r#"{{"kind":"{}","holders":[{}],"waiters":[{}]{value}}}"#,
        found.kind.name(),
        list(&found.holders),
        list(&found.waiters)
    )
}

/// `"age_ms":<digits>,` removed.
fn without_ages(json: &str) -> String {
    let mut out = String::new();
    let mut rest = json;
    while let Some(at) = rest.find(r#""age_ms":"#) {
        out.push_str(&rest[..at]);
        let after = &rest[at + r#""age_ms":"#.len()..];
        let digits = after.find(|c: char| !c.is_ascii_digit() && c != '-').unwrap_or(after.len());
        rest = after[digits..].strip_prefix(',').unwrap_or(&after[digits..]);
    }
    out.push_str(rest);
    out
}

/// `zkr inspect` (human and `--json`) agrees with the library's `inspect` at `at`.
async fn check_inspect(cs: &str, fw: &Framework, at: &str, kind: &str, holders: usize, waiters: usize) {
    let found = zk_recipes::inspect::inspect(fw, at).await.unwrap();
    assert_eq!((found.kind.name(), found.holders.len(), found.waiters.len()), (kind, holders, waiters), "{at}");
    let (code, out, err) = run(cs, &["--json", "inspect", at]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.len(), 1, "one JSON object: {out:?}");
    assert!(out[0].contains(r#""age_ms":"#) == (holders + waiters > 0), "{}", out[0]);
    assert_eq!(without_ages(&out[0]), expected_json(&found), "inspect --json {at}");

    let (code, out, err) = run(cs, &["inspect", at]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out[0], format!("kind: {kind}"));
    let mut rows = out.iter().skip_while(|l| !l.starts_with("ROLE")).skip(1);
    for (role, node) in found.holders.iter().map(|n| ("holder", n)).chain(found.waiters.iter().map(|n| ("waiter", n))) {
        let row = rows.next().unwrap_or_else(|| panic!("no row for {}: {out:?}", node.name));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells[..4],
            [role, &node.name, &format!("0x{:x}", node.session_id), &node.fencing_token.to_string()]
        );
    }
    if let Some(value) = &found.value {
        assert_eq!(out[1], format!("value: {value}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_every_recipe_human_and_json() {
    let cs = fixtures::shared_server().await;
    let (fw, other) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let mut background = Vec::new();

    let mutex = path("inspect-mutex");
    let held = InterProcessMutex::new(&fw, &mutex).unwrap().acquire().await.unwrap();
    let m = InterProcessMutex::new(&other, &mutex).unwrap();
    background.push(tokio::spawn(async move { drop(m.acquire().await) }));
    wait_for_children(&fw, &mutex, 2).await;
    check_inspect(&cs, &fw, &mutex, "mutex", 1, 1).await;

    let rw = path("inspect-rwlock");
    let read = InterProcessReadWriteLock::new(&fw, &rw).unwrap().read().await.unwrap();
    let l = InterProcessReadWriteLock::new(&other, &rw).unwrap();
    background.push(tokio::spawn(async move { drop(l.write().await) }));
    wait_for_children(&fw, &rw, 2).await;
    check_inspect(&cs, &fw, &rw, "rwlock", 1, 1).await;

    let sem = path("inspect-semaphore");
    let lease = InterProcessSemaphoreV2::new(&fw, &sem, 2).unwrap().acquire_many(2).await.unwrap();
    let s = InterProcessSemaphoreV2::new(&other, &sem, 2).unwrap();
    background.push(tokio::spawn(async move { drop(s.acquire_many(2).await) }));
    wait_for_children(&fw, &format!("{sem}/leases"), 3).await;
    // the waiter for two leases holds the internal lock while its first lease node waits; the
    // server does not know the maximum, so inspect lists every lease node as a holder
    check_inspect(&cs, &fw, &sem, "semaphore", 3, 1).await;

    let election = path("inspect-latch");
    let (one, two) =
        (LeaderLatch::new(&fw, &election, "one").unwrap(), LeaderLatch::new(&other, &election, "two").unwrap());
    one.start().await.unwrap();
    one.await_leadership().await.unwrap();
    two.start().await.unwrap();
    wait_for_children(&fw, &election, 2).await;
    check_inspect(&cs, &fw, &election, "latch", 1, 1).await;

    let barrier = path("inspect-barrier");
    DistributedBarrier::new(&fw, &barrier).unwrap().set_barrier().await.unwrap();
    check_inspect(&cs, &fw, &barrier, "barrier", 0, 0).await;

    let double = path("inspect-double");
    let d = DistributedDoubleBarrier::new(&other, &double, 3).unwrap();
    background.push(tokio::spawn(async move { drop(d.enter().await) }));
    wait_for_children(&fw, &double, 1).await;
    check_inspect(&cs, &fw, &double, "double_barrier", 1, 0).await;

    let counter = path("inspect-counter");
    let long = DistributedAtomicLong::new(&fw, &counter).unwrap();
    long.add(42).await.unwrap();
    long.close().await.unwrap();
    check_inspect(&cs, &fw, &counter, "counter", 0, 0).await;

    check_inspect(&cs, &fw, &path("inspect-missing"), "missing", 0, 0).await;

    for task in background {
        task.abort();
    }
    drop((held, read, lease));
    one.close().await.unwrap();
    two.close().await.unwrap();
    other.close();
}

#[tokio::test]
async fn atomic_and_shared_count_operations() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let counter = path("atomic");
    for (args, expect, code) in [
        (&["get"][..], "0", 0),
        (&["add", "5"], "5", 0),
        (&["add", "-2"], "3", 0),
        (&["set", "10"], "10", 0),
        (&["cas", "10", "11"], "11", 0),
        (&["cas", "3", "4"], "11", 1),
        (&["get"], "11", 0),
    ] {
        let all: Vec<&str> = ["atomic", &counter].into_iter().chain(args.iter().copied()).collect();
        let (got, out, err) = run(&cs, &all).await;
        assert_eq!((got, out.as_slice()), (code, &[expect.to_string()][..]), "zkr {all:?}: {err}");
    }
    let (code, out, _) = run(&cs, &["atomic", &counter, "cas", "3", "4", "--json"]).await;
    assert_eq!((code, out[0].as_str()), (1, r#"{"value":11,"succeeded":false}"#));
    assert_eq!(DistributedAtomicLong::new(&fw, &counter).unwrap().get().await.unwrap(), 11);
    // no transaction marker left behind: only the counter's gate (see the atomic value's docs)
    assert_eq!(children(&fw, &counter).await, ["_gate_"], "no transaction marker left behind");
    // an 8-byte counter is not a 4-byte one
    let (code, _, err) = run(&cs, &["atomic", &counter, "get", "--int"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("corrupt data"), "{err}");

    let int = path("atomic-int");
    let (code, out, err) = run(&cs, &["atomic", &int, "--int", "add", "7"]).await;
    assert_eq!((code, out.as_slice()), (0, &["7".to_string()][..]), "{err}");
    assert_eq!(DistributedAtomicInteger::new(&fw, &int).unwrap().get().await.unwrap(), 7);

    let count = path("shared-count");
    let (code, out, err) = run(&cs, &["shared-count", &count, "get"]).await;
    assert_eq!((code, out.len()), (1, 0), "no count yet: {err}");
    let (code, out, _) = run(&cs, &["shared-count", &count, "set", "4"]).await;
    assert_eq!((code, out.as_slice()), (0, &["4".to_string()][..]));
    let mut watch = Zkr::start(&cs, &["shared-count", &count, "watch"], &[]);
    assert_eq!(watch.line().await, "4", "the current count first");
    let (code, out, _) = run(&cs, &["--json", "shared-count", &count, "set", "-9"]).await;
    assert_eq!((code, out.as_slice()), (0, &[r#"{"value":-9}"#.to_string()][..]));
    assert_eq!(watch.line().await, "-9");
    SharedCount::new(&fw, &count, 0).unwrap().set(12).await.unwrap();
    assert_eq!(watch.line().await, "12");
    watch.signal(libc::SIGTERM);
    assert_eq!(watch.exit_code().await, 0, "{}", watch.stderr());
    let (code, out, _) = run(&cs, &["shared-count", &count, "get"]).await;
    assert_eq!((code, out.as_slice()), (0, &["12".to_string()][..]));
}

#[tokio::test]
async fn elect_runs_cmd_while_leader_and_observe_follows_the_leader() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let election = path("elect");
    let mut observer = Zkr::start(&cs, &["elect", &election, "--observe"], &[]);
    assert_eq!(observer.line().await, "", "no leader yet: an empty line");

    let mut alpha = Zkr::start(&cs, &["elect", &election, "--id", "alpha"], &[]);
    let line = alpha.line().await;
    let (node, _) = check_held_line(&fw, &line, &election).await;
    assert_eq!(fw.get_data(&node).await.unwrap().0, b"alpha");
    assert_eq!(observer.line().await, "alpha");

    let dir = tempfile::tempdir().unwrap();
    let go = temp_file(&dir, "go");
    let script = r#"echo "$ZK_LEADER_PATH $ZK_FENCING_TOKEN"; while [ ! -e "$GO" ]; do sleep 0.02; done; exit 4"#;
    let args = ["elect", &election, "--id", "beta", "--", "sh", "-c", script];
    let mut beta = Zkr::start(&cs, &args, &[("GO", &go)]);
    wait_for_children(&fw, &election, 2).await;
    let (code, _, err) = run(&cs, &["elect", &election, "--timeout", "200ms", "--", "true"]).await;
    assert_eq!(code, 75, "{err}");

    alpha.signal(libc::SIGTERM);
    assert_eq!(alpha.exit_code().await, 0, "{}", alpha.stderr());
    let line = beta.line().await;
    check_held_line(&fw, &line, &election).await;
    assert_eq!(observer.line().await, "beta");
    std::fs::write(&go, "").unwrap();
    assert_eq!(beta.exit_code().await, 4, "{}", beta.stderr());
    assert_eq!(observer.line().await, "", "nobody leads once beta's CMD is done");
    observer.signal(libc::SIGINT);
    assert_eq!(observer.exit_code().await, 0, "{}", observer.stderr());
    assert!(children(&fw, &election).await.is_empty());
}

#[tokio::test]
async fn barrier_and_double_barrier() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let barrier = path("barrier");
    assert_eq!(run(&cs, &["barrier", &barrier, "set"]).await.0, 0);
    assert!(fw.exists(&barrier).await.unwrap().is_some());
    let (code, _, err) = run(&cs, &["barrier", &barrier, "wait", "--timeout", "300ms"]).await;
    assert_eq!(code, 75, "{err}");
    let mut waiter = Zkr::start(&cs, &["barrier", &barrier, "wait"], &[]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(waiter.child.try_wait().unwrap().is_none(), "waits while the barrier is set");
    assert_eq!(run(&cs, &["barrier", &barrier, "remove"]).await.0, 0);
    assert_eq!(waiter.exit_code().await, 0, "{}", waiter.stderr());

    let double = path("double");
    let mut first = Zkr::start(&cs, &["double-barrier", &double, "--members", "2", "--", "sh", "-c", "exit 5"], &[]);
    let mut second = Zkr::start(&cs, &["double-barrier", &double, "--members", "2", "--", "true"], &[]);
    assert_eq!(first.exit_code().await, 5, "{}", first.stderr());
    assert_eq!(second.exit_code().await, 0, "{}", second.stderr());
    let (code, _, err) = run(&cs, &["double-barrier", &double, "--members", "2", "--timeout", "300ms"]).await;
    assert_eq!(code, 75, "{err}");
    let members: Vec<String> = children(&fw, &double).await.into_iter().filter(|c| c != "ready").collect();
    assert!(members.is_empty(), "no member left behind: {members:?}");
}

/// Two loops of `zkr lock P -- sh -c '<stamp start; stamp end>'`, 20 rounds each, append to
/// one file: the stamps must come in start/end pairs of the same round, in time order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_zkr_locks_never_overlap() {
    let cs = fixtures::shared_server().await;
    let lock = path("overlap");
    let dir = tempfile::tempdir().unwrap();
    let file = temp_file(&dir, "stamps");
    let script = r#"echo "start $(date +%s%N) $ID" >> "$FILE"; sleep 0.005; echo "end $(date +%s%N) $ID" >> "$FILE""#;
    let rounds = |id: &'static str| {
        let (cs, lock, file) = (cs.clone(), lock.clone(), file.clone());
        async move {
            for round in 0..20 {
                let tag = format!("{id}{round}");
                let env = [("FILE", file.as_str()), ("ID", tag.as_str())];
                let (code, _, err) = run_with(&cs, &["lock", &lock, "--", "sh", "-c", script], &env).await;
                assert_eq!(code, 0, "{tag}: {err}");
            }
        }
    };
    tokio::join!(rounds("a"), rounds("b"));
    let stamps = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<(&str, u128, &str)> = stamps
        .lines()
        .map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            (parts[0], parts[1].parse().unwrap(), parts[2])
        })
        .collect();
    assert_eq!(lines.len(), 80, "{stamps}");
    let mut last_end = 0;
    for pair in lines.chunks(2) {
        let [(start, t0, who0), (end, t1, who1)] = pair else { unreachable!() };
        assert_eq!((*start, *end, who0), ("start", "end", who1), "interleaved:\n{stamps}");
        assert!(last_end <= *t0 && t0 <= t1, "overlapping intervals:\n{stamps}");
        last_end = *t1;
    }
    assert!(Path::new(&file).exists());
}
