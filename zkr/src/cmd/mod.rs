//! The subcommands, one module per group. Each gets a connected framework; arguments that can
//! be refused without ZooKeeper are refused first (exit 2 even when ZooKeeper is down).
//!
//! Adding a subcommand: a variant of [`Command`] in `args.rs`, its checks in [`check`], its
//! module here, and its arm in [`run`].

mod barrier;
mod counter;
mod discover;
mod elect;
mod group;
mod inspect;
mod latch;
mod lock;
mod queue;
mod rm;
mod watch;

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

use crate::args::{AtomicOp, Command, WatchMode};
use crate::exit::{self, CliError, CliResult};
use crate::output::humanize;
use crate::{ConnectFailure, Ctx};

/// Runs `command`: checks its arguments, connects, runs it, closes the session.
pub async fn run(command: Command, ctx: &mut Ctx) -> CliResult {
    match &command {
        Command::Completions(args) => return crate::help::completions(args.shell),
        Command::Man(args) => return crate::help::man(args.dir.as_deref()),
        _ => {}
    }
    if let Command::Bench(args) = &command {
        // one session per benchmark client: bench connects by itself
        let line =
            crate::bench::run(&ctx.global.connect, args).await.map_err(|(code, msg)| CliError::new(code, msg))?;
        println!("{line}");
        return Ok(exit::OK);
    }
    check(&command)?;
    if let Command::Rm(args) = &command {
        rm::confirm(args, ctx).await?;
    }
    let data = match &command {
        Command::Lock(a) => a.hold.data.as_deref(),
        Command::Semaphore(a) => a.hold.data.as_deref(),
        _ => None,
    };
    // a holding command's --timeout bounds its connect too: it is the caller's whole wait
    let deadline = match &command {
        Command::Lock(a) => a.hold.timeout,
        Command::Semaphore(a) => a.hold.timeout,
        _ => None,
    }
    // saturating: `--timeout 580000000000y` is "as long as it takes", not an overflow
    .map(|t| (t, zk_recipes::Deadline::after(t).instant()));
    let fw = match deadline {
        Some((timeout, at)) => ctx.connect_by(data, at).await.map_err(|e| match e {
            ConnectFailure::Deadline => timed_out(timeout, "a session with ZooKeeper"),
            ConnectFailure::Other(e) => e,
        })?,
        None => ctx.connect(data).await?,
    };
    // what is left of the wait once connected
    let left = |t: Option<Duration>| {
        t.zip(deadline).map(|(_, (_, at))| at.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)))
    };
    // `--compressed`: every command works through a compressing handle, but watch, which
    // decompresses what it prints itself (data that is not gzip is shown as stored)
    let fw = if ctx.global.compressed && !matches!(command, Command::Watch(_)) { fw.compressed() } else { fw };
    let result = match command {
        Command::Lock(mut args) => {
            args.hold.timeout = left(args.hold.timeout);
            lock::lock(&fw, args, ctx).await
        }
        Command::Semaphore(mut args) => {
            args.hold.timeout = left(args.hold.timeout);
            lock::semaphore(&fw, args, ctx).await
        }
        Command::Elect(args) => elect::elect(&fw, args, ctx).await,
        Command::Barrier(args) => barrier::barrier(&fw, args, ctx).await,
        Command::DoubleBarrier(args) => barrier::double_barrier(&fw, args, ctx).await,
        Command::Latch(args) => latch::latch(&fw, args, ctx).await,
        Command::Atomic(args) => counter::atomic(&fw, args, ctx).await,
        Command::SharedCount(args) => counter::shared_count(&fw, args, ctx).await,
        Command::Inspect(args) => inspect::inspect(&fw, args, ctx).await,
        Command::Rm(args) => rm::rm(&fw, args, ctx).await,
        Command::Watch(args) => watch::watch(&fw, args, ctx).await,
        Command::Group(args) => group::group(&fw, args, ctx).await,
        Command::Discover(args) => discover::discover(&fw, args, ctx).await,
        Command::Queue(args) => queue::queue(&fw, args, ctx).await,
        Command::Once(args) => crate::once::once(&fw, args, ctx).await,
        Command::Bench(_) | Command::Completions(_) | Command::Man(_) => unreachable!("handled before connecting"),
    };
    // a wait that ran out may be on a server that stopped answering: no long goodbye then
    // (closing the session removes our nodes; unacknowledged, it expires)
    let timed_out = matches!(&result, Err(e) if e.code == exit::TIMEOUT);
    ctx.close(fw, timed_out).await;
    result
}

