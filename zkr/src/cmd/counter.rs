//! `zkr atomic` and `zkr shared-count`.

use std::pin::pin;
use zk_recipes::ZooKeeperError;

use futures_util::StreamExt;
use zk_recipes::counter::AtomicNumber;
use zk_recipes::counter::DistributedAtomicNumber;
use zk_recipes::{Error, Framework, SharedCount};

use crate::args::{AtomicArgs, AtomicOp, SharedCountArgs, SharedCountOp};
use crate::exit::{self, CliError, CliResult};
use serde_json::json;

use crate::{output, Ctx};

pub async fn atomic(fw: &Framework, args: AtomicArgs, ctx: &mut Ctx) -> CliResult {
    if args.int {
        run_atomic(&DistributedAtomicNumber::<i32>::new(fw, args.op.path())?, &args.op, ctx).await
    } else {
        run_atomic(&DistributedAtomicNumber::<i64>::new(fw, args.op.path())?, &args.op, ctx).await
    }
}

async fn run_atomic<T>(counter: &DistributedAtomicNumber<T>, op: &AtomicOp, ctx: &mut Ctx) -> CliResult
where
    T: AtomicNumber + TryFrom<i64> + Into<i64>,
{
    let result = ctx.signals.interruptible(apply(counter, op)).await.and_then(|r| r);
    // each write leaves this handle's transaction marker under the counter: delete it
    if let Err(e) = counter.close().await {
        eprintln!("zkr: could not delete the counter's transaction marker: {e}");
    }
    let (value, succeeded) = result?;
    let line = if ctx.global.json {
        match op {
            AtomicOp::Cas { .. } => json!({"value": value, "succeeded": succeeded}),
            _ => json!({"value": value}),
        }
        .to_string()
    } else {
        value.to_string()
    };
    output::line(&line);
    Ok(if succeeded { exit::OK } else { exit::FAILURE })
}

/// The value after `op` (for a failed `cas`: the current value) and whether it succeeded.
async fn apply<T>(counter: &DistributedAtomicNumber<T>, op: &AtomicOp) -> CliResult<(i64, bool)>
where
    T: AtomicNumber + TryFrom<i64> + Into<i64>,
{
    let number = |n: i64| T::try_from(n).map_err(|_| CliError::usage(format!("{n} is out of range")));
    let outcome = match op {
        AtomicOp::Get { .. } => return Ok((counter.get().await?.into(), true)),
        AtomicOp::Add { n, .. } => counter.add(number(*n)?).await?,
        AtomicOp::Set { n, .. } => counter.try_set(number(*n)?).await?,
        AtomicOp::Cas { expected, new, .. } => counter.compare_and_set(number(*expected)?, number(*new)?).await?,
    };
    // an update whose tries ran out is `Error::Contended` (exit 1, its message) above
    Ok(match op {
        AtomicOp::Cas { .. } if !outcome.succeeded => (outcome.pre_value.into(), false),
        _ => (outcome.post_value.into(), true),
    })
}

pub async fn shared_count(fw: &Framework, args: SharedCountArgs, ctx: &mut Ctx) -> CliResult {
    let path = args.op.path().to_string();
    let count = SharedCount::new(fw, &path, 0)?;
    let print = |value: i32, as_json: bool| {
        output::line(&if as_json { json!({"value": value}).to_string() } else { value.to_string() })
    };
    let as_json = ctx.global.json;
    match args.op {
        SharedCountOp::Get { .. } => match ctx.signals.interruptible(count.get()).await? {
            Ok(v) => print(v.value, as_json),
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => {
                return Err(CliError::new(exit::FAILURE, format!("no shared count at {path}")))
            }
            Err(e) => return Err(e.into()),
        },
        SharedCountOp::Set { n, .. } => {
            ctx.signals.interruptible(count.set(n)).await??;
            print(n, as_json);
        }
        SharedCountOp::Watch { .. } => {
            let mut changes = pin!(count.changes());
            loop {
                tokio::select! {
                    next = changes.next() => match next {
                        Some(Ok(v)) => print(v.value, as_json),
                        // the stream goes on after an error (corrupt data, connection trouble)
                        Some(Err(e)) => eprintln!("zkr: {e}"),
                        None => break,
                    },
                    _ = ctx.signals.recv() => break,
                }
            }
        }
    }
    Ok(exit::OK)
}
