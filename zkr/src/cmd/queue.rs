//! `zkr queue put|take|size`: Curator's queues from the shell.

use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::queue::Delivery;
use zk_recipes::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue, Error, Framework,
    SimpleDistributedQueue,
};

use super::{before_deadline, recipe_path, timed_out};
use crate::args::{QueueArgs, QueueKind, QueueOp};
use crate::exit::{self, CliError, CliResult};
use serde_json::json;

use crate::{output, Ctx};

/// What can be refused before connecting: the path, and put's flags against its kind.
pub fn check(args: &QueueArgs) -> CliResult<()> {
    match &args.op {
        QueueOp::Put { path, kind, id, priority, delay, data } => {
            recipe_path(path)?;
            if data.is_empty() {
                return Err(CliError::usage("an empty queue item"));
            }
            put_kind(*kind, id.is_some(), priority.is_some(), delay.is_some())?;
        }
        QueueOp::Take { path, .. } | QueueOp::Size { path, .. } => recipe_path(path)?,
    }
    Ok(())
}

/// The queue a put writes to: --kind, refined by --id, --priority or --delay.
fn put_kind(kind: QueueKind, id: bool, priority: bool, delay: bool) -> CliResult<QueueKind> {
    let by_flag = match (id, priority, delay) {
        (true, _, _) => Some(QueueKind::Id),
        (_, true, _) => Some(QueueKind::Priority),
        (_, _, true) => Some(QueueKind::Delay),
        _ => None,
    };
    match (kind, by_flag) {
        (QueueKind::Simple, None) => Ok(QueueKind::Simple),
        (QueueKind::Simple, Some(_)) => Err(CliError::usage("--id, --priority and --delay need --kind distributed")),
        (QueueKind::Distributed, by_flag) => Ok(by_flag.unwrap_or(QueueKind::Distributed)),
        (kind, Some(flagged)) if flagged == kind => Ok(kind),
        (kind, _) => Err(CliError::usage(format!(
            "--kind {} needs its flag: --id, --priority or --delay",
            format!("{kind:?}").to_lowercase()
        ))),
    }
}

pub async fn queue(fw: &Framework, args: QueueArgs, ctx: &mut Ctx) -> CliResult {
    match args.op {
        QueueOp::Put { path, kind, id, priority, delay, data } => {
            let item = data.into_bytes();
            let put = async {
                match put_kind(kind, id.is_some(), priority.is_some(), delay.is_some())? {
                    QueueKind::Simple => SimpleDistributedQueue::new(fw, &path)?.offer(&item).await,
                    QueueKind::Distributed => DistributedQueue::new(fw, &path)?.put(&item).await,
                    QueueKind::Id => DistributedIdQueue::new(fw, &path)?.put(&item, &id.unwrap_or_default()).await,
                    QueueKind::Priority => {
                        DistributedPriorityQueue::new(fw, &path)?.put(&item, priority.unwrap_or_default()).await
                    }
                    QueueKind::Delay => {
                        DistributedDelayQueue::new(fw, &path)?.put_after(&item, delay.unwrap_or_default()).await
                    }
                }
                .map_err(CliError::from)
            };
            let node = ctx.signals.interruptible(put).await??;
            let line = if ctx.global.json { json!({"path": node}).to_string() } else { node };
            output::line(&line);
        }
        QueueOp::Take { path, timeout, kind } => {
            let deadline = timeout.map(|t| zk_recipes::Deadline::after(t).instant());
            let Some(items) = ctx
                .signals
                .interruptible(crate::progress::waiting("waiting for an item", take(fw, &path, kind, deadline)))
                .await??
            else {
                return Err(timed_out(timeout.unwrap_or_default(), &format!("an item in {path}")));
            };
            for item in items {
                let line = if ctx.global.json {
                    json!({"data": String::from_utf8_lossy(&item)}).to_string()
                } else {
                    String::from_utf8_lossy(&item).into_owned()
                };
                output::line(&line);
            }
        }
        QueueOp::Size { path, kind } => {
            let size = ctx.signals.interruptible(size(fw, &path, kind)).await??;
            let line = if ctx.global.json { json!({"size": size}).to_string() } else { size.to_string() };
            output::line(&line);
        }
    }
    Ok(exit::OK)
}

/// The items of the next node (`None` at the deadline). The distributed kinds take the node
/// safely and complete it before printing, so that every item of a multi-item node is printed
/// and none is printed that was not consumed.
async fn take(
    fw: &Framework,
    path: &str,
    kind: QueueKind,
    deadline: Option<Instant>,
) -> CliResult<Option<Vec<Vec<u8>>>> {
    let left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
    if kind == QueueKind::Simple {
        let queue = SimpleDistributedQueue::new(fw, path)?;
        return Ok(match left() {
            None => Some(vec![queue.take().await?]),
            Some(left) => before_deadline(queue.take_timeout(left).await)?.map(|item| vec![item]),
        });
    }
    loop {
        let delivery = match kind {
            QueueKind::Id => next(&DistributedIdQueue::new(fw, path)?, left()).await?,
            QueueKind::Priority => next(&DistributedPriorityQueue::new(fw, path)?, left()).await?,
            QueueKind::Delay => next(&DistributedDelayQueue::new(fw, path)?, left()).await?,
            _ => next(&DistributedQueue::new(fw, path)?, left()).await?,
        };
        let Some(delivery) = delivery else { return Ok(None) };
        match delivery.complete().await {
            Ok(items) => return Ok(Some(items)),
            // lost to another consumer meanwhile: take the next one
            Err(Error::LockLost { .. }) | Err(Error::Transaction { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

async fn next<K: zk_recipes::queue::QueueKind>(
    queue: &zk_recipes::Queue<Vec<u8>, K>,
    left: Option<Duration>,
) -> CliResult<Option<Delivery<Vec<u8>>>> {
    Ok(match left {
        None => Some(queue.take_safe().await?),
        Some(left) => before_deadline(queue.take_safe_timeout(left).await)?,
    })
}

async fn size(fw: &Framework, path: &str, kind: QueueKind) -> CliResult<usize> {
    Ok(match kind {
        QueueKind::Simple => SimpleDistributedQueue::new(fw, path)?.size().await?,
        _ => DistributedQueue::new(fw, path)?.size().await?,
    })
}