/// What can be refused before connecting.
fn check(command: &Command) -> CliResult<()> {
    match command {
        Command::Lock(a) => {
            let mut seen = HashSet::new();
            for path in &a.paths {
                recipe_path(path)?;
                if !seen.insert(path) {
                    return Err(CliError::usage(format!("{path:?} is given twice")));
                }
            }
        }
        Command::Semaphore(a) => {
            recipe_path(&a.path)?;
            if a.leases == 0 {
                return Err(CliError::usage("--max-leases must be at least 1"));
            }
            if a.count == 0 || a.count > a.leases {
                return Err(CliError::usage(format!("--count must be in 1..={} (--max-leases)", a.leases)));
            }
        }
        Command::Elect(a) => {
            recipe_path(&a.path)?;
            if a.id.as_deref() == Some("") {
                return Err(CliError::usage("--id must not be empty"));
            }
        }
        Command::Barrier(a) => recipe_path(&a.path)?,
        Command::DoubleBarrier(a) => {
            recipe_path(&a.path)?;
            if a.members == 0 {
                return Err(CliError::usage("--members must be at least 1"));
            }
        }
        Command::Latch(a) => latch::check(a)?,
        Command::Atomic(a) => {
            recipe_path(a.op.path())?;
            if a.int {
                let numbers = match a.op {
                    AtomicOp::Get { .. } => vec![],
                    AtomicOp::Add { n, .. } | AtomicOp::Set { n, .. } => vec![n],
                    AtomicOp::Cas { expected, new, .. } => vec![expected, new],
                };
                if let Some(n) = numbers.into_iter().find(|&n| i32::try_from(n).is_err()) {
                    return Err(CliError::usage(format!("{n} is out of range for --int (32-bit)")));
                }
            }
        }
        Command::SharedCount(a) => recipe_path(a.op.path())?,
        Command::Inspect(a) => zk_recipes::ops::validate_path(&a.path)?,
        Command::Rm(a) => rm::check(a)?,
        Command::Watch(a) => {
            zk_recipes::ops::validate_path(&a.path)?;
            match (a.mode, a.max_depth) {
                (_, Some(0)) => return Err(CliError::usage("--max-depth must be at least 1")),
                (WatchMode::Tree, _) | (_, None) => {}
                (_, Some(_)) => return Err(CliError::usage("--max-depth goes with --kind tree")),
            }
        }
        Command::Group(a) => group::check(a)?,
        Command::Discover(a) => discover::check(a)?,
        Command::Queue(a) => queue::check(a)?,
        Command::Once(a) => crate::once::check(a)?,
        Command::Bench(_) | Command::Completions(_) | Command::Man(_) => {}
    }
    Ok(())
}

/// A path a recipe can live at: valid, absolute, and not the root.
fn recipe_path(path: &str) -> CliResult<()> {
    zk_recipes::ops::validate_path(path)?;
    if path == "/" {
        return Err(CliError::usage("the root cannot hold a recipe: give a path below it"));
    }
    Ok(())
}

/// A bounded wait's result with its deadline as `None`: the library reports a `*_timeout`
/// wait that ran out as `Error::Timeout`, the commands report it with their own message.
fn before_deadline<T>(result: zk_recipes::Result<T>) -> zk_recipes::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(zk_recipes::Error::Timeout { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A recipe's wait, interruptible by SIGINT / SIGTERM and with a spinner saying `label` on a
/// terminal: `untimed` without a timeout, `timed(t)` with one. A wait that ran out of time is
/// the error saying what it was `waiting_for` (exit 75).
async fn wait_within<T: std::future::Future<Output = zk_recipes::Result<()>>>(
    ctx: &mut Ctx,
    label: &str,
    timeout: Option<Duration>,
    untimed: impl std::future::Future<Output = zk_recipes::Result<()>>,
    timed: impl FnOnce(Duration) -> T,
    waiting_for: &str,
) -> CliResult<()> {
    let waited = match timeout {
        None => ctx.signals.interruptible(crate::progress::waiting(label, untimed)).await?.map(Some),
        Some(t) => before_deadline(ctx.signals.interruptible(crate::progress::waiting(label, timed(t))).await?),
    };
    match waited? {
        Some(()) => Ok(()),
        None => Err(timed_out(timeout.unwrap_or_default(), waiting_for)),
    }
}

/// The error for a wait that ran out of time (exit 75).
fn timed_out(timeout: Duration, waiting_for: &str) -> CliError {
    CliError::new(exit::TIMEOUT, format!("timed out after {} waiting for {waiting_for}", humanize(timeout)))
}
