//! What `lock`, `semaphore` and `elect` share once they hold: run CMD under supervision, or
//! print the held nodes and wait for a signal; then release and pick the exit code.

use std::time::Duration;

use futures_util::future::select_all;
use zk_recipes::{Error, HeldLock, LeaderLatch, Leadership, Lease, LossReason, MultiLockGuard, TimedHold};

use crate::args::Supervision;
use crate::child::{self, Child};
use crate::exit::{self, CliResult};
use crate::output;
use crate::Ctx;

/// How long releasing may take on the way out. The release is explicit so that the next
/// holder does not wait; if it cannot finish (ZooKeeper unreachable), closing the session —
/// or, failing that, its expiry — removes our ephemeral nodes anyway.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

/// One node we hold: its full path (relative to `--namespace`) and fencing token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub path: String,
    pub token: i64,
}

impl Node {
    pub fn of(node: &zk_recipes::HeldNode) -> Node {
        Node { path: node.path().to_string(), token: node.fencing_token() }
    }
}

/// Something held, of any recipe.
pub enum Held {
    /// A lock of any kind.
    Lock(HeldLock),
    /// A multi-lock (its members in the order of the PATH arguments).
    Multi(MultiLockGuard),
    Leases(Vec<Lease>),
    /// The latch and the leadership it returned.
    Leader(LeaderLatch, Leadership),
    /// A lock bounded by a lease; renewed for this long whenever CMD writes a line, if given.
    Leased(TimedHold, Option<Duration>),
}

impl Held {
    /// The held nodes (for a multi-lock: in the order of the PATHs given).
    pub fn nodes(&self) -> Vec<Node> {
        match self {
            Held::Lock(g) => vec![Node::of(g)],
            Held::Multi(m) => m.nodes().map(Node::of).collect(),
            Held::Leases(leases) => leases.iter().map(|l| Node::of(l)).collect(),
            Held::Leader(_, leadership) => {
                vec![Node { path: leadership.node().to_string(), token: leadership.fencing_token() }]
            }
            Held::Leased(held, _) => vec![Node::of(held)],
        }
    }

    /// Resolves when the hold is lost, with the reason.
    async fn lost(&self) -> String {
        match self {
            Held::Lock(g) => told(g.lost().await),
            Held::Leased(held, _) => told(held.lost().await),
            Held::Multi(m) => told(m.lost().await),
            Held::Leases(leases) => told(select_all(leases.iter().map(|l| Box::pin(l.lost()))).await.0),
            Held::Leader(_, leadership) => format!("no longer the leader: {}", told(leadership.lost().await)),
        }
    }

    /// Releases (deletes our nodes, closes the latch). [`Released::Lost`] when the hold had
    /// been lost before.
    async fn release(self) -> Released {
        let released = match self {
            Held::Lock(g) => g.release().await,
            Held::Leased(held, _) => held.release().await,
            Held::Multi(m) => m.release().await,
            Held::Leases(leases) => zk_recipes::InterProcessSemaphoreV2::return_all(leases).await,
            Held::Leader(latch, leadership) => {
                let lost = leadership.loss();
                return match (latch.close().await, lost) {
                    (Err(e), _) => Released::Failed(e),
                    (Ok(()), Some(reason)) => {
                        Released::Lost(format!("{}: no longer the leader before closing: {reason}", leadership.node()))
                    }
                    (Ok(()), None) => Released::Done,
                };
            }
        };
        match released {
            Ok(()) => Released::Done,
            Err(Error::LockLost { path, reason, .. }) => {
                Released::Lost(format!("{path} before release: {}", told(reason)))
            }
            Err(e) => Released::Failed(e),
        }
    }
}

/// How a release ended.
enum Released {
    Done,
    /// The hold had been lost before (why, for the message).
    Lost(String),
    Failed(Error),
}

/// Holds `held` while CMD runs (exit: CMD's code, or 76 when the hold was lost meanwhile),
/// or — without CMD — prints one line per held node and holds until SIGINT/SIGTERM (exit 0)
/// or loss (exit 76). Releases in every case. `what` names the hold in messages; `env` is
/// CMD's extra environment.
pub async fn run(
    ctx: &mut Ctx,
    held: Held,
    what: &str,
    cmd: &[String],
    env: &[(&str, String)],
    supervision: &Supervision,
) -> CliResult {
    let outcome = if cmd.is_empty() {
        for node in held.nodes() {
            output::line(&output::held(&node.path, node.token, ctx.global.json));
        }
        tokio::select! {
            reason = held.lost() => {
                eprintln!("zkr: {what} lost ({reason})");
                Ok(exit::LOST)
            }
            _ = ctx.signals.recv() => Ok(exit::OK),
        }
    } else {
        let renewing = match &held {
            Held::Leased(leased, Some(lease)) => Some((leased, *lease)),
            _ => None,
        };
        match Child::spawn(cmd, env, renewing.is_some()) {
            Err(e) => Err(e),
            Ok(mut child) => {
                let output = child.take_stdout();
                let lost = async {
                    if let (Some((leased, lease)), Some(output)) = (renewing, output) {
                        tokio::select! {
                            reason = held.lost() => return reason,
                            // CMD closed its stdout: no renewal any more
                            () = renew_on_lines(output, leased, lease) => {}
                        }
                    }
                    held.lost().await
                };
                let ended = child::supervise(&mut child, what, lost, supervision, &mut ctx.signals).await;
                Ok(if ended.lost.is_some() { exit::LOST } else { ended.code })
            }
        }
    };
    let released = tokio::time::timeout(RELEASE_TIMEOUT, held.release()).await;
    match released {
        Ok(Released::Lost(reason)) if outcome.as_ref().is_ok_and(|&code| code != exit::LOST) => {
            eprintln!("zkr: {what} lost ({reason})");
            Ok(exit::LOST)
        }
        Ok(Released::Lost(_)) | Ok(Released::Done) => outcome,
        Ok(Released::Failed(e)) => {
            eprintln!("zkr: releasing the {what}: {e} (the session's end removes it)");
            outcome
        }
        Err(_) => {
            eprintln!("zkr: releasing the {what} timed out (the session's end removes it)");
            outcome
        }
    }
}

/// Passes CMD's stdout through line by line, renewing `leased` for `lease` at each line, until
/// CMD closes it.
async fn renew_on_lines(output: tokio::process::ChildStdout, leased: &TimedHold, lease: Duration) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut lines = BufReader::new(output).lines();
    let mut stdout = tokio::io::stdout();
    while let Ok(Some(line)) = lines.next_line().await {
        // a lost hold cannot be renewed: the supervisor is told by `lost()`
        let _ = leased.renew(lease);
        let _ = stdout.write_all(format!("{line}\n").as_bytes()).await;
        let _ = stdout.flush().await;
    }
}

/// A loss reason in zkr's words: a hold bounded by `--lease` (or `zkr once`'s lock) that ran
/// out is "lease expired", as zkr has always printed it (the library calls it `Expired`, since
/// "lease" there means a semaphore's).
pub(crate) fn told(reason: LossReason) -> String {
    match reason {
        LossReason::Expired => "lease expired".to_string(),
        other => other.to_string(),
    }
}
