//! `zkr lock` and `zkr semaphore`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::{
    Framework, InterProcessLock, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, TimedHold,
};

use super::timed_out;
use crate::args::{LockArgs, LockKind, SemaphoreArgs};
use crate::exit::{CliError, CliResult};
use crate::hold::{self, Held, Node};
use crate::Ctx;

pub async fn lock(fw: &Framework, args: LockArgs, ctx: &mut Ctx) -> CliResult {
    let waiting_for = match args.paths.as_slice() {
        [one] => format!("the lock {one}"),
        many => format!("the locks {}", many.join(" ")),
    };
    if args.lease.is_some() && args.paths.len() > 1 {
        return Err(CliError::usage("--lease takes one PATH"));
    }
    if args.lease.is_some_and(|l| l.is_zero()) {
        return Err(CliError::usage("--lease must be longer than zero"));
    }
    let acquired =
        ctx.signals.interruptible(crate::progress::waiting("waiting for the lock", acquire(fw, &args))).await??;
    let held = acquired.ok_or_else(|| timed_out(args.hold.timeout.unwrap_or_default(), &waiting_for))?;
    let held = match (held, args.lease) {
        (Held::Lock(lock), Some(lease)) => {
            let renew_on_output = args.renew_on_output.then_some(lease);
            Held::Leased(TimedHold::new(lock, lease)?, renew_on_output)
        }
        (held, _) => held,
    };
    let nodes = held.nodes();
    let env = [("ZK_LOCK_PATH", join_paths(&nodes)), ("ZK_FENCING_TOKEN", nodes[0].token.to_string())];
    let what = if nodes.len() == 1 { "lock" } else { "locks" };
    hold::run(ctx, held, what, &args.hold.cmd, &env, &args.hold.supervision).await
}

pub async fn semaphore(fw: &Framework, args: SemaphoreArgs, ctx: &mut Ctx) -> CliResult {
    let semaphore = InterProcessSemaphoreV2::new(fw, &args.path, args.leases)?;
    let (n, timeout) = (args.count, args.hold.timeout);
    let acquire = timed(timeout, semaphore.acquire_many(n), |t| semaphore.acquire_many_timeout(n, t));
    let acquired = ctx.signals.interruptible(crate::progress::waiting("waiting for the leases", acquire)).await??;
    let leases = acquired.ok_or_else(|| {
        let waiting_for = format!("{n} of the {} leases of {}", args.leases, args.path);
        timed_out(timeout.unwrap_or_default(), &waiting_for)
    })?;
    let held = Held::Leases(leases);
    let nodes = held.nodes();
    let env = [("ZK_LEASE_PATHS", join_paths(&nodes)), ("ZK_FENCING_TOKEN", nodes[0].token.to_string())];
    let what = if nodes.len() == 1 { "lease" } else { "leases" };
    hold::run(ctx, held, what, &args.hold.cmd, &env, &args.hold.supervision).await
}

/// `forever` without a timeout, `bounded(timeout)` with one (`Ok(None)`: timed out). The
/// library's own timeouts are used, not a `tokio::time::timeout` around the acquire, so that
/// a timed-out acquire has deleted its node before it returns.
async fn timed<T, F, B>(
    timeout: Option<Duration>,
    forever: F,
    bounded: impl FnOnce(Duration) -> B,
) -> zk_recipes::Result<Option<T>>
where
    F: Future<Output = zk_recipes::Result<T>>,
    B: Future<Output = zk_recipes::Result<T>>,
{
    match timeout {
        None => forever.await.map(Some),
        Some(t) => match bounded(t).await {
            Err(zk_recipes::Error::Timeout { .. }) => Ok(None),
            other => other.map(Some),
        },
    }
}

async fn acquire(fw: &Framework, args: &LockArgs) -> CliResult<Option<Held>> {
    let t = args.hold.timeout;
    let locks = args.paths.iter().map(|path| lock_of(fw, args.kind, path)).collect::<zk_recipes::Result<Vec<_>>>()?;
    let multi = match <[_; 1]>::try_from(locks) {
        Ok([lock]) => return Ok(timed(t, lock.acquire(), |t| lock.acquire_timeout(t)).await?.map(Held::Lock)),
        // several: one multi-lock, whose guard gives the nodes in the order of the PATHs
        Err(locks) => InterProcessMultiLock::new(locks)?,
    };
    Ok(timed(t, multi.acquire(), |t| multi.acquire_timeout(t)).await?.map(Held::Multi))
}

/// The lock of `kind` at `path`.
fn lock_of(fw: &Framework, kind: LockKind, path: &str) -> zk_recipes::Result<Arc<dyn InterProcessLock>> {
    Ok(match kind {
        LockKind::Mutex => Arc::new(InterProcessMutex::new(fw, path)?),
        LockKind::Read => Arc::new(InterProcessReadWriteLock::new(fw, path)?.read_lock()),
        LockKind::Write => Arc::new(InterProcessReadWriteLock::new(fw, path)?.write_lock()),
        LockKind::SemaphoreMutex => Arc::new(InterProcessSemaphoreMutex::new(fw, path)?),
    })
}

/// Node paths separated by spaces (ZooKeeper paths cannot be split wrongly: a node name may
/// contain a space, but none of ours do).
fn join_paths(nodes: &[Node]) -> String {
    nodes.iter().map(|n| n.path.as_str()).collect::<Vec<_>>().join(" ")
}
