//! `zkr barrier` and `zkr double-barrier`.

use std::time::Duration;

use zk_recipes::{DistributedBarrier, DistributedDoubleBarrier, Framework};

use super::{before_deadline, timed_out};
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
            let passed = match args.timeout {
                None => ctx
                    .signals
                    .interruptible(crate::progress::waiting("waiting on the barrier", barrier.wait_on_barrier()))
                    .await?
                    .map(|()| true)?,
                Some(t) => before_deadline(
                    ctx.signals
                        .interruptible(crate::progress::waiting(
                            "waiting on the barrier",
                            barrier.wait_on_barrier_timeout(t),
                        ))
                        .await?,
                )?
                .is_some(),
            };
            if !passed {
                let waiting_for = format!("the barrier {} to be removed", args.path);
                return Err(timed_out(args.timeout.unwrap_or_default(), &waiting_for));
            }
        }
    }
    Ok(exit::OK)
}

/// Enter, run CMD (SIGINT/SIGTERM are forwarded to it), leave; `--timeout` bounds the enter
/// and, separately, the leave. Exit: CMD's code (0 without CMD); 75 when entering or leaving
/// timed out (our member node is gone either way).
pub async fn double_barrier(fw: &Framework, args: DoubleBarrierArgs, ctx: &mut Ctx) -> CliResult {
    let barrier = DistributedDoubleBarrier::new(fw, &args.path, args.members)?;
    let entered = match args.timeout {
        None => ctx
            .signals
            .interruptible(crate::progress::waiting("waiting for the members", barrier.enter()))
            .await?
            .map(|()| true)?,
        Some(t) => before_deadline(
            ctx.signals
                .interruptible(crate::progress::waiting("waiting for the members", barrier.enter_timeout(t)))
                .await?,
        )?
        .is_some(),
    };
    if !entered {
        let waiting_for = format!("{} members to enter {}", args.members, args.path);
        return Err(timed_out(args.timeout.unwrap_or_default(), &waiting_for));
    }
    let code = if args.cmd.is_empty() {
        exit::OK
    } else {
        let mut cmd = Child::spawn(&args.cmd, &[], false)?;
        // nothing is held that could be lost: a member whose session dies just counts as left
        let supervision = Supervision { on_lost: OnLost::Ignore, kill_after: Duration::from_secs(10) };
        child::supervise(&mut cmd, "barrier", std::future::pending(), &supervision, &mut ctx.signals).await.code
    };
    let left = match args.timeout {
        None => ctx.signals.interruptible(barrier.leave()).await?.map(|()| true)?,
        Some(t) => before_deadline(ctx.signals.interruptible(barrier.leave_timeout(t)).await?)?.is_some(),
    };
    if !left {
        let waiting_for = format!("the members of {} to leave", args.path);
        return Err(timed_out(args.timeout.unwrap_or_default(), &waiting_for));
    }
    Ok(code)
}
