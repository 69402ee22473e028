//! `zkr once`: run CMD on one host only, across every host that runs the same line — a
//! crontab's job at most once per tick, through the ShedLock-compatible lock (ShedLock's
//! ZooKeeper layout: Java services using ShedLock share the names).

use std::time::Duration;

use zk_recipes::{Framework, ShedLock};

use crate::args::OnceArgs;
use crate::child::{self, Child};
use crate::exit::{self, CliError, CliResult};
use serde_json::json;

use crate::{output, Ctx};

/// How long unlocking may take on the way out; the lock frees itself at its instant anyway.
const UNLOCK_TIMEOUT: Duration = Duration::from_secs(3);

/// What can be refused before connecting.
pub fn check(args: &OnceArgs) -> CliResult<()> {
    let lock_path = format!("{}/{}", args.root.trim_end_matches('/'), args.name);
    zk_recipes::ops::validate_path(&args.root)?;
    if args.root.trim_end_matches('/').is_empty() {
        return Err(CliError::usage("--root cannot be /"));
    }
    if args.name.is_empty() || args.name.contains('/') {
        return Err(CliError::usage(format!("NAME must be non-empty and without `/`: {:?}", args.name)));
    }
    zk_recipes::ops::validate_path(&lock_path)?;
    if args.at_most.is_zero() {
        return Err(CliError::usage("--at-most must be longer than zero"));
    }
    if args.at_least > args.at_most {
        return Err(CliError::usage("--at-least cannot be longer than --at-most"));
    }
    Ok(())
}

/// Takes the lock and runs CMD, or skips (exit 0, `skipped NAME until INSTANT` on stderr).
pub async fn once(fw: &Framework, args: OnceArgs, ctx: &mut Ctx) -> CliResult {
    let locks = ShedLock::new(fw).root(&args.root)?;
    let taken = ctx.signals.interruptible(locks.try_lock(&args.name, args.at_most, args.at_least)).await??;
    let Some(guard) = taken else {
        let until = ctx.signals.interruptible(locks.locked_until(&args.name)).await?.ok().flatten();
        let until = until.unwrap_or_else(|| "(unknown: the lock node could not be read)".into());
        eprintln!("skipped {} until {until}", args.name);
        if ctx.global.json {
            output::line(&json!({"name": args.name, "skipped_until": until}).to_string());
        }
        return Ok(exit::OK);
    };
    guard.keep_alive();
    let until = locked_until_text(&locks, &args.name, guard.path()).await;
    if ctx.global.json {
        let line = json!({
            "name": args.name,
            "path": guard.path(),
            "fencing_token": guard.fencing_token(),
            "locked_until": until,
        })
        .to_string();
        output::line(&line);
    }
    let env = [
        ("ZK_LOCK_PATH", guard.path().to_string()),
        ("ZK_FENCING_TOKEN", guard.fencing_token().to_string()),
        ("ZK_LOCKED_UNTIL", until),
    ];
    let outcome = match Child::spawn(&args.cmd, &env, false) {
        Err(e) => Err(e),
        Ok(mut child) => {
            let lost = async { crate::hold::told(guard.lost().await) };
            let ended = child::supervise(&mut child, "lock", lost, &args.supervision, &mut ctx.signals).await;
            // the contract: zkr once exits with CMD's status, also after a loss stopped
            // it (then usually 143: SIGTERM, or what CMD's own TERM handler chose)
            Ok(ended.code)
        }
    };
    match tokio::time::timeout(UNLOCK_TIMEOUT, guard.unlock()).await {
        Ok(Ok(())) => outcome,
        Ok(Err(zk_recipes::Error::LockLost { reason, .. })) => {
            eprintln!("zkr: lock lost ({})", crate::hold::told(reason));
            outcome
        }
        Ok(Err(e)) => {
            eprintln!("zkr: unlocking {}: {e} (it frees itself at its instant)", args.name);
            outcome
        }
        Err(_) => {
            eprintln!("zkr: unlocking {} timed out (it frees itself at its instant)", args.name);
            outcome
        }
    }
}

/// The instant our taking wrote, as stored.
async fn locked_until_text(locks: &ShedLock, name: &str, path: &str) -> String {
    match locks.locked_until(name).await {
        Ok(Some(text)) => text,
        _ => format!("(unknown: {path} could not be read)"),
    }
}
