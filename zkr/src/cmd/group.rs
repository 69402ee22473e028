//! `zkr group join` and `zkr group members`: a Curator-compatible `GroupMember` from the shell.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use futures_util::StreamExt;
use serde_json::json;
use zk_recipes::{Framework, GroupMember, NodeStatus};

use crate::args::{OnLost, Supervision};
use crate::child::{self, Child};
use crate::exit::{self, CliError, CliResult};
use crate::output;
use crate::registry_args::{GroupArgs, GroupOp, JoinArgs, MembersArgs};
use crate::Ctx;

/// How long leaving (deleting our node) may take on the way out; the session's close removes
/// an ephemeral node anyway.
pub(super) const LEAVE_TIMEOUT: Duration = Duration::from_secs(3);

/// What can be refused before connecting.
pub fn check(args: &GroupArgs) -> CliResult<()> {
    match &args.op {
        GroupOp::Join(a) => {
            super::recipe_path(&a.path)?;
            segment("--id", &a.id)
        }
        GroupOp::Members(a) => super::recipe_path(&a.path),
    }
}

/// A member id or a service name: one path segment.
pub(super) fn segment(what: &str, value: &str) -> CliResult<()> {
    if value.is_empty() || value.contains('/') || value == "." || value == ".." {
        return Err(CliError::usage(format!("{what} {value:?} must be one path segment (not empty, no '/')")));
    }
    Ok(())
}

pub async fn group(fw: &Framework, args: GroupArgs, ctx: &mut Ctx) -> CliResult {
    match args.op {
        GroupOp::Join(a) => join(fw, a, ctx).await,
        GroupOp::Members(a) => members(fw, a, ctx).await,
    }
}

async fn join(fw: &Framework, args: JoinArgs, ctx: &mut Ctx) -> CliResult {
    let member = GroupMember::new(fw, &args.path, &args.id, args.data.as_bytes())?;
    member.start().await?;
    let created = ctx.signals.interruptible(member.wait_for_initial_create(Duration::MAX)).await;
    let path = match created.and_then(|r| r.map_err(CliError::from)) {
        Ok(path) => path,
        Err(e) => {
            let _ = tokio::time::timeout(LEAVE_TIMEOUT, member.close()).await;
            return Err(e);
        }
    };
    let line = if ctx.global.json { json!({"member": path}).to_string() } else { format!("member {path}") };
    output::line(&line);
    let grace = ctx.global.session_timeout;
    let lost = async {
        tokio::select! {
            reason = lost_for_good(member.events(), grace) => reason,
            reason = disconnected_for(fw, grace) => reason,
        }
    };
    // as `zkr lock`'s default: SIGTERM to CMD (SIGKILL 10 s later), then exit 76
    let supervision = Supervision { on_lost: OnLost::Term, kill_after: Duration::from_secs(10) };
    let code = keep(ctx, "membership", &args.cmd, &[("ZK_MEMBER_PATH", path)], lost, &supervision).await;
    if tokio::time::timeout(LEAVE_TIMEOUT, member.close()).await.is_err() {
        eprintln!("zkr: leaving the group timed out (the session's end removes our node)");
    }
    code
}

/// Resolves when the registration is gone and not back within `grace` (why, for messages).
pub(super) async fn lost_for_good(events: impl futures_util::Stream<Item = NodeStatus>, grace: Duration) -> String {
    let mut events = pin!(events);
    loop {
        let Some(status) = events.next().await else { return std::future::pending().await };
        if !matches!(status, NodeStatus::Lost { .. } | NodeStatus::Conflict { .. } | NodeStatus::Failed(_)) {
            continue;
        }
        let back = async {
            while let Some(s) = events.next().await {
                if s.node().is_some() {
                    return true;
                }
            }
            false
        };
        match tokio::time::timeout(grace, back).await {
            Ok(true) => continue,
            _ => return format!("{status:?}, not back within {}", output::humanize(grace)),
        }
    }
}

/// Resolves when the session has been disconnected for `grace` in one go (our ephemeral
/// node cannot be trusted to be there any more).
async fn disconnected_for(fw: &Framework, grace: Duration) -> String {
    let mut status = fw.status_watch();
    loop {
        if status.wait_for(|s| !s.state.is_connected()).await.is_err() {
            return std::future::pending().await;
        }
        let back = status.wait_for(|s| s.state.is_connected());
        if tokio::time::timeout(grace, back).await.is_err() {
            return format!("disconnected for {}", output::humanize(grace));
        }
    }
}

/// Runs CMD (exit: its code, or 76 when `lost` resolved meanwhile), or without CMD waits for
/// SIGINT/SIGTERM (exit 0).
pub(super) async fn keep(
    ctx: &mut Ctx,
    what: &str,
    cmd: &[String],
    env: &[(&str, String)],
    lost: impl Future<Output = String>,
    supervision: &Supervision,
) -> CliResult {
    if cmd.is_empty() {
        ctx.signals.recv().await;
        return Ok(exit::OK);
    }
    let mut child = Child::spawn(cmd, env, false)?;
    let ended = child::supervise(&mut child, what, lost, supervision, &mut ctx.signals).await;
    Ok(if ended.lost.is_some() { exit::LOST } else { ended.code })
}

async fn members(fw: &Framework, args: MembersArgs, ctx: &mut Ctx) -> CliResult {
    let ids = match fw.children(&args.path).await {
        Err(zk_recipes::Error::ZooKeeper(ZooKeeperError::NoNode)) => Vec::new(),
        other => other?,
    };
    let mut ids = ids;
    ids.sort();
    for id in ids {
        let data = match fw.get_data(&format!("{}/{id}", args.path)).await {
            Ok((data, _)) => data,
            Err(zk_recipes::Error::ZooKeeper(ZooKeeperError::NoNode)) => continue,
            Err(e) => return Err(e.into()),
        };
        let data = String::from_utf8_lossy(&data);
        let line = if ctx.global.json { json!({"id": id, "data": data}).to_string() } else { format!("{id} {data}") };
        output::line(&line);
    }
    Ok(exit::OK)
}
