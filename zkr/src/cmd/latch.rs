//! `zkr latch`: set, count down, wait on or read a count-down latch
//! (`DistributedCountDownLatch`).
//!
//! Output: `set` prints the new generation (exit 1 when a generation is still counting down);
//! `down` prints how many count-downs are still missing (exit 1 when no count is set);
//! `count` prints the missing count-downs (0: open, or never set); `wait` prints nothing and
//! exits 0 once open, 75 on `--timeout`. With `--json`, one object per command.

use zk_recipes::latch::CountDown;
use zk_recipes::{DistributedCountDownLatch, Framework};

use super::{recipe_path, wait_within};
use crate::args::{LatchArgs, LatchOp};
use crate::exit::{self, CliError, CliResult};
use serde_json::json;

use crate::{output, Ctx};

/// What can be refused before connecting.
pub fn check(args: &LatchArgs) -> CliResult<()> {
    match &args.op {
        LatchOp::Set { path, n } => {
            recipe_path(path)?;
            if *n == 0 {
                return Err(CliError::usage("the count must be at least 1"));
            }
        }
        LatchOp::Down { path, id } => {
            recipe_path(path)?;
            if id.is_empty() || id.contains('/') {
                return Err(CliError::usage(format!(
                    "--id {id:?}: a participant id is a node name (no '/', not empty)"
                )));
            }
        }
        LatchOp::Wait { path, .. } | LatchOp::Count { path } => recipe_path(path)?,
    }
    Ok(())
}

pub async fn latch(fw: &Framework, args: LatchArgs, ctx: &mut Ctx) -> CliResult {
    let as_json = ctx.global.json;
    match args.op {
        LatchOp::Set { path, n } => {
            let latch = DistributedCountDownLatch::new(fw, &path)?;
            if !ctx.signals.interruptible(latch.try_set_count(n)).await?? {
                return Err(CliError::new(exit::FAILURE, format!("{path}: a generation is still counting down")));
            }
            let generation = ctx.signals.interruptible(latch.generation()).await??.unwrap_or_default();
            output::line(&if as_json {
                json!({"generation": number(generation), "count": number(n)}).to_string()
            } else {
                generation.to_string()
            });
        }
        LatchOp::Down { path, id } => {
            let latch = DistributedCountDownLatch::new(fw, &path)?;
            let (counted, generation, remaining) = match ctx.signals.interruptible(latch.count_down(&id)).await?? {
                CountDown::Counted { generation, remaining } => (true, generation, remaining),
                CountDown::AlreadyCounted { generation, remaining } => (false, generation, remaining),
                _ => return Err(CliError::new(exit::FAILURE, format!("{path}: no count is set"))),
            };
            output::line(&if as_json {
                json!({"counted": counted, "generation": number(generation), "remaining": number(remaining)})
                    .to_string()
            } else {
                remaining.to_string()
            });
        }
        LatchOp::Count { path } => {
            let latch = DistributedCountDownLatch::new(fw, &path)?;
            let remaining = ctx.signals.interruptible(latch.count()).await??;
            output::line(&if as_json {
                json!({"count": number(remaining)}).to_string()
            } else {
                remaining.to_string()
            });
        }
        LatchOp::Wait { path, timeout } => {
            let latch = DistributedCountDownLatch::new(fw, &path)?;
            let waiting_for = format!("the latch {path} to open");
            let (untimed, timed) = (latch.wait(), |t| latch.wait_timeout(t));
            wait_within(ctx, "waiting for the latch", timeout, untimed, timed, &waiting_for).await?;
        }
    }
    Ok(exit::OK)
}

/// A count or generation for JSON (they fit: counts are at most `i32::MAX`).
fn number(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
