//! SIGINT and SIGTERM, caught from the start so that every phase (connecting, waiting,
//! holding, running CMD) ends cleanly: nodes released, session closed, CMD reaped.

use std::future::Future;

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::{self, CliError};

pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    pub fn install() -> std::io::Result<Self> {
        Ok(Self { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    /// The next SIGINT or SIGTERM (its number).
    pub async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.interrupt.recv() => libc::SIGINT,
            _ = self.terminate.recv() => libc::SIGTERM,
        }
    }

    /// Runs `work` unless a signal comes first: then `work` is dropped (every acquire and wait
    /// of the library is cancel safe) and the error carries exit code 128 + the signal.
    pub async fn interruptible<T>(&mut self, work: impl Future<Output = T>) -> Result<T, CliError> {
        tokio::select! {
            done = work => Ok(done),
            sig = self.recv() => Err(interrupted(sig)),
        }
    }
}

pub fn interrupted(sig: i32) -> CliError {
    CliError::new(exit::signalled(sig), format!("interrupted by {}", name(sig)))
}

pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGKILL => "SIGKILL",
        _ => "a signal",
    }
}
