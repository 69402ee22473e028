//! What is at a path: which recipe, who holds, who waits — for tools (`zkr inspect`) and
//! operators.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::Result;
use crate::framework::{paths, Framework, IfExists};
use crate::recipes::latch::state as latch;
use crate::recipes::layout::{
    ATOMIC_GATE, ATOMIC_QUEUE, ATOMIC_TXN_MARKER, DOUBLE_BARRIER_READY, LATCH_NAME, LEASE_NAME, LOCK_NAME,
    QUEUE_ITEM_NAME, READ_NAME, SEMAPHORE_LEASES, SEMAPHORE_LOCKS, SIMPLE_QUEUE_ITEM_NAME, WRITE_NAME,
};
use crate::recipes::locks::{is_contender, sort_children};

/// The recipe recognised at a path from its node names.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::inspect::{inspect, RecipeKind};
///
/// let found = inspect(&fw, "/locks/orders").await?;
/// if found.kind == RecipeKind::Mutex {
///     println!("a mutex with {} waiting", found.waiters.len());
/// }
/// println!("kind: {}", found.kind.name());
/// # Ok(()) }
/// ```
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
    /// `gen-<G>` children and the generation G as data: a DistributedCountDownLatch.
    CountDownLatch,
    /// `queue-…` or `qn-…` item children: a DistributedQueue (or id, priority, delay queue) or a
    /// SimpleDistributedQueue.
    Queue,
    /// Nothing at the path.
    Missing,
    /// Something else.
    Unknown,
}

impl RecipeKind {
    /// A stable lower-case name (`mutex`, `rwlock`, `semaphore`, `latch`, `barrier`,
    /// `double_barrier`, `counter`, `countdown_latch`, `queue`, `missing`, `unknown`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Mutex => "mutex",
            Self::ReadWriteLock => "rwlock",
            Self::Semaphore => "semaphore",
            Self::LeaderLatch => "latch",
            Self::Barrier => "barrier",
            Self::DoubleBarrier => "double_barrier",
            Self::Counter => "counter",
            Self::CountDownLatch => "countdown_latch",
            Self::Queue => "queue",
            Self::Missing => "missing",
            Self::Unknown => "unknown",
        }
    }
}

/// One node of a recipe.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::inspect::inspect;
///
/// for holder in inspect(&fw, "/locks/orders").await?.holders {
///     println!(
///         "{} held by session {:#x} for {} ms, token {}, data {:?}",
///         holder.name, holder.session_id, holder.age_ms, holder.fencing_token, holder.data
///     );
/// }
/// # Ok(()) }
/// ```
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
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::inspect::inspect;
///
/// let found = inspect(&fw, "/counters/orders").await?;
/// println!("{}: {:?}", found.kind.name(), found.value);   // for a counter, its number
/// println!("{} holding, {} waiting", found.holders.len(), found.waiters.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// The recipe recognised.
    pub kind: RecipeKind,
    /// Nodes that hold (lock holders, leases, the leader, barrier members inside, a count-down
    /// latch's participants that counted down in its current generation). A semaphore's are
    /// its lease nodes in queue order: the maximum is not in the tree, so a waiter's lease
    /// node is among them too (Curator's waiter holding the internal lock, and our single
    /// acquires, wait with one); those beyond the maximum wait.
    pub holders: Vec<NodeInfo>,
    /// Nodes that wait, in queue order (a queue's items, the first [`QUEUE_ITEMS_SHOWN`]; a
    /// semaphore's contenders for its internal lock).
    pub waiters: Vec<NodeInfo>,
    /// Foreign children the recipe ignores: under a lock, semaphore (its `leases` and
    /// `locks`) or leader latch, children whose names do not end with the recipe's name and a
    /// ZooKeeper sequence, which no compliant client creates and which hold nothing (see
    /// "Hostile trees" in docs/RELIABILITY.md).
    pub foreign: Vec<NodeInfo>,
    /// For counters and barriers: the node's own data as text; for counters, the number; for a
    /// count-down latch, `generation G: K of N counted down, open|closed`; for a queue, `N
    /// items`.
    pub value: Option<String>,
}

