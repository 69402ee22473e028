//! The JVM's process: an IO thread with its own runtime owns it, pumps request and answer
//! lines, routes answers to their callers, and kills and reaps the JVM.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use super::{CuratorPeer, StartTimings};
use crate::{Error, Result};

/// Stderr lines of the JVM kept for error messages.
pub(super) const STDERR_TAIL: usize = 40;

pub(super) type Reply = oneshot::Sender<Result<String>>;

#[derive(Debug, Default)]
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    stderr: Mutex<VecDeque<String>>,
}

#[derive(Debug, Default)]
pub(super) struct State {
    /// Outstanding requests: id -> (command text, reply channel).
    pub(super) pending: HashMap<u64, (String, Reply)>,
    /// Why the peer is gone, once it is.
    pub(super) dead: Option<String>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// Routes one stdout line of the peer to the request it answers.
    fn route(&self, line: &str) {
        let parsed = line.split_once(' ').and_then(|(id, rest)| Some((id.parse::<u64>().ok()?, rest)));
        let Some((id, rest)) = parsed else {
            self.note_stderr(format!("(unexpected stdout line) {line}"));
            return;
        };
        let Some((cmd, reply)) = lock(&self.state).pending.remove(&id) else {
            return; // the caller gave up waiting
        };
        let result = if let Some(payload) = rest.strip_prefix("OK") {
            Ok(payload.strip_prefix(' ').unwrap_or(payload).to_string())
        } else if let Some(err) = rest.strip_prefix("ERR ") {
            let (class, message) = err.split_once(' ').unwrap_or((err, ""));
            Err(Error::Peer(format!("{cmd}: {class}: {message}")))
        } else {
            Err(Error::Peer(format!("{cmd}: malformed answer {rest:?}")))
        };
        let _ = reply.send(result);
    }

    fn note_stderr(&self, line: String) {
        let mut tail = lock(&self.stderr);
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }

    /// Marks the peer dead and fails every outstanding request.
    fn fail_all(&self, reason: String) {
        let tail: Vec<String> = lock(&self.stderr).iter().cloned().collect();
        let reason = if tail.is_empty() {
            reason
        } else {
            format!("{reason}; last stderr lines of the JVM:\n{}", tail.join("\n"))
        };
        let pending: Vec<(String, Reply)> = {
            let mut state = lock(&self.state);
            state.dead.get_or_insert(reason.clone());
            state.pending.drain().map(|(_, v)| v).collect()
        };
        for (cmd, reply) in pending {
            let _ = reply.send(Err(Error::Peer(format!("{cmd}: {reason}"))));
        }
    }
}

/// Removes a request from the pending map when its caller stops waiting.
pub(super) struct PendingGuard<'a> {
    pub(super) shared: &'a Shared,
    pub(super) id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.shared.state).pending.remove(&self.id);
    }
}

impl CuratorPeer {
    /// Spawns the IO thread that owns the JVM.
    pub(super) async fn spawn(command: tokio::process::Command) -> Result<CuratorPeer> {
        let shared = Arc::new(Shared::default());
        let (lines_tx, lines_rx) = mpsc::unbounded_channel();
        let (kill_tx, kill_rx) = oneshot::channel();
        let (exited_tx, exited_rx) = watch::channel(false);
        let (ready_tx, ready_rx) = oneshot::channel();
        let thread_shared = shared.clone();
        let io_thread = std::thread::Builder::new().name("curator-peer-io".into()).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(Error::io(format!("cannot build the peer's runtime: {e}"))));
                    return;
                }
            };
            runtime.block_on(run_io(command, lines_rx, kill_rx, thread_shared, ready_tx));
            let _ = exited_tx.send(true);
        })?;
        let mut peer = CuratorPeer {
            lines: lines_tx,
            shared,
            next_id: AtomicU64::new(1),
            kill: Some(kill_tx),
            io_thread: Some(io_thread),
            exited: exited_rx,
            pid: None,
            timings: StartTimings { compile: None, jvm: Duration::ZERO },
        };
        // On error `peer` is dropped here, which joins the IO thread.
        peer.pid =
            ready_rx.await.map_err(|_| Error::Peer("the peer's IO thread ended before starting java".into()))??;
        Ok(peer)
    }
}

impl Drop for CuratorPeer {
    /// Kills the JVM and waits (briefly, on the peer's own IO thread) until it is reaped.
    fn drop(&mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        if let Some(thread) = self.io_thread.take() {
            let _ = thread.join();
        }
    }
}

/// The body of the IO thread: spawns the JVM, pumps lines both ways, kills and reaps it.
pub(super) async fn run_io(
    mut command: tokio::process::Command,
    mut lines: mpsc::UnboundedReceiver<String>,
    mut kill: oneshot::Receiver<()>,
    shared: Arc<Shared>,
    ready: oneshot::Sender<Result<Option<u32>>>,
) {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = ready.send(Err(Error::Peer(format!("cannot start java: {e}"))));
            return;
        }
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.start_kill();
        let _ = child.wait().await;
        let _ = ready.send(Err(Error::Peer("java's pipes are missing".into())));
        return;
    };
    let _ = ready.send(Ok(child.id()));

    let stderr_shared = shared.clone();
    let stderr_task = tokio::spawn(async move {
        let mut err_lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = err_lines.next_line().await {
            stderr_shared.note_stderr(line);
        }
    });

    let mut out_lines = BufReader::new(stdout).lines();
    let mut killed = false;
    let reason = loop {
        tokio::select! {
            _ = &mut kill => {
                killed = true;
                break "the peer was dropped".to_string();
            }
            line = lines.recv() => match line {
                Some(line) => {
                    if let Err(e) = async { stdin.write_all(line.as_bytes()).await?; stdin.flush().await }.await {
                        break format!("writing to the JVM failed: {e}");
                    }
                }
                None => {
                    killed = true;
                    break "the peer was dropped".to_string();
                }
            },
            line = out_lines.next_line() => match line {
                Ok(Some(line)) => shared.route(&line),
                Ok(None) => break "the JVM closed its stdout".to_string(),
                Err(e) => break format!("reading from the JVM failed: {e}"),
            },
        }
    };
    drop(stdin);
    if !killed {
        // It is exiting by itself (quit, crash): give it a moment before killing.
        if tokio::time::timeout(Duration::from_secs(3), child.wait()).await.is_err() {
            let _ = child.start_kill();
        }
    } else {
        let _ = child.start_kill();
    }
    let status = match child.wait().await {
        Ok(status) => status.to_string(),
        Err(e) => format!("unknown exit status ({e})"),
    };
    // Collect the last stderr lines (the pipe is closed now that the JVM is gone).
    let _ = tokio::time::timeout(Duration::from_secs(1), stderr_task).await;
    shared.fail_all(format!("{reason} (JVM {status})"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_ok_and_err_answers() {
        let shared = Shared::default();
        let (tx1, mut rx1) = oneshot::channel();
        let (tx2, mut rx2) = oneshot::channel();
        {
            let mut st = lock(&shared.state);
            st.pending.insert(1, ("ping".into(), tx1));
            st.pending.insert(2, ("mutex.release a h".into(), tx2));
        }
        shared.route("2 ERR IllegalStateException holder h holds nothing");
        shared.route("1 OK pong");
        shared.route("99 OK nobody waits");
        assert!(matches!(rx1.try_recv(), Ok(Ok(pong)) if pong == "pong"));
        assert!(matches!(
            rx2.try_recv(),
            Ok(Err(Error::Peer(m))) if m == "mutex.release a h: IllegalStateException: holder h holds nothing"
        ));
    }
}
