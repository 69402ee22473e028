//! What is at a path: which recipe, who holds, who waits — for tools (`zkr inspect`) and
//! operators.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::Result;
use crate::framework::{paths, Framework, IfExists};
use crate::recipes::layout::{
    ATOMIC_QUEUE, ATOMIC_TXN_MARKER, DOUBLE_BARRIER_READY, LATCH_NAME, LEASE_NAME, LOCK_NAME, READ_NAME,
    SEMAPHORE_LEASES, SEMAPHORE_LOCKS, WRITE_NAME,
};
use crate::recipes::locks::driver::sort_children;

/// The recipe recognised at a path from its node names.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecipeKind {
    /// `..lock-<seq>` children: an InterProcessMutex (or LeaderSelector).
    Mutex,
    /// `..__READ__<seq>` / `..__WRIT__<seq>` children.
    ReadWriteLock,
    /// `leases` (and `locks`) children: an InterProcessSemaphoreV2 / semaphore mutex.
    Semaphore,
    /// `..latch-<seq>` children: a LeaderLatch.
    LeaderLatch,
    /// A persistent node without children: a DistributedBarrier (set) — or any plain node.
    Barrier,
    /// Ephemeral members and maybe `ready`: a DistributedDoubleBarrier.
    DoubleBarrier,
    /// 4 or 8 bytes of data: a SharedCount / DistributedAtomicInteger / DistributedAtomicLong.
    Counter,
    /// Nothing at the path.
    Missing,
    /// Something else.
    Unknown,
}

impl RecipeKind {
    /// A stable lower-case name (`mutex`, `rwlock`, `semaphore`, `latch`, `barrier`,
    /// `double_barrier`, `counter`, `missing`, `unknown`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Mutex => "mutex",
            Self::ReadWriteLock => "rwlock",
            Self::Semaphore => "semaphore",
            Self::LeaderLatch => "latch",
            Self::Barrier => "barrier",
            Self::DoubleBarrier => "double_barrier",
            Self::Counter => "counter",
            Self::Missing => "missing",
            Self::Unknown => "unknown",
        }
    }
}

/// One node of a recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// The node's name.
    pub name: String,
    /// The owning session (0 for persistent nodes).
    pub session_id: i64,
    /// The node's `czxid` (the fencing token of a lock node).
    pub fencing_token: i64,
    /// Milliseconds since the node was created (by the local clock).
    pub age_ms: i64,
    /// The node's data as text (lossy UTF-8).
    pub data: String,
}

/// What [`inspect`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// The recipe recognised.
    pub kind: RecipeKind,
    /// Nodes that hold (lock holders, leases, the leader, barrier members inside).
    pub holders: Vec<NodeInfo>,
    /// Nodes that wait, in queue order.
    pub waiters: Vec<NodeInfo>,
    /// For counters and barriers: the node's own data as text; for counters, the number.
    pub value: Option<String>,
}

/// Looks at `path` and tells which recipe lives there, who holds and who waits.
///
/// # Errors
/// [`Error::InvalidPath`](crate::Error::InvalidPath); the framework's errors.
///
/// # Cancel safety
/// Cancel safe.
pub async fn inspect(fw: &Framework, path: &str) -> Result<Inspection> {
    paths::validate_path(path)?;
    let empty = |kind| Inspection { kind, holders: Vec::new(), waiters: Vec::new(), value: None };
    let Some((data, _)) = fw.get_data(path).await.if_exists()? else { return Ok(empty(RecipeKind::Missing)) };
    let Some(mut children) = fw.children(path).await.if_exists()? else { return Ok(empty(RecipeKind::Missing)) };
    // an atomic value's transaction markers and its contention queue
    children.retain(|c| !c.starts_with(ATOMIC_TXN_MARKER) && c != ATOMIC_QUEUE);
    let has = |needle: &str| children.iter().any(|c| c.contains(needle));
    if children.is_empty() {
        let value = match data.len() {
            8 => Some(i64::from_be_bytes(data.as_slice().try_into().unwrap_or([0; 8])).to_string()),
            4 => Some(i32::from_be_bytes(data.as_slice().try_into().unwrap_or([0; 4])).to_string()),
            _ => None,
        };
        let kind = if value.is_some() { RecipeKind::Counter } else { RecipeKind::Barrier };
        let value = value.or_else(|| Some(String::from_utf8_lossy(&data).into_owned()));
        return Ok(Inspection { value, ..empty(kind) });
    }
    if children.iter().any(|c| c == SEMAPHORE_LEASES) {
        let leases = nodes(fw, &paths::join(path, SEMAPHORE_LEASES), &[LEASE_NAME]).await?;
        let waiting = nodes(fw, &paths::join(path, SEMAPHORE_LOCKS), &[LOCK_NAME]).await?;
        return Ok(Inspection { kind: RecipeKind::Semaphore, holders: leases, waiters: waiting, value: None });
    }
    if has(READ_NAME) || has(WRITE_NAME) {
        let all = nodes(fw, path, &[READ_NAME, WRITE_NAME]).await?;
        let first_writer = all.iter().position(|n| n.name.contains(WRITE_NAME));
        let split = match first_writer {
            Some(0) => 1,
            Some(w) => w,
            None => all.len(),
        };
        let (holders, waiters) = split_at(all, split);
        return Ok(Inspection { kind: RecipeKind::ReadWriteLock, holders, waiters, value: None });
    }
    for (name, kind) in [(LATCH_NAME, RecipeKind::LeaderLatch), (LOCK_NAME, RecipeKind::Mutex)] {
        if has(name) {
            let (holders, waiters) = split_at(nodes(fw, path, &[name]).await?, 1);
            return Ok(Inspection { kind, holders, waiters, value: None });
        }
    }
    let members = nodes(fw, path, &[]).await?;
    if members.iter().any(|m| m.name == DOUBLE_BARRIER_READY) || members.iter().all(|m| m.session_id != 0) {
        let (ready, members): (Vec<_>, Vec<_>) = members.into_iter().partition(|m| m.name == DOUBLE_BARRIER_READY);
        let value = Some(if ready.is_empty() { "not ready" } else { "ready" }.to_string());
        return Ok(Inspection { kind: RecipeKind::DoubleBarrier, holders: members, waiters: Vec::new(), value });
    }
    Ok(empty(RecipeKind::Unknown))
}

fn split_at(mut all: Vec<NodeInfo>, at: usize) -> (Vec<NodeInfo>, Vec<NodeInfo>) {
    let waiters = all.split_off(at.min(all.len()));
    (all, waiters)
}

/// The children of `dir` (none when it is missing), sorted as the recipe named `names` sorts
/// them (by name without `names`), with their stats and data; children deleted meanwhile are
/// left out. Also the leader recipes' participants.
pub(crate) async fn nodes(fw: &Framework, dir: &str, names: &[&str]) -> Result<Vec<NodeInfo>> {
    let mut children = fw.children_or_empty(dir).await?;
    sort_children(&mut children, names);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    let mut out = Vec::with_capacity(children.len());
    for name in children {
        let Some((data, stat)) = fw.get_data(&paths::join(dir, &name)).await.if_exists()? else { continue };
        out.push(NodeInfo {
            name,
            session_id: stat.ephemeral_owner,
            fencing_token: stat.czxid,
            age_ms: now - stat.ctime,
            data: String::from_utf8_lossy(&data).into_owned(),
        });
    }
    Ok(out)
}