/// How many of a queue's items [`inspect`] reads (each is one read): the first ones in order.
pub const QUEUE_ITEMS_SHOWN: usize = 100;

/// Looks at `path` and tells which recipe lives there, who holds and who waits.
///
/// Node data is shown as `fw` reads it where it can: on a compressing handle
/// ([`Framework::compressed`], or a framework built with
/// [`enable_compression`](crate::FrameworkBuilder::enable_compression)) decompressed, and as
/// stored where it does not decompress (parents, markers, this crate's own latch, plain data);
/// on any other handle exactly as stored (gzip bytes of a compressing writer included).
///
/// # Errors
/// [`Error::InvalidPath`](crate::Error::InvalidPath); the framework's errors.
///
/// # Cancel safety
/// Cancel safe.
pub async fn inspect(fw: &Framework, path: &str) -> Result<Inspection> {
    paths::validate_path(path)?;
    let empty = empty_of;
    let Some((data, _)) = fw.get_data_plain(path).await.if_exists()? else { return Ok(empty(RecipeKind::Missing)) };
    let data = shown(fw, path, data);
    let Some(mut children) = fw.children(path).await.if_exists()? else { return Ok(empty(RecipeKind::Missing)) };
    // an atomic value's transaction markers, its contention queue and the queue's gate
    children.retain(|c| !c.starts_with(ATOMIC_TXN_MARKER) && c != ATOMIC_QUEUE && c != ATOMIC_GATE);
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
        let (leases, mut foreign) = contenders(fw, &paths::join(path, SEMAPHORE_LEASES), &[LEASE_NAME]).await?;
        let (waiting, foreign_locks) = contenders(fw, &paths::join(path, SEMAPHORE_LOCKS), &[LOCK_NAME]).await?;
        foreign.extend(foreign_locks);
        let kind = RecipeKind::Semaphore;
        return Ok(Inspection { kind, holders: leases, waiters: waiting, foreign, value: None });
    }
    if let Some(found) = countdown_latch(fw, path, &data, &children).await? {
        return Ok(found);
    }
    let items = |prefix: &str| children.iter().filter(|c| c.starts_with(prefix)).count();
    let queued = items(QUEUE_ITEM_NAME) + items(SIMPLE_QUEUE_ITEM_NAME);
    if queued > 0 {
        return queue(fw, path, queued).await;
    }
    if has(READ_NAME) || has(WRITE_NAME) {
        let (all, foreign) = contenders(fw, path, &[READ_NAME, WRITE_NAME]).await?;
        let first_writer = all.iter().position(|n| n.name.contains(WRITE_NAME));
        let split = match first_writer {
            Some(0) => 1,
            Some(w) => w,
            None => all.len(),
        };
        let (holders, waiters) = split_at(all, split);
        return Ok(Inspection { kind: RecipeKind::ReadWriteLock, holders, waiters, foreign, value: None });
    }
    for (name, kind) in [(LATCH_NAME, RecipeKind::LeaderLatch), (LOCK_NAME, RecipeKind::Mutex)] {
        if has(name) {
            let (all, foreign) = contenders(fw, path, &[name]).await?;
            let (holders, waiters) = split_at(all, 1);
            return Ok(Inspection { kind, holders, waiters, foreign, value: None });
        }
    }
    let members = nodes(fw, path, &[]).await?;
    if members.iter().any(|m| m.name == DOUBLE_BARRIER_READY) || members.iter().all(|m| m.session_id != 0) {
        let (ready, members): (Vec<_>, Vec<_>) = members.into_iter().partition(|m| m.name == DOUBLE_BARRIER_READY);
        let value = Some(if ready.is_empty() { "not ready" } else { "ready" }.to_string());
        return Ok(Inspection { holders: members, value, ..empty(RecipeKind::DoubleBarrier) });
    }
    Ok(empty(RecipeKind::Unknown))
}

/// A node's data as `fw` reads it where it can — decompressed on a compressing handle (a
/// recipe's data as Curator 5.8's `enableCompression()` and a compressing framework of ours
/// store it) — else as stored: a plain node (a parent, a marker, this crate's own recipes'
/// nodes, data another program wrote) is shown as it is, not refused.
fn shown(fw: &Framework, path: &str, stored: Vec<u8>) -> Vec<u8> {
    if !fw.compression_enabled() || stored.is_empty() {
        return stored;
    }
    fw.decode(path, stored.clone()).unwrap_or(stored)
}

