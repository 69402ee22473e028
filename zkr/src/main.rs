//! `zkr`: zk-recipes from the shell. The manual is zkr/README.md, assembled from the same
//! text `zkr help <subcommand>` prints (`help/*.txt`, checked by a test in `help.rs`).
//!
//! Layout: `args` (the command line), `cmd/` (one module per subcommand group; a new
//! subcommand is a variant of `args::Command` plus a module there), `hold` (what the holding
//! subcommands share), `child` (CMD supervision), `signals`, `exit` (exit codes), `output` and
//! `progress` (what goes to stdout, and to a terminal's stderr), `logging` (`-v`, RUST_LOG),
//! `legacy` (older argument forms), `help` (long help, completions, man page).

mod args;
mod bench;
mod child;
mod cmd;
mod duration;
mod exit;
mod help;
mod hold;
mod legacy;
mod logging;
mod once;
mod output;
mod progress;
mod registry_args;
mod security;
mod signals;

use std::time::Duration;

use tokio::time::Instant;

use clap::Parser;
use zk_recipes::Framework;

use crate::args::{Cli, Global};
use crate::exit::{CliError, CliResult};
use crate::signals::Signals;

/// How long closing the session may take on the way out.
const CLOSE_TIMEOUT: Duration = Duration::from_millis(500);
/// How long pending background deletes (of abandoned acquires) may take on the way out.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// How long closing may take after a wait ran out of time.
const HURRIED_CLOSE: Duration = Duration::from_millis(250);

/// Why [`Ctx::connect_by`] failed.
pub enum ConnectFailure {
    /// No session by the command's deadline.
    Deadline,
    /// As [`Ctx::connect`].
    Other(CliError),
}

/// What every subcommand gets: the global options and the signals.
pub struct Ctx {
    pub global: Global,
    pub signals: Signals,
}

impl Ctx {
    /// Connects with the global options (`data`: the recipe nodes' data). Exit 69 when no
    /// session comes up within `--connection-timeout`.
    pub async fn connect(&mut self, data: Option<&str>) -> CliResult<Framework> {
        let timeout = self.global.connection_timeout;
        self.connect_within(data, timeout).await
    }

    /// [`connect`](Self::connect) by `deadline` (a command's `--timeout`) when that comes
    /// before `--connection-timeout`: no session by then is [`ConnectFailure::Deadline`].
    pub async fn connect_by(&mut self, data: Option<&str>, deadline: Instant) -> Result<Framework, ConnectFailure> {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = self.global.connection_timeout;
        if left >= timeout {
            return self.connect_within(data, timeout).await.map_err(ConnectFailure::Other);
        }
        match self.connect_within(data, left.max(Duration::from_millis(1))).await {
            Err(e) if e.code == exit::UNAVAILABLE && Instant::now() >= deadline => Err(ConnectFailure::Deadline),
            other => other.map_err(ConnectFailure::Other),
        }
    }

    async fn connect_within(&mut self, data: Option<&str>, connection_timeout: Duration) -> CliResult<Framework> {
        let g = &self.global;
        let mut builder = Framework::builder()
            .connect_string(&g.connect)
            .session_timeout(g.session_timeout)
            .connection_timeout(connection_timeout);
        if let Some(ns) = &g.namespace {
            builder = builder.namespace(ns);
        }
        if let Some(data) = data {
            builder = builder.default_data(data);
        }
        let builder = security::apply(&g.security, builder)?;
        let connected = self.signals.interruptible(builder.connect()).await?;
        let hosts = &self.global.connect;
        connected.map_err(|e| match e {
            e @ (zk_recipes::Error::InvalidArgument { .. } | zk_recipes::Error::InvalidPath { .. }) => {
                CliError::from(e)
            }
            // the message names the server and the cause
            e @ (zk_recipes::Error::Tls { .. } | zk_recipes::Error::AuthFailed { .. }) => {
                CliError::new(exit::UNAVAILABLE, e.to_string())
            }
            zk_recipes::Error::ConnectTimeout { timeout, .. } => CliError::new(
                exit::UNAVAILABLE,
                format!("cannot reach ZooKeeper at {hosts} within {}", output::humanize(timeout)),
            ),
            e => CliError::new(exit::UNAVAILABLE, format!("cannot connect to ZooKeeper at {hosts}: {e}")),
        })
    }

    /// Ends the session cleanly with [`Framework::shutdown`]: lets background deletes (of
    /// abandoned acquires) finish, closes the session (the server drops our ephemeral nodes at
    /// once) and waits until the server acknowledged it — briefly when disconnected already.
    /// `hurried`: the command's wait ran out (perhaps on a server that stopped answering):
    /// the close gets [`HURRIED_CLOSE`] in all, so that `--timeout` is kept.
    pub async fn close(&mut self, fw: Framework, hurried: bool) {
        let limit = match fw.connection_state().is_connected() {
            _ if hurried => HURRIED_CLOSE,
            true => DRAIN_TIMEOUT + CLOSE_TIMEOUT,
            false => CLOSE_TIMEOUT,
        };
        // not acknowledged in time: the session ends with its timeout, nothing more to do
        let _ = fw.shutdown(limit).await;
    }
}

fn main() {
    // usage errors exit 2, --help and --version 0
    let cli = Cli::parse_from(legacy::normalize(std::env::args_os().collect()));
    logging::init(cli.global.verbose);
    // One thread: enough for a CLI, and the thread that spawns CMD is the one that lives as
    // long as zkr (CMD's parent-death signal is tied to it). The benchmark drives many
    // sessions at once: all cores for it.
    let runtime = if matches!(cli.command, args::Command::Bench(_)) {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zkr: cannot start the runtime: {e}");
            std::process::exit(exit::FAILURE);
        }
    };
    let code = runtime.block_on(async {
        let signals = match Signals::install() {
            Ok(s) => s,
            Err(e) => return Err(CliError::new(exit::FAILURE, format!("cannot install signal handlers: {e}"))),
        };
        let mut ctx = Ctx { global: cli.global, signals };
        cmd::run(cli.command, &mut ctx).await
    });
    drop(runtime);
    let code = match code {
        Ok(code) => code,
        Err(e) => {
            eprintln!("zkr: {}", e.message);
            e.code
        }
    };
    std::process::exit(code);
}
