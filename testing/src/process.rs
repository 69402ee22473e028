//! The handle of one server JVM: spawn, signal, reap, and the registry of live JVMs.
//!
//! Processes are spawned with `std::process` rather than `tokio::process`, so that killing and
//! reaping in `Drop` is synchronous and works outside a runtime (a test that panics drops its
//! servers wherever it is).
//!
//! On Linux each JVM is started with `PR_SET_PDEATHSIG = SIGKILL`, so that the kernel kills it
//! when the test process dies without running destructors (a `SIGKILL`ed test binary, an
//! abort). The signal fires when the *thread* that forked the child exits, not the process, so
//! every JVM is forked by one long-lived spawner thread: a server started in one test and kept in
//! a shared fixture must not die when that test's thread ends.

use std::collections::BTreeSet;
use std::io;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::{Error, Result};

/// How often a stopping process is checked for having exited.
const EXIT_POLL: Duration = Duration::from_millis(20);

/// Pids of the server JVMs of this process that have been spawned and not yet reaped.
static LIVE: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// A command to spawn, and where to send the process. The process travels as a `ZkProcess`, so
/// that it is killed if the caller stopped waiting for it (its future was dropped).
type SpawnJob = (Command, oneshot::Sender<io::Result<ZkProcess>>);

/// The channel to the spawner thread, started on first use.
static SPAWNER: Mutex<Option<mpsc::Sender<SpawnJob>>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How many ZooKeeper server processes started by this test process are alive (spawned and not
/// yet killed, stopped and reaped).
///
/// A test can assert `running_servers() == 0` at its end to check that it left no JVM
/// behind, provided no other test of the same binary runs servers concurrently; otherwise
/// check the pids it knows about with [`running_server_pids`].
pub fn running_servers() -> usize {
    lock(&LIVE).len()
}

/// The pids of the ZooKeeper server processes counted by [`running_servers`], in ascending order.
pub fn running_server_pids() -> Vec<u32> {
    lock(&LIVE).iter().copied().collect()
}

/// One running (or paused) server JVM. Dropping it kills and reaps the process.
#[derive(Debug)]
pub(crate) struct ZkProcess {
    child: Child,
    pid: u32,
    paused: bool,
    exit: Option<ExitStatus>,
}

impl ZkProcess {
    /// Spawns `command` from the spawner thread, with stdin, stdout and stderr as already set on
    /// it.
    pub async fn spawn(mut command: Command) -> Result<ZkProcess> {
        set_parent_death_signal(&mut command);
        let (reply, answer) = oneshot::channel();
        {
            let mut spawner = lock(&SPAWNER);
            let sender = match spawner.as_ref() {
                Some(sender) => sender.clone(),
                None => {
                    let sender = start_spawner()?;
                    *spawner = Some(sender.clone());
                    sender
                }
            };
            sender.send((command, reply)).map_err(|_| Error::io("the process spawner thread is gone"))?;
        }
        answer.await.map_err(|_| Error::io("the process spawner thread is gone"))?.map_err(Error::from)
    }

    fn new(child: Child) -> ZkProcess {
        ZkProcess { pid: child.id(), child, paused: false, exit: None }
    }

    /// The operating-system process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the process was paused with [`ZkProcess::pause`] and not resumed.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// The exit status if the process has exited (reaping it), `None` while it runs.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.reaped(status);
            }
        }
        self.exit
    }

    /// Kills the process with `SIGKILL` and waits for it. Does nothing once it has exited.
    pub fn kill(&mut self) {
        if self.try_exit().is_some() {
            return;
        }
        // `Child::kill` sends SIGKILL; a stopped (paused) process dies from it too.
        let _ = self.child.kill();
        match self.child.wait() {
            Ok(status) => self.reaped(status),
            Err(e) => tracing::warn!(pid = self.pid, error = %e, "could not reap a killed server"),
        }
    }

    /// Asks the process to exit with `SIGTERM` (resuming it first if paused), waits up to
    /// `grace` for it to do so, then kills it.
    pub async fn stop(&mut self, grace: Duration) {
        if self.try_exit().is_some() {
            return;
        }
        self.signal(libc::SIGTERM);
        if self.paused {
            self.signal(libc::SIGCONT);
            self.paused = false;
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.try_exit().is_some() {
                return;
            }
            tokio::time::sleep(EXIT_POLL).await;
        }
        tracing::warn!(pid = self.pid, ?grace, "server ignored SIGTERM; killing it");
        self.kill();
    }

    /// Freezes the process with `SIGSTOP`.
    pub fn pause(&mut self) -> Result<()> {
        self.require_running()?;
        self.signal(libc::SIGSTOP);
        self.paused = true;
        Ok(())
    }

    /// Lets a paused process run again with `SIGCONT`.
    pub fn resume(&mut self) -> Result<()> {
        self.require_running()?;
        self.signal(libc::SIGCONT);
        self.paused = false;
        Ok(())
    }

    fn require_running(&mut self) -> Result<()> {
        match self.try_exit() {
            None => Ok(()),
            Some(status) => {
                Err(Error::InvalidArgument(format!("server process {} is not running ({status})", self.pid)))
            }
        }
    }

    /// Sends `sig`. Only called before the process is reaped, so the pid cannot have been reused.
    fn signal(&self, sig: libc::c_int) {
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return;
        };
        // SAFETY: kill(2) has no memory-safety preconditions.
        if unsafe { libc::kill(pid, sig) } != 0 {
            let e = io::Error::last_os_error();
            tracing::warn!(pid = self.pid, sig, error = %e, "could not signal a server");
        }
    }

    fn reaped(&mut self, status: ExitStatus) {
        self.exit = Some(status);
        self.paused = false;
        lock(&LIVE).remove(&self.pid);
    }
}

impl Drop for ZkProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts the thread that forks every server JVM, and returns its job queue.
fn start_spawner() -> Result<mpsc::Sender<SpawnJob>> {
    let (sender, jobs) = mpsc::channel::<SpawnJob>();
    std::thread::Builder::new().name("zk-testing-spawner".into()).spawn(move || {
        for (mut command, reply) in jobs {
            let spawned = command.spawn().map(|child| {
                lock(&LIVE).insert(child.id());
                ZkProcess::new(child)
            });
            // If the caller is gone, the process is dropped here, which kills it.
            let _ = reply.send(spawned);
        }
    })?;
    Ok(sender)
}

#[cfg(target_os = "linux")]
fn set_parent_death_signal(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls
    // (prctl, getppid); it allocates nothing and takes no locks.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect: then nobody would kill us.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn set_parent_death_signal(_command: &mut Command) {}
