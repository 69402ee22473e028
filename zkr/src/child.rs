//! CMD: spawned with tokio::process (stdio inherited, our environment plus the `ZK_*`
//! variables), signalled by pid, always reaped.

use std::future::Future;
use std::io::ErrorKind;
use std::os::unix::process::ExitStatusExt;
use std::pin::pin;

use tokio::time::Instant;

use crate::args::{OnLost, Supervision};
use crate::exit::{self, CliError, CliResult};
use crate::output::humanize;
use crate::signals::{self, Signals};

/// A running CMD. zkr never exits while it runs: every path that ends zkr waits for it.
pub struct Child {
    child: tokio::process::Child,
    program: String,
}

impl Child {
    /// Spawns `cmd[0]` with the arguments `cmd[1..]` and the extra environment `env`.
    ///
    /// On Linux the child also gets a parent-death signal (SIGTERM): if zkr itself is killed
    /// (SIGKILL, OOM), CMD is told at once instead of running on without the lock. zkr runs on a
    /// single-threaded runtime, so the thread that spawns is the one that lives as long as zkr.
    ///
    /// With `pipe_stdout`, CMD's stdout is a pipe for [`take_stdout`](Self::take_stdout).
    pub fn spawn(cmd: &[String], env: &[(&str, String)], pipe_stdout: bool) -> CliResult<Child> {
        let (program, args) = cmd.split_first().ok_or_else(|| CliError::usage("empty command"))?;
        let mut command = tokio::process::Command::new(program);
        command.args(args).envs(env.iter().map(|(k, v)| (*k, v)));
        if pipe_stdout {
            command.stdout(std::process::Stdio::piped());
        }
        #[cfg(target_os = "linux")]
        {
            let parent = std::process::id() as libc::pid_t;
            // SAFETY: between fork and exec the closure only makes async-signal-safe calls
            // (prctl, getppid) and allocates nothing.
            unsafe {
                command.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    if libc::getppid() != parent {
                        // zkr died before the prctl took effect
                        return Err(std::io::Error::from(ErrorKind::BrokenPipe));
                    }
                    Ok(())
                });
            }
        }
        match command.spawn() {
            Ok(child) => Ok(Child { child, program: program.clone() }),
            Err(e) => {
                let code = match e.kind() {
                    ErrorKind::NotFound => exit::NOT_FOUND,
                    _ => exit::CANNOT_EXECUTE,
                };
                Err(CliError::new(code, format!("cannot run {program:?}: {e}")))
            }
        }
    }

    /// CMD's stdout, when spawned with a pipe for it (once).
    pub fn take_stdout(&mut self) -> Option<tokio::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// Sends `sig` to CMD, unless it was reaped already (its pid may belong to someone else
    /// then).
    pub fn signal(&self, sig: i32) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) with a pid we spawned and have not reaped.
            unsafe {
                libc::kill(pid as libc::pid_t, sig);
            }
        }
    }

    /// Waits for CMD to exit and reaps it: its exit code, or 128 + the signal that ended it.
    /// Cancel safe.
    pub async fn wait(&mut self) -> i32 {
        match self.child.wait().await {
            Ok(status) => status.code().or_else(|| status.signal().map(exit::signalled)).unwrap_or(exit::FAILURE),
            Err(e) => {
                eprintln!("zkr: waiting for {:?} failed: {e}", self.program);
                exit::FAILURE
            }
        }
    }

    fn describe(&self) -> String {
        match self.child.id() {
            Some(pid) => format!("{:?} (pid {pid})", self.program),
            None => format!("{:?}", self.program),
        }
    }
}

/// How a supervised CMD ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// CMD's exit code (128 + signal when a signal ended it).
    pub code: i32,
    /// Why the hold was lost while CMD ran, if it was.
    pub lost: Option<String>,
}

/// Runs until CMD exits, whatever happens meanwhile:
/// * `lost` resolves (the hold is gone): act as `--on-lost` says — SIGTERM (and SIGKILL
///   `--kill-after` later if CMD is still there), SIGKILL, or nothing — and keep waiting;
/// * SIGINT or SIGTERM to zkr: forwarded to CMD, and keep waiting.
///
/// `what` names the hold in messages ("lock", "leadership"...).
pub async fn supervise(
    child: &mut Child,
    what: &str,
    lost: impl Future<Output = String>,
    supervision: &Supervision,
    signals: &mut Signals,
) -> Ended {
    let mut lost = pin!(lost);
    let mut lost_reason: Option<String> = None;
    let mut kill_at: Option<Instant> = None;
    loop {
        tokio::select! {
            code = child.wait() => return Ended { code, lost: lost_reason },
            reason = &mut lost, if lost_reason.is_none() => {
                let action = match supervision.on_lost {
                    OnLost::Term => {
                        kill_at = Some(zk_recipes::Deadline::after(supervision.kill_after).instant());
                        "sending SIGTERM to"
                    }
                    OnLost::Kill => "sending SIGKILL to",
                    OnLost::Ignore => "letting it finish:",
                };
                eprintln!("zkr: {what} lost ({reason}); {action} {}", child.describe());
                match supervision.on_lost {
                    OnLost::Term => child.signal(libc::SIGTERM),
                    OnLost::Kill => child.signal(libc::SIGKILL),
                    OnLost::Ignore => {}
                }
                lost_reason = Some(reason);
            }
            sig = signals.recv() => {
                eprintln!("zkr: forwarding {} to {}", signals::name(sig), child.describe());
                child.signal(sig);
            }
            _ = sleep_until(kill_at) => {
                eprintln!("zkr: {} still running {} after SIGTERM; sending SIGKILL", child.describe(),
                    humanize(supervision.kill_after));
                child.signal(libc::SIGKILL);
                kill_at = None;
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
