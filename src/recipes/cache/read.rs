//! Reading a cache's nodes from the server: one node, or the whole covered subtree.
//!
//! The subtree is walked breadth-first with many requests in flight. A node is listed only
//! when its stat counts children (most nodes of a tree are leaves), and the reads go in
//! `multiRead` batches where the server has them, so a load costs about one request per
//! hundred leaves instead of two per node. Whatever changes after a node was read is
//! reported by the watch that was set before the walk began.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::join_all;
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::node::CachedNode;
use super::scope::Scope;
use crate::error::{Error, Result};
use crate::framework::paths::join;
use crate::framework::{Conn, Framework, ReadOp, ReadResult, Stat};
use crate::ZooKeeperError;

/// Operations in flight at most during a walk: enough to keep the connection busy, not so
/// many that the server queues much.
const IN_FLIGHT: usize = 2048;
/// Operations in one `multiRead` at most.
const MAX_BATCH: usize = 128;
/// About how many bytes of node data one `multiRead` answer should carry at most: batches
/// shrink when the nodes read so far are big.
const BATCH_BYTES: usize = 256 * 1024;

type Read<'a> = Pin<Box<dyn Future<Output = Result<Option<CachedNode>>> + Send + 'a>>;

/// Sends the read of one node now (requests go out in the order they are made) and returns
/// its answer to await: `None` when the node does not exist.
pub(crate) fn read_node<'a>(conn: &'a Conn, path: &str, with_data: bool) -> Read<'a> {
    let owned = path.to_string();
    if with_data {
        let reading = conn.get_data(path);
        Box::pin(async move {
            Ok(readable(reading.await, &owned)?.map(|(data, stat)| CachedNode { path: owned, data: Some(data), stat }))
        })
    } else {
        let reading = conn.exists(path);
        Box::pin(async move { Ok(reading.await?.map(|stat| CachedNode { path: owned, data: None, stat })) })
    }
}

/// `NoNode` (gone meanwhile: its event follows) and `NoAuth` (not ours to read: left out,
/// logged) as `None`.
fn readable<T>(result: Result<T>, path: &str) -> Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(None),
        Err(Error::ZooKeeper(ZooKeeperError::NoAuth)) => {
            tracing::warn!(%path, "cache: no permission to read the node; left out");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The error of an answer the walk cannot take (of the wrong kind, or too few).
fn unexpected(what: String) -> Error {
    Error::ZooKeeper(ZooKeeperError::Other(what))
}

/// Reads whole subtrees for one cache, and remembers whether the server takes `multiRead`.
#[derive(Debug)]
pub(crate) struct TreeReader {
    batched: AtomicBool,
}

impl TreeReader {
    /// A reader that batches its reads with `multiRead` when `batched` (servers with
    /// persistent watches have it: both came with 3.6) and the server does not refuse it.
    pub fn new(batched: bool) -> Self {
        Self { batched: AtomicBool::new(batched) }
    }

    /// Every covered node that exists, read through the framework's retry loop (a retry
    /// reads everything again on the new connection). A server that refuses `multiRead` is
    /// read one request per operation from then on.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn read(&self, fw: &Framework, scope: &Scope) -> Result<BTreeMap<String, CachedNode>> {
        fw.request("read_tree", &scope.root, |conn| async move {
            let batched = self.batched.load(Ordering::Relaxed);
            match walk(&conn, scope, batched).await {
                Err(Error::ZooKeeper(ZooKeeperError::Unimplemented)) if batched => {
                    tracing::warn!(path = %scope.root, "cache: the server refuses multiRead; reading node by node");
                    self.batched.store(false, Ordering::Relaxed);
                    walk(&conn, scope, false).await
                }
                other => other,
            }
        })
        .await
    }
}

/// One read the walk asks for: a node's data and stat, or its children's names.
#[derive(Debug)]
enum Op {
    Node { path: String, depth: usize },
    Children { path: String, depth: usize },
}

/// An operation's answer (`None`: the node is gone, or not ours to read).
enum Answer {
    Node(Option<(Option<Vec<u8>>, Stat)>),
    Children(Option<Vec<String>>),
}

/// The state of a breadth-first walk: what is still to read, what was found.
struct Walk<'a> {
    scope: &'a Scope,
    /// Listings go first: they make more work.
    listings: VecDeque<Op>,
    nodes: VecDeque<Op>,
    found: BTreeMap<String, CachedNode>,
    data_bytes: usize,
    nodes_read: usize,
}

impl<'a> Walk<'a> {
    fn new(scope: &'a Scope) -> Self {
        let root = Op::Node { path: scope.root.clone(), depth: 0 };
        Self {
            scope,
            listings: VecDeque::new(),
            nodes: VecDeque::from([root]),
            found: BTreeMap::new(),
            data_bytes: 0,
            nodes_read: 0,
        }
    }

    fn next(&mut self) -> Option<Op> {
        self.listings.pop_front().or_else(|| self.nodes.pop_front())
    }

    fn is_done(&self) -> bool {
        self.listings.is_empty() && self.nodes.is_empty()
    }

    /// How many operations the next batch takes: fewer when the nodes are big.
    fn batch_size(&self) -> usize {
        let average = self.data_bytes.checked_div(self.nodes_read).unwrap_or(1024).max(1);
        (BATCH_BYTES / average).clamp(1, MAX_BATCH)
    }

