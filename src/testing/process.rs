//! Server processes: spawned from one long-lived thread (so that the kernel kills them with
//! SIGKILL when this test process dies: `PR_SET_PDEATHSIG` follows the spawning thread),
//! stopped by pid, reaped always.

use std::collections::HashSet;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::framework::lock;

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("zk-testing-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("spawn the process spawner thread");
        Mutex::new(tx)
    })
}

fn live() -> &'static Mutex<HashSet<u32>> {
    static LIVE: OnceLock<Mutex<HashSet<u32>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

/// How many server processes started by this process are still running.
pub fn running_servers() -> usize {
    lock(live()).len()
}

/// A child process we own: killed and reaped on drop.
#[derive(Debug)]
pub(crate) struct Process {
    child: Child,
}

impl Process {
    pub fn spawn(mut command: Command) -> Result<Process> {
        // SAFETY: prctl with PR_SET_PDEATHSIG is async-signal-safe; no allocation happens.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let (tx, rx) = mpsc::channel();
        lock(spawner()).send((command, tx)).map_err(|_| Error::Io("spawner thread gone".into()))?;
        let child = rx.recv().map_err(|_| Error::Io("spawner thread gone".into()))??;
        lock(live()).insert(child.id());
        Ok(Process { child })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid, which is not yet reaped.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, signal);
        }
    }

    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// Whether the process still runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGKILL and reap.
    pub fn kill(mut self) {
        self.kill_now();
    }

    fn kill_now(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        lock(live()).remove(&self.child.id());
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL; always reaped.
    pub async fn stop(mut self, grace: Duration) {
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if !self.is_running() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.kill_now();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill_now();
    }
}