/// A count-down latch: its data names generation G and `gen-<G>` is among its children. The
/// participants that counted down in G hold; the value says how many of how many.
async fn countdown_latch(fw: &Framework, path: &str, data: &[u8], children: &[String]) -> Result<Option<Inspection>> {
    let Ok(generation) = latch::decode(path, data) else { return Ok(None) };
    if !children.iter().any(|c| latch::generation_of(c) == Some(generation)) {
        return Ok(None);
    }
    let dir = latch::generation_dir(path, generation);
    let Some((count, _)) = fw.get_data_plain(&dir).await.if_exists()? else { return Ok(None) };
    let Ok(count) = latch::decode(&dir, &count) else { return Ok(None) };
    let counted = nodes(fw, &dir, &[]).await?;
    let state = if counted.len() as u64 >= count { "open" } else { "closed" };
    let value = Some(format!("generation {generation}: {} of {count} counted down, {state}", counted.len()));
    Ok(Some(Inspection { holders: counted, value, ..empty_of(RecipeKind::CountDownLatch) }))
}

/// A queue: its items in name order (the order a FIFO, priority or simple queue takes them),
/// the first [`QUEUE_ITEMS_SHOWN`] with their data, and how many there are.
async fn queue(fw: &Framework, path: &str, count: usize) -> Result<Inspection> {
    let mut items = nodes_limited(fw, path, &[], Some(QUEUE_ITEMS_SHOWN), |c| {
        c.starts_with(QUEUE_ITEM_NAME) || c.starts_with(SIMPLE_QUEUE_ITEM_NAME)
    })
    .await?;
    items.truncate(QUEUE_ITEMS_SHOWN);
    let shown = if count > items.len() { format!(" (the first {} shown)", items.len()) } else { String::new() };
    let value = Some(format!("{count} item{}{shown}", if count == 1 { "" } else { "s" }));
    Ok(Inspection { waiters: items, value, ..empty_of(RecipeKind::Queue) })
}

fn empty_of(kind: RecipeKind) -> Inspection {
    Inspection { kind, holders: Vec::new(), waiters: Vec::new(), foreign: Vec::new(), value: None }
}

fn split_at(mut all: Vec<NodeInfo>, at: usize) -> (Vec<NodeInfo>, Vec<NodeInfo>) {
    let waiters = all.split_off(at.min(all.len()));
    (all, waiters)
}

/// The children of `dir` (none when it is missing), sorted as the recipe named `names` sorts
/// them (by name without `names`), with their stats and data; children deleted meanwhile are
/// left out.
pub(crate) async fn nodes(fw: &Framework, dir: &str, names: &[&str]) -> Result<Vec<NodeInfo>> {
    nodes_limited(fw, dir, names, None, |_| true).await
}

/// The contenders among the children of `dir` for the recipe named `names`, in queue order,
/// and its foreign children (see `locks::driver::is_contender`), with their stats and data. Also the
/// leader recipes' participants.
pub(crate) async fn contenders(
    fw: &Framework,
    dir: &str,
    names: &[&'static str],
) -> Result<(Vec<NodeInfo>, Vec<NodeInfo>)> {
    let all = nodes(fw, dir, names).await?;
    Ok(all.into_iter().partition(|n| is_contender(&n.name, names)))
}

/// [`nodes`] of the children that `keep`, at most `limit` of them (the first in order).
async fn nodes_limited(
    fw: &Framework,
    dir: &str,
    names: &[&str],
    limit: Option<usize>,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<NodeInfo>> {
    let mut children = fw.children_or_empty(dir).await?;
    children.retain(|c| keep(c));
    sort_children(&mut children, names);
    children.truncate(limit.unwrap_or(usize::MAX));
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    let mut out = Vec::with_capacity(children.len());
    for name in children {
        let node = paths::join(dir, &name);
        let Some((data, stat)) = fw.get_data_plain(&node).await.if_exists()? else { continue };
        let data = shown(fw, &node, data);
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
