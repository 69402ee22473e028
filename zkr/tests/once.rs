//! `zkr once` against real ZooKeeper: from many concurrent shells CMD runs once per tick; the
//! others exit 0 with `skipped NAME until INSTANT`; CMD's status is zkr's; the lock is
//! extended while CMD runs; CMD is stopped when the lock is lost; bad input exits 2.
//!
//! Every zkr runs in a process group of its own, SIGKILLed (with its CMD) and reaped on drop.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use zk_recipes::ShedLock;
use zk_recipes_testing::fixtures;

const ZKR: &str = env!("CARGO_BIN_EXE_zkr");

/// A running zkr; `Drop` SIGKILLs its process group and reaps it.
struct Zkr(Option<std::process::Child>);

impl Zkr {
    fn start(cs: &str, args: &[&str]) -> Zkr {
        let child = Command::new(ZKR)
            .args(["--connect", cs])
            .args(args)
            .env_remove("ZK_CONNECT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("spawn zkr");
        Zkr(Some(child))
    }

    /// Waits (at most 60 s) for zkr to exit: its code, stdout and stderr.
    async fn finish(mut self) -> (i32, String, String) {
        let child = self.0.take().unwrap();
        let pid = child.id() as i32;
        let waiting = tokio::task::spawn_blocking(move || child.wait_with_output());
        let out: Output = match tokio::time::timeout(Duration::from_secs(60), waiting).await {
            Ok(done) => done.unwrap().unwrap(),
            Err(_) => {
                // SAFETY: our own process group
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                panic!("zkr (pid {pid}) did not finish within 60 s");
            }
        };
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
    }
}

impl Drop for Zkr {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            // SAFETY: signals to the process group we created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
        }
    }
}

