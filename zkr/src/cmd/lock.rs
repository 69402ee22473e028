//! `zkr lock` and `zkr semaphore`.

use std::future::Future;
use std::time::Duration;

use zk_recipes::{
    Framework, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, Lockable,
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
    let acquired = ctx.signals.interruptible(acquire(fw, &args)).await??;
    let held = acquired.ok_or_else(|| timed_out(args.hold.timeout.unwrap_or_default(), &waiting_for))?;
    let nodes = held.nodes();
    let env = [("ZK_LOCK_PATH", join_paths(&nodes)), ("ZK_FENCING_TOKEN", nodes[0].token.to_string())];
    let what = if nodes.len() == 1 { "lock" } else { "locks" };
    hold::run(ctx, held, what, &args.hold.cmd, &env, &args.hold.supervision).await
}

pub async fn semaphore(fw: &Framework, args: SemaphoreArgs, ctx: &mut Ctx) -> CliResult {
    let semaphore = InterProcessSemaphoreV2::new(fw, &args.path, args.leases)?;
    let (n, timeout) = (args.count, args.hold.timeout);
    let acquire = timed(timeout, semaphore.acquire_many(n), |t| semaphore.acquire_many_timeout(n, t));
    let acquired = ctx.signals.interruptible(acquire).await??;
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
    B: Future<Output = zk_recipes::Result<Option<T>>>,
{
    match timeout {
        None => forever.await.map(Some),
        Some(t) => bounded(t).await,
    }
}

async fn acquire(fw: &Framework, args: &LockArgs) -> CliResult<Option<Held>> {
    let t = args.hold.timeout;
    if let [path] = args.paths.as_slice() {
        let held = match args.kind {
            LockKind::Mutex => {
                let m = InterProcessMutex::new(fw, path)?;
                timed(t, m.acquire(), |t| m.acquire_timeout(t)).await?.map(Held::Lock)
            }
            LockKind::Read => {
                let l = InterProcessReadWriteLock::new(fw, path)?;
                timed(t, l.read(), |t| l.read_timeout(t)).await?.map(Held::Lock)
            }
            LockKind::Write => {
                let l = InterProcessReadWriteLock::new(fw, path)?;
                timed(t, l.write(), |t| l.write_timeout(t)).await?.map(Held::Lock)
            }
            LockKind::SemaphoreMutex => {
                let m = InterProcessSemaphoreMutex::new(fw, path)?;
                timed(t, m.acquire(), |t| m.acquire_timeout(t)).await?.map(Held::Lease)
            }
        };
        return Ok(held);
    }
    let members = args
        .paths
        .iter()
        .map(|path| {
            Ok(match args.kind {
                LockKind::Mutex => Lockable::Mutex(InterProcessMutex::new(fw, path)?),
                LockKind::Read => Lockable::Read(InterProcessReadWriteLock::new(fw, path)?),
                LockKind::Write => Lockable::Write(InterProcessReadWriteLock::new(fw, path)?),
                LockKind::SemaphoreMutex => Lockable::SemaphoreMutex(InterProcessSemaphoreMutex::new(fw, path)?),
            })
        })
        .collect::<zk_recipes::Result<Vec<_>>>()?;
    let multi = InterProcessMultiLock::new(members)?;
    let Some(guard) = timed(t, multi.acquire(), |t| multi.acquire_timeout(t)).await? else { return Ok(None) };
    let nodes = in_path_order(&args.paths, args.kind, guard.nodes().map(Node::of).collect())?;
    Ok(Some(Held::Multi(guard, nodes)))
}

/// The multi-lock's nodes (it acquires in sorted path order) in the order of `paths`.
fn in_path_order(paths: &[String], kind: LockKind, nodes: Vec<Node>) -> CliResult<Vec<Node>> {
    // a lock node is a child of the lock's path; a semaphore mutex's is under <path>/leases
    let lock_path = |node: &Node| {
        let mut dir = parent(&node.path);
        if kind == LockKind::SemaphoreMutex {
            dir = parent(dir);
        }
        dir.to_string()
    };
    paths
        .iter()
        .map(|path| {
            nodes
                .iter()
                .find(|n| lock_path(n) == *path)
                .cloned()
                .ok_or_else(|| CliError::new(crate::exit::FAILURE, format!("no held node found for {path}")))
        })
        .collect()
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Node paths separated by spaces (ZooKeeper paths cannot be split wrongly: a node name may
/// contain a space, but none of ours do).
fn join_paths(nodes: &[Node]) -> String {
    nodes.iter().map(|n| n.path.as_str()).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, token: i64) -> Node {
        Node { path: path.into(), token }
    }

    #[test]
    fn multi_lock_nodes_follow_the_given_paths() {
        let nodes = vec![node("/a/_c_1-lock-0000000000", 1), node("/a/b/_c_2-lock-0000000003", 2)];
        let paths = vec!["/a/b".to_string(), "/a".to_string()];
        let ordered = in_path_order(&paths, LockKind::Mutex, nodes).unwrap();
        assert_eq!(ordered.iter().map(|n| n.token).collect::<Vec<_>>(), [2, 1]);

        let leases = vec![node("/x/leases/_c_1-lease-0000000000", 5), node("/y/leases/_c_2-lease-0000000000", 6)];
        let paths = vec!["/y".to_string(), "/x".to_string()];
        let ordered = in_path_order(&paths, LockKind::SemaphoreMutex, leases).unwrap();
        assert_eq!(join_paths(&ordered), "/y/leases/_c_2-lease-0000000000 /x/leases/_c_1-lease-0000000000");
    }
}
