//! `zkr barrier` and `zkr double-barrier`.

use std::time::Duration;

use zk_recipes::{DistributedBarrier, DistributedDoubleBarrier, Framework};

use super::wait_within;
use crate::args::{BarrierAction, BarrierArgs, DoubleBarrierArgs, OnLost, Supervision};
use crate::child::{self, Child};
use crate::exit::{self, CliResult};
use crate::Ctx;

pub async fn barrier(fw: &Framework, args: BarrierArgs, ctx: &mut Ctx) -> CliResult {
    let barrier = DistributedBarrier::new(fw, &args.path)?;
    match args.action {
        BarrierAction::Set => ctx.signals.interruptible(barrier.set_barrier()).await??,
        BarrierAction::Remove => ctx.signals.interruptible(barrier.remove_barrier()).await??,
        BarrierAction::Wait => {
            let waiting_for = format!("the barrier {} to be removed", args.path);
            let (untimed, timed) = (barrier.wait_on_barrier(), |t| barrier.wait_on_barrier_timeout(t));
            wait_within(ctx, "waiting on the barrier", args.timeout, untimed, timed, &waiting_for).await?;
        }
    }
    Ok(exit::OK)
}

/// Enter, run CMD (SIGINT/SIGTERM are forwarded to it), leave; `--timeout` bounds the enter
/// and, separately, the leave. Exit: CMD's code (0 without CMD); 75 when entering or leaving
/// timed out (our member node is gone either way).
pub async fn double_barrier(fw: &Framework, args: DoubleBarrierArgs, ctx: &mut Ctx) -> CliResult {
    let barrier = DistributedDoubleBarrier::new(fw, &args.path, args.members)?;
    let waiting_for = format!("{} members to enter {}", args.members, args.path);
    let (untimed, timed) = (barrier.enter(), |t| barrier.enter_timeout(t));
    wait_within(ctx, "waiting for the members", args.timeout, untimed, timed, &waiting_for).await?;
    let code = if args.cmd.is_empty() {
        exit::OK
    } else {
        let mut cmd = Child::spawn(&args.cmd, &[], false)?;
        // nothing is held that could be lost: a member whose session dies just counts as left
        let supervision = Supervision { on_lost: OnLost::Ignore, kill_after: Duration::from_secs(10) };
        child::supervise(&mut cmd, "barrier", std::future::pending(), &supervision, &mut ctx.signals).await.code
    };
    let waiting_for = format!("the members of {} to leave", args.path);
    let (untimed, timed) = (barrier.leave(), |t| barrier.leave_timeout(t));
    wait_within(ctx, "waiting for the members to leave", args.timeout, untimed, timed, &waiting_for).await?;
    Ok(code)
}