/// `skipped NAME until YYYY-MM-DDTHH:MM:SS.mmmZ`
fn is_skip_line(line: &str, name: &str) -> bool {
    let Some(instant) = line.strip_prefix(&format!("skipped {name} until ")) else { return false };
    let b = instant.as_bytes();
    b.len() == 24 && b[10] == b'T' && b[19] == b'.' && b[23] == b'Z' && b[20..23].iter().all(u8::is_ascii_digit)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_many_concurrent_shells_cmd_runs_once_per_tick() {
    let cs = fixtures::shared_server().await;
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let root = format!("/{}", fixtures::unique("once"));
    let script = format!("echo $ZK_FENCING_TOKEN >> {}; sleep 0.3", runs.display());
    for tick in 1..=2 {
        let shells: Vec<Zkr> = (0..12)
            .map(|_| {
                let args = [
                    "once",
                    "nightly",
                    "--root",
                    &root,
                    "--at-most",
                    "30s",
                    "--at-least",
                    "8s",
                    "--",
                    "sh",
                    "-c",
                    &script,
                ];
                Zkr::start(&cs, &args)
            })
            .collect();
        let mut skipped = 0;
        for shell in shells {
            let (code, _, stderr) = shell.finish().await;
            assert_eq!(code, 0, "{stderr}");
            if stderr.lines().any(|l| is_skip_line(l, "nightly")) {
                skipped += 1;
            }
        }
        let lines = std::fs::read_to_string(&runs).unwrap();
        assert_eq!(lines.lines().count(), tick, "CMD ran once per tick: {lines:?}");
        assert_eq!(skipped, 11, "every other shell skipped");
        if tick == 1 {
            // the next tick: once --at-least has passed (8 s: every shell of a tick must try
            // within it, however slowly a process starts on a loaded machine)
            tokio::time::sleep(Duration::from_millis(8200)).await;
        }
    }
    let tokens: Vec<i64> = std::fs::read_to_string(&runs).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert!(tokens[1] > tokens[0], "fencing tokens increase: {tokens:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exits_with_cmds_status_and_json_names_the_taking() {
    let cs = fixtures::shared_server().await;
    let root = format!("/{}", fixtures::unique("once"));
    let (code, stdout, _) =
        Zkr::start(&cs, &["--json", "once", "j", "--root", &root, "--at-most", "10s", "--", "sh", "-c", "exit 7"])
            .finish()
            .await;
    assert_eq!(code, 7);
    let taken: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(taken["path"], format!("{root}/j"));
    assert!(taken["fencing_token"].as_i64().unwrap() > 0);
    // unlocked at once (--at-least 0): the next run takes it
    let (code, _, stderr) =
        Zkr::start(&cs, &["once", "j", "--root", &root, "--at-most", "10s", "--", "true"]).finish().await;
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("skipped"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_is_extended_while_cmd_runs_past_at_most() {
    let cs = fixtures::shared_server().await;
    let root = format!("/{}", fixtures::unique("once"));
    let long = Zkr::start(&cs, &["once", "long", "--root", &root, "--at-most", "1s", "--", "sleep", "3"]);
    let fw = fixtures::framework(&cs).await;
    let lock = ShedLock::new(&fw).root(&root).unwrap();
    fixtures::eventually(Duration::from_secs(10), "zkr took the lock", || async {
        lock.locked_until("long").await.unwrap().is_some()
    })
    .await;
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        assert!(lock.try_lock("long", Duration::from_secs(1), Duration::ZERO).await.unwrap().is_none(), "taken over");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (code, _, stderr) = long.finish().await;
    assert_eq!(code, 0, "{stderr}");
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmd_gets_sigterm_when_the_lock_is_lost() {
    let cs = fixtures::shared_server().await;
    let dir = tempfile::tempdir().unwrap();
    let term = dir.path().join("term");
    let root = format!("/{}", fixtures::unique("once"));
    let script = format!("trap 'echo term > {}; exit 0' TERM; while :; do sleep 0.05; done", term.display());
    let shell = Zkr::start(&cs, &["once", "lost", "--root", &root, "--at-most", "20s", "--", "sh", "-c", &script]);
    let fw = fixtures::framework(&cs).await;
    let path = format!("{root}/lost");
    fixtures::eventually(Duration::from_secs(10), "zkr took the lock", || async {
        fw.exists(&path).await.unwrap().is_some()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await; // CMD installed its trap
                                                          // another replica takes the job over (a foreign write to the node)
    fw.set_data(&path, b"2100-01-01T00:00:00.000Z", None).await.unwrap();
    let (code, _, stderr) = shell.finish().await;
    // CMD's status (its TERM trap exits 0), as `zkr once` promises; the loss is told on stderr
    assert_eq!(code, 0, "lost: {stderr}");
    assert!(stderr.contains("lost"), "the loss is reported: {stderr}");
    assert_eq!(std::fs::read_to_string(&term).unwrap().trim(), "term", "CMD got SIGTERM");
    // the taker's instant is not overwritten by our unlock
    assert_eq!(fw.get_data(&path).await.unwrap().0, b"2100-01-01T00:00:00.000Z");
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_exits_2_before_connecting() {
    let closed = format!("127.0.0.1:{}", fixtures::closed_port());
    for args in [
        &["once", "j", "--at-most", "1s", "--at-least", "2s", "--", "true"][..],
        &["once", "j", "--at-most", "0s", "--", "true"],
        &["once", "a/b", "--at-most", "1s", "--", "true"],
        &["once", "j", "--at-most", "1s", "--root", "nope", "--", "true"],
        &["once", "j", "--at-most", "1s"],
        &["once", "j", "--", "true"],
    ] {
        let (code, _, stderr) = Zkr::start(&closed, args).finish().await;
        assert_eq!(code, 2, "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_and_library_replicas_share_the_ticks() {
    // 8 `zkr once` processes and 8 in-process replicas (the library's lock) over 3 ticks, each
    // tick its own name held at least 30 s, so that every replica's attempt falls inside the
    // winner's `--at-least` however slowly a process starts on a loaded machine (the one-run
    // guarantee of ShedLock's scheme holds only there): each tick runs once. Tick 1: the
    // processes start first and one of them wins; tick 2: the library replicas do; tick 3: both
    // race.
    let cs = fixtures::shared_server().await;
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let root = format!("/{}", fixtures::unique("once-mixed"));
    let script = format!("echo zkr >> {}; sleep 0.2", runs.display());
    let mut fws = Vec::new();
    for _ in 0..8 {
        fws.push(fixtures::framework(&cs).await);
    }
    let watcher = fixtures::framework(&cs).await;
    let hold = Duration::from_secs(30);
    for tick in 1..=3 {
        let name = format!("mixed-{tick}");
        let node = format!("{root}/{name}");
        let taken = || async { watcher.exists(&node).await.unwrap().is_some() };
        let once = ["once", &name, "--root", &root, "--at-most", "30s", "--at-least", "30s", "--", "sh", "-c", &script];
        let start_shells = || (0..8).map(|_| Zkr::start(&cs, &once)).collect::<Vec<Zkr>>();
        let shells = if tick == 1 { start_shells() } else { Vec::new() };
        if tick == 1 {
            fixtures::eventually(Duration::from_secs(20), "a process took tick 1", taken).await;
        }
        let mut tasks = Vec::new();
        for fw in &fws {
            let lock = ShedLock::new(fw).root(&root).unwrap();
            let (runs, name) = (runs.clone(), name.clone());
            let delay = if tick == 3 { 50 + jitter_ms() } else { 0 };
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                if let Some(guard) = lock.try_lock(&name, hold, hold).await.unwrap() {
                    use std::io::Write;
                    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&runs).unwrap();
                    writeln!(f, "lib").unwrap();
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    guard.unlock().await.unwrap();
                }
            }));
        }
        if tick == 2 {
            fixtures::eventually(Duration::from_secs(20), "a library replica took tick 2", taken).await;
        }
        let shells = if tick == 1 { shells } else { start_shells() };
        let mut skipped = 0;
        for shell in shells {
            let (code, _, stderr) = shell.finish().await;
            assert_eq!(code, 0, "{stderr}");
            skipped += usize::from(stderr.lines().any(|l| is_skip_line(l, &name)));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let lines = std::fs::read_to_string(&runs).unwrap_or_default();
        let lines: Vec<&str> = lines.lines().collect();
        assert_eq!(lines.len(), tick, "one run per tick: {lines:?}");
        match tick {
            1 => assert_eq!((lines[0], skipped), ("zkr", 7), "a process ran tick 1, the other 7 skipped"),
            2 => assert_eq!((lines[1], skipped), ("lib", 8), "a library replica ran tick 2, every process skipped"),
            _ => {}
        }
    }
    for fw in fws.iter().chain([&watcher]) {
        fw.close();
    }
}

/// 0-150 ms, from the clock's nanoseconds (no extra dependency).
fn jitter_ms() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    u64::from(nanos % 150)
}
