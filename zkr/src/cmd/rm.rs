//! `zkr rm`: delete a node; with `-r`, the node and everything under it
//! ([`Framework::delete_recursive`]), after a confirmation on the terminal unless `--yes`.

use std::io::{BufRead, IsTerminal, Write};
use zk_recipes::ZooKeeperError;

use zk_recipes::{Error, Framework};

use crate::args::RmArgs;
use crate::exit::{self, CliError, CliResult};
use crate::Ctx;

/// What is refused before connecting: a bad path, the root, and `-r` without `--yes` when
/// nobody can answer the question (stdin is not a terminal).
pub fn check(args: &RmArgs) -> CliResult<()> {
    zk_recipes::ops::validate_path(&args.path)?;
    if args.path == "/" {
        return Err(CliError::usage("refusing to delete the root (or the namespace root under --namespace)"));
    }
    if args.recursive && !args.yes && !std::io::stdin().is_terminal() {
        return Err(CliError::usage(
            "rm -r asks for confirmation on a terminal and stdin is not one: give --yes (-y) to delete without asking",
        ));
    }
    Ok(())
}

/// With `-r` and without `--yes`: asks on stderr, reads the answer from stdin (`y` or `yes`);
/// anything else deletes nothing (exit 1). SIGINT / SIGTERM while asking end zkr as usual.
pub async fn confirm(args: &RmArgs, ctx: &mut Ctx) -> CliResult<()> {
    if !args.recursive || args.yes {
        return Ok(());
    }
    let question = format!("zkr: delete {} and everything under it? [y/N] ", args.path);
    let (tx, rx) = tokio::sync::oneshot::channel();
    // a thread of its own, not the runtime's blocking pool: a signal leaves the read behind,
    // and the process exits without waiting for it
    std::thread::spawn(move || {
        let mut stderr = std::io::stderr();
        let _ = stderr.write_all(question.as_bytes()).and_then(|()| stderr.flush());
        let mut answer = String::new();
        let read = std::io::stdin().lock().read_line(&mut answer).map(|_| answer);
        let _ = tx.send(read);
    });
    let answer = ctx
        .signals
        .interruptible(rx)
        .await?
        .map_err(|_| CliError::new(exit::FAILURE, "no answer read: nothing deleted"))?
        .map_err(|e| CliError::new(exit::FAILURE, format!("cannot read the answer: {e}; nothing deleted")))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(CliError::new(exit::FAILURE, "not confirmed: nothing deleted")),
    }
}

pub async fn rm(fw: &Framework, args: RmArgs, ctx: &mut Ctx) -> CliResult {
    if args.recursive {
        ctx.signals.interruptible(fw.delete_recursive(&args.path)).await??;
    } else {
        let path = &args.path;
        match ctx.signals.interruptible(fw.delete(path)).await? {
            Err(Error::ZooKeeper(ZooKeeperError::NotEmpty)) => {
                return Err(CliError::new(
                    exit::FAILURE,
                    format!("{path} has children: nothing deleted (-r deletes them too)"),
                ))
            }
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => {
                return Err(CliError::new(exit::FAILURE, format!("{path} does not exist")))
            }
            other => other?,
        }
    }
    Ok(exit::OK)
}
