//! `zkr lock --timeout 2s` against a server that stops answering with the connection open
//! (SIGSTOP): it exits 75 within 3 s, whether the server froze while zkr waited in the lock's
//! queue or before zkr connected.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zk_recipes::InterProcessMutex;
use zk_recipes_testing::{fixtures, TestingServer};

/// The bound: `--timeout` + 1 s.
const WITHIN: Duration = Duration::from_secs(3);

/// Kills the child on drop (a failed assertion must not leave it running), and reaps it.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `zkr lock PATH --timeout 2s -- true` at `cs`: its exit code and how long it took.
fn spawn_lock(cs: &str, path: &str) -> Reaped {
    let child = Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args(["--connect", cs, "--session-timeout", "20s", "lock", path, "--timeout", "2s", "--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zkr");
    Reaped(child)
}

/// Waits (at most 10 s) for the child's exit; its code and stderr.
async fn exit_of(child: &mut Reaped) -> (i32, String) {
    let limit = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.0.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return (status.code().unwrap_or(-1), err);
        }
        assert!(Instant::now() < limit, "zkr still running after 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_lock_timeout_holds_when_the_server_freezes() {
    let server = TestingServer::start().await.expect("server");
    let cs = server.connect_string().to_string();
    let holder = fixtures::framework_with(&cs, |b| b.session_timeout(Duration::from_secs(20))).await;
    let path = format!("/{}", fixtures::unique("zkr-frozen"));
    let guard = InterProcessMutex::new(&holder, &path).unwrap().acquire().await.unwrap();

    // frozen while zkr waits in the queue
    let started = Instant::now();
    let mut waiting = spawn_lock(&cs, &path);
    fixtures::eventually(Duration::from_secs(10), "zkr queued behind the holder", || async {
        holder.children(&path).await.unwrap().len() == 2
    })
    .await;
    server.pause().expect("SIGSTOP");
    let (code, err) = exit_of(&mut waiting).await;
    let took = started.elapsed();
    assert_eq!(code, 75, "exit code (stderr: {err})");
    assert!(took < WITHIN, "zkr took {took:?} (stderr: {err})");

    // frozen before zkr connects: the connect is part of the wait
    let started = Instant::now();
    let mut connecting = spawn_lock(&cs, &path);
    let (code, err) = exit_of(&mut connecting).await;
    let took = started.elapsed();
    server.resume().expect("SIGCONT");
    assert_eq!(code, 75, "exit code (stderr: {err})");
    assert!(took < WITHIN, "zkr took {took:?} (stderr: {err})");
    assert!(err.contains("timed out"), "{err}");

    let _ = guard.release().await;
    let _ = holder.shutdown(Duration::from_secs(10)).await;
    server.stop().await;
}