    fn take(&mut self, op: Op, answer: Answer) -> Result<()> {
        match (op, answer) {
            (Op::Node { path, depth }, Answer::Node(Some((data, stat)))) => {
                self.nodes_read += 1;
                self.data_bytes += data.as_ref().map_or(0, Vec::len);
                let data = if self.scope.with_data { data } else { None };
                // a child created after this read is reported by the watch
                if stat.num_children > 0 && self.scope.descends(depth) {
                    self.listings.push_back(Op::Children { path: path.clone(), depth });
                }
                self.found.insert(path.clone(), CachedNode { path, data, stat });
            }
            (Op::Children { path, depth }, Answer::Children(Some(names))) => {
                for name in names {
                    let child = join(&path, &name);
                    if self.scope.accepts_child(&child) {
                        self.nodes.push_back(Op::Node { path: child, depth: depth + 1 });
                    }
                }
            }
            // gone meanwhile (its deletion comes as an event), or not ours to read
            (_, Answer::Node(None) | Answer::Children(None)) => {}
            (op, _) => {
                tracing::error!(?op, path = %self.scope.root, "cache: an answer of the wrong kind");
                return Err(unexpected("multiRead answered with the wrong kind".into()));
            }
        }
        Ok(())
    }
}

type Batch<'a> = Pin<Box<dyn Future<Output = Result<Vec<(Op, Answer)>>> + Send + 'a>>;

/// Reads the covered subtree with at most [`IN_FLIGHT`] operations in flight, in `multiRead`
/// batches when `batched`, else one request per operation.
async fn walk(conn: &Conn, scope: &Scope, batched: bool) -> Result<BTreeMap<String, CachedNode>> {
    let mut walk = Walk::new(scope);
    let mut pending: FuturesUnordered<Batch<'_>> = FuturesUnordered::new();
    let mut in_flight = 0;
    loop {
        while in_flight < IN_FLIGHT && !walk.is_done() {
            if batched {
                let size = walk.batch_size().min(IN_FLIGHT - in_flight);
                let ops: Vec<Op> = std::iter::from_fn(|| walk.next()).take(size).collect();
                in_flight += ops.len();
                pending.push(send_batch(conn, ops, scope.with_data));
            } else if let Some(op) = walk.next() {
                in_flight += 1;
                pending.push(send_one(conn, op, scope.with_data));
            }
        }
        let Some(answers) = pending.next().await else { break };
        let answers = answers?;
        in_flight -= answers.len();
        for (op, answer) in answers {
            walk.take(op, answer)?;
        }
    }
    Ok(walk.found)
}

/// Sends one operation as its own request.
fn send_one(conn: &Conn, op: Op, with_data: bool) -> Batch<'_> {
    match &op {
        Op::Node { path, .. } => {
            let read = read_node(conn, path, with_data);
            Box::pin(async move {
                let node = read.await?.map(|node| (node.data, node.stat));
                Ok(vec![(op, Answer::Node(node))])
            })
        }
        Op::Children { path, .. } => {
            let listing = conn.children(path);
            Box::pin(async move {
                let names = readable(listing.await, op.path())?;
                Ok(vec![(op, Answer::Children(names))])
            })
        }
    }
}

/// Sends `ops` in one `multiRead`; one request each when together they are over the
/// framework's request-size limit (long paths under a small limit).
fn send_batch(conn: &Conn, ops: Vec<Op>, with_data: bool) -> Batch<'_> {
    let reads: Vec<ReadOp<'_>> = ops.iter().map(Op::read).collect();
    let answers = conn.multi_read(&reads);
    drop(reads);
    Box::pin(async move {
        let answers = match answers.await {
            Err(Error::TooLarge { .. }) if ops.len() > 1 => {
                // nothing was sent: each now, all before any answer is awaited
                let each: Vec<_> = ops.into_iter().map(|op| send_one(conn, op, with_data)).collect();
                return Ok(join_all(each)
                    .await
                    .into_iter()
                    .collect::<Result<Vec<_>>>()?
                    .into_iter()
                    .flatten()
                    .collect());
            }
            answers => answers?,
        };
        if answers.len() != ops.len() {
            return Err(unexpected(format!("multiRead: {} answers to {} reads", answers.len(), ops.len())));
        }
        ops.into_iter()
            .zip(answers)
            .map(|(op, answer)| {
                let answer = match answer {
                    ReadResult::Data(data, stat) => Answer::Node(Some((Some(data), stat))),
                    ReadResult::Children(children) => Answer::Children(Some(children)),
                    ReadResult::Failed(err) => match (&op, readable::<()>(Err(Error::ZooKeeper(err)), op.path())?) {
                        (Op::Node { .. }, _) => Answer::Node(None),
                        (Op::Children { .. }, _) => Answer::Children(None),
                    },
                };
                Ok((op, answer))
            })
            .collect()
    })
}

impl Op {
    fn path(&self) -> &str {
        match self {
            Op::Node { path, .. } | Op::Children { path, .. } => path,
        }
    }

    /// The operation in a `multiRead`.
    fn read(&self) -> ReadOp<'_> {
        match self {
            Op::Node { path, .. } => ReadOp::Data(path),
            Op::Children { path, .. } => ReadOp::Children(path),
        }
    }
}
