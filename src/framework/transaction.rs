//! Transactions through the framework: check / create / set / delete in one `multi`, under the
//! namespace, through the retry loop, applied exactly once even when the reply is lost.
//!
//! Every transaction also creates a marker node, `<root>/<uuid>` under the namespace (`<root>`:
//! [`FrameworkBuilder::transaction_marker_root`](super::FrameworkBuilder::transaction_marker_root),
//! `/zk-recipes-txn` by default), in the same `multi`. When a commit's reply is lost (the
//! connection broke after sending), the next attempt first looks for the marker: there, the
//! transaction was applied and is not sent again; absent, it was not (a `multi` is all or
//! nothing) and is sent again. The marker is deleted in the background once the outcome is
//! known. Their parent is persistent (one empty node per namespace once transactions were
//! used): a container would be reaped between transactions and cost every commit a round trip
//! to make it again. [`Transaction::without_marker`] commits without one (at most once: a lost
//! reply is [`Error::OutcomeUnknown`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::framework::Stat;
use crate::ZooKeeperError;
use futures_util::future::try_join_all;

use super::api::{validate_ttl_create, TTL_UNSUPPORTED};
use super::paths::{self, validate_path};
use super::request::{Conn, MultiError, WriteAnswer, WriteOp};
use super::session::Framework;
use super::state::LossReason;
use super::CreateMode;
use crate::error::{Error, Result};

/// How often a commit is tried again because the markers' parent was missing.
const MARKER_PARENT_TRIES: usize = 3;

/// One operation of a [`Transaction`].
#[derive(Debug, Clone)]
enum Op {
    Check { path: String, version: i32 },
    Create { path: String, data: Vec<u8>, mode: CreateMode, ttl: Option<Duration> },
    SetData { path: String, data: Vec<u8>, version: Option<i32> },
    Delete { path: String, version: Option<i32> },
}

impl Op {
    fn path(&self) -> &str {
        match self {
            Op::Check { path, .. } | Op::Create { path, .. } | Op::SetData { path, .. } | Op::Delete { path, .. } => {
                path
            }
        }
    }
}

/// What one operation of a committed [`Transaction`] gave, in the order the operations were
/// added.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::ops::TxnResult;
/// use zk_recipes::CreateMode;
///
/// let results = fw
///     .transaction()
///     .create("/orders/order-", b"{}", CreateMode::PersistentSequential)
///     .set_data("/orders", b"1 order", None)
///     .commit()
///     .await?;
/// if let TxnResult::Create { path, .. } = &results[0] {
///     println!("created {path}");
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnResult {
    /// A version check passed.
    Check,
    /// A node was created.
    Create {
        /// Its path, relative to the namespace (with the sequence for a sequential mode).
        path: String,
        /// Its stat. After a lost reply: the node's stat as read then (`None` when it was
        /// deleted again meanwhile).
        stat: Option<Stat>,
    },
    /// A node's data was set.
    SetData {
        /// The node's new stat. After a lost reply: the node's stat as read then (later
        /// writes included; `None` when it was deleted meanwhile).
        stat: Option<Stat>,
    },
    /// A node was deleted.
    Delete,
}

/// Several writes applied together or not at all (ZooKeeper's `multi`), from
/// [`Framework::transaction`].
///
/// Paths are relative to the framework's namespace; versions are the `version` of the node's
/// stat (`None`: any version). The commit goes through the framework's retry loop and is
/// applied exactly once: a commit whose reply was lost is recognised by its marker node (see
/// the module docs) and not applied again.
///
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::CreateMode;
/// let (_, from) = fw.get_data("/accounts/a").await?;
/// let results = fw
///     .transaction()
///     .set_data("/accounts/a", b"90", Some(from.version))
///     .create("/accounts/log/entry-", b"a->b 10", CreateMode::PersistentSequential)
///     .commit()
///     .await?;
/// println!("{results:?}");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a transaction does nothing until committed"]
pub struct Transaction<'a> {
    fw: &'a Framework,
    ops: Vec<Op>,
    /// The holds the commit depends on (see [`Transaction::while_held`]).
    holds: Vec<Held>,
    /// Whether the commit writes a marker (exactly once across a lost reply).
    marker: bool,
    /// Whether creates and writes compress their data (the handle's compression).
    compress: bool,
}

/// A hold the transaction commits only while it is held: its node exists (see
/// `Transaction::while_held`), and whether the hold was known lost when it was added.
#[derive(Debug, Clone)]
struct Held {
    path: String,
    lost: Option<LossReason>,
    /// The `multi` deletes the node instead of checking it (the hold ends with the commit).
    release: bool,
}

impl Framework {
    /// A new, empty transaction on this framework; add operations, then
    /// [`commit`](Transaction::commit).
    pub fn transaction(&self) -> Transaction<'_> {
        Transaction { fw: self, ops: Vec::new(), holds: Vec::new(), marker: true, compress: self.compression_enabled() }
    }
}

impl Transaction<'_> {
    /// Creates and writes keep their data as given, whatever the handle's compression: for
    /// the recipes whose data is not compressed.
    pub(crate) fn plain(mut self) -> Self {
        self.compress = false;
        self
    }

    /// Adds a check that `path` exists with this `version`; the transaction fails otherwise.
    pub fn check(mut self, path: &str, version: i32) -> Self {
        self.ops.push(Op::Check { path: path.to_string(), version });
        self
    }

    /// Adds the creation of `path` with `data` in `mode` (with the framework's ACL). The parent
    /// must exist (a `multi` cannot create it first).
    pub fn create(mut self, path: &str, data: &[u8], mode: CreateMode) -> Self {
        self.ops.push(Op::Create { path: path.to_string(), data: data.to_vec(), mode, ttl: None });
        self
    }

    /// Adds the creation of a persistent (or persistent sequential) node that the server
    /// deletes once it has had no children and no change for `ttl` (needs
    /// `zookeeper.extendedTypesEnabled` on the server). A `ttl` under 1 ms (zero included) or
    /// beyond ZooKeeper's largest, 2^40 − 1 ms (`Duration::MAX` included), is refused by
    /// [`commit`](Self::commit).
    pub fn create_with_ttl(mut self, path: &str, data: &[u8], mode: CreateMode, ttl: Duration) -> Self {
        self.ops.push(Op::Create { path: path.to_string(), data: data.to_vec(), mode, ttl: Some(ttl) });
        self
    }

    /// Adds setting the data of `path`, if its version is `version` (`None`: any).
    pub fn set_data(mut self, path: &str, data: &[u8], version: Option<i32>) -> Self {
        self.ops.push(Op::SetData { path: path.to_string(), data: data.to_vec(), version });
        self
    }

    /// Adds the deletion of `path`, if its version is `version` (`None`: any).
    pub fn delete(mut self, path: &str, version: Option<i32>) -> Self {
        self.ops.push(Op::Delete { path: path.to_string(), version });
        self
    }

    /// Makes the transaction commit only while the node at `path` exists (a hold's own node,
    /// known `lost` or not): the recipes' `while_held` adds their node here.
    pub(crate) fn check_hold(mut self, path: &str, lost: Option<LossReason>) -> Self {
        self.holds.push(Held { path: path.to_string(), lost, release: false });
        self
    }

    /// [`check_hold`](Self::check_hold), and the `multi` deletes the node: the hold ends with
    /// the commit (`LockGuard::commit_and_release`).
    pub(crate) fn release_hold(mut self, path: &str, lost: Option<LossReason>) -> Self {
        self.holds.push(Held { path: path.to_string(), lost, release: true });
        self
    }

    /// Commits without a marker node: one write less per commit (no marker created in the
    /// `multi`, none deleted after), for a caller that does not need the commit applied
    /// exactly once across a lost reply.
    ///
    /// Then the commit is sent at most once: when its reply is lost (the connection broke
    /// after the request was sent) the outcome cannot be told, and
    /// [`commit`](Self::commit) returns [`Error::OutcomeUnknown`] (naming the first
    /// operation's path) at once instead of sending it again — it may or may not have been
    /// applied; read the nodes and decide. A request that was never sent (no connection yet)
    /// is still retried by the retry policy. Everything else is as with a marker.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::Error;
    /// let stat = fw.exists("/config").await?.expect("there");
    /// match fw.transaction().set_data("/config", b"v2", Some(stat.version)).without_marker().commit().await {
    ///     Ok(_) => {}
    ///     Err(Error::OutcomeUnknown { .. }) => { /* read /config again and decide */ }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    #[doc(alias = "at_most_once")]
    pub fn without_marker(mut self) -> Self {
        self.marker = false;
        self
    }

    /// How many operations were added.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether no operation was added.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Applies every operation, or none: one result per operation, in order.
    ///
    /// # Errors
    /// * [`Error::InvalidArgument`] for an empty transaction, a TTL under 1 ms or beyond
    ///   2^40 − 1 ms, or a TTL on a mode that is not persistent; [`Error::InvalidPath`] for a bad path (nothing is sent).
    /// * [`Error::Transaction`] when an operation was refused (a failed check, `BadVersion`,
    ///   `NodeExists`, `NoNode`...): `index` names it; nothing was applied.
    /// * [`Error::ServerUnsupported`] when the server refuses TTL nodes.
    /// * [`Error::LockLost`] when a hold the transaction depends on (`while_held`) is
    ///   lost, or its node is gone at commit: nothing was applied.
    /// * The errors of the retry loop ([`Error::RetriesExhausted`], [`Error::Closed`]...).
    ///   When the retries run out after a lost reply before the marker could be read,
    ///   [`Error::OutcomeUnknown`]: the transaction may or may not have been applied.
    /// * Without a marker ([`without_marker`](Self::without_marker)): [`Error::OutcomeUnknown`]
    ///   at once when the reply was lost.
    /// * On a [`compressed`](Framework::compressed) handle, the provider's error when it cannot
    ///   compress a create's or a write's data (nothing is sent).
    ///
    /// # Cancel safety
    /// Not cancel safe: a commit already sent is applied or not whatever happens to the future
    /// (its marker is then left behind until the framework deletes markers again).
    pub async fn commit(self) -> Result<Vec<TxnResult>> {
        use tracing::Instrument;
        // (the fields are evaluated only when a subscriber wants the span)
        let first = self.ops.first().map_or("", |op| op.path());
        let span = tracing::debug_span!("transaction", ops = self.ops.len(), path = %first, holds = self.holds.len());
        let outcome = self.commit_in_span().instrument(span.clone()).await;
        if let Err(error) = &outcome {
            span.in_scope(|| tracing::debug!(%error, "transaction not applied (or in doubt)"));
        }
        outcome
    }

    /// [`commit`](Self::commit), inside its span.
    async fn commit_in_span(mut self) -> Result<Vec<TxnResult>> {
        if self.ops.is_empty() {
            return Err(Error::invalid("ops", "an empty transaction"));
        }
        for op in &self.ops {
            validate_path(op.path())?;
            if let Op::Create { path, ttl: Some(ttl), mode, .. } = op {
                validate_ttl_create(path, *mode, *ttl)?;
            }
        }
        if self.compress {
            for op in &mut self.ops {
                if let Op::Create { path, data, .. } | Op::SetData { path, data, .. } = op {
                    *data = self.fw.encode(path, data)?.into_owned();
                }
            }
        }
        if let Some(held) = self.holds.iter().find(|h| h.lost.is_some()) {
            let reason = held.lost.unwrap_or(LossReason::NodeDeleted);
            return Err(Error::LockLost { path: held.path.clone(), reason });
        }
        let fw = self.fw;
        let root = &fw.inner.cfg.txn_markers;
        let marker = self.marker.then(|| paths::join(root, &uuid::Uuid::new_v4().simple().to_string()));
        let in_doubt = AtomicBool::new(false);
        // what a commit whose outcome is unknown names
        let first = self.ops.first().map_or("", |op| op.path());
        let mut tries = 0;
        let outcome = loop {
            let marker = marker.as_deref();
            let attempt = fw
                .request_write("transaction", first, |conn| attempt(conn, &self.holds, &self.ops, marker, &in_doubt))
                .await;
            match attempt.and_then(|refused| refused) {
                Err(Error::ZooKeeper(ZooKeeperError::NoNode)) if marker.is_some() && tries < MARKER_PARENT_TRIES => {
                    // the markers' parent is missing (first use in this namespace)
                    tries += 1;
                    fw.request("create", root, |conn| async move {
                        match conn.multi(&[WriteOp::CreateShared { path: root }]).await {
                            Err(MultiError::Refused { error: ZooKeeperError::NoNode, .. }) => {
                                conn.make_parents(paths::parent(root)).await?;
                                Ok(())
                            }
                            Ok(_) | Err(MultiError::Refused { error: ZooKeeperError::NodeExists, .. }) => Ok(()),
                            Err(MultiError::Refused { error, .. }) => Err(Error::ZooKeeper(error)),
                            Err(MultiError::Request(e)) => Err(e),
                        }
                    })
                    .await?;
                }
                other => break other,
            }
        };
        let unknown = || Error::OutcomeUnknown { path: self.ops[0].path().to_string() };
        match (outcome, marker) {
            (Ok(results), Some(marker)) => {
                fw.delete_in_background(marker, None);
                Ok(results)
            }
            // in doubt: a lost reply, or a commit sent and not answered by the deadline (a
            // stalled server may still apply it): its marker must not stay behind
            (Err(e), Some(marker)) if in_doubt.load(Ordering::SeqCst) || matches!(e, Error::OutcomeUnknown { .. }) => {
                fw.delete_in_background(marker, None);
                Err(unknown())
            }
            (Err(_), None) if in_doubt.load(Ordering::SeqCst) => Err(unknown()),
            (outcome, _) => outcome,
        }
    }
}

/// One attempt: after a lost reply, the marker decides; else the `multi` is sent. The
/// markers' parent missing comes back as `NoNode` for [`Transaction::commit`] to make.
/// Without a marker, a lost reply ends the commit (`in_doubt` set, an error returned that
/// the retry loop does not retry).
async fn attempt(
    conn: Conn,
    holds: &[Held],
    ops: &[Op],
    marker: Option<&str>,
    in_doubt: &AtomicBool,
) -> Result<Result<Vec<TxnResult>>> {
    if let (true, Some(marker)) = (in_doubt.load(Ordering::SeqCst), marker) {
        conn.caught_up(marker).await?;
        if let Some(applied) = conn.exists(marker).await? {
            return Ok(Ok(recovered(&conn, ops, applied.czxid).await?));
        }
        in_doubt.store(false, Ordering::SeqCst);
    }
    let mut writes = Vec::with_capacity(holds.len() + ops.len() + 1);
    writes.extend(holds.iter().map(|held| match held.release {
        true => WriteOp::Delete { path: &held.path, version: None },
        false => WriteOp::Check { path: &held.path, version: -1 },
    }));
    writes.extend(ops.iter().map(|op| match op {
        Op::Check { path, version } => WriteOp::Check { path, version: *version },
        Op::Create { path, data, mode, ttl } => WriteOp::Create { path, data, mode: *mode, ttl: *ttl },
        Op::SetData { path, data, version } => WriteOp::SetData { path, data, version: *version },
        Op::Delete { path, version } => WriteOp::Delete { path, version: *version },
    }));
    writes.extend(marker.map(|path| WriteOp::CreateShared { path }));
    match conn.multi(&writes).await {
        Ok(results) => {
            Ok(Ok(ops.iter().zip(results.into_iter().skip(holds.len())).map(|(op, r)| answered(op, r)).collect()))
        }
        Err(MultiError::Request(e)) => {
            if e.is_retryable() {
                in_doubt.store(true, Ordering::SeqCst);
                if marker.is_none() {
                    // at most once: not sent again
                    let path = ops.first().map_or("/", Op::path).to_string();
                    return Ok(Err(Error::OutcomeUnknown { path }));
                }
            }
            Err(e)
        }
        Err(MultiError::Refused { index, error }) if index < holds.len() => {
            let path = holds[index].path.clone();
            Ok(Err(match error {
                ZooKeeperError::NoNode => Error::LockLost { path, reason: LossReason::NodeDeleted },
                error => Error::ZooKeeper(error),
            }))
        }
        // the markers' parent missing: `NoNode` for the commit to make it
        Err(MultiError::Refused { index, error }) if marker.is_some() && index == holds.len() + ops.len() => {
            Err(Error::ZooKeeper(error))
        }
        Err(MultiError::Refused { index, error }) => {
            let index = index - holds.len();
            Ok(Err(refused(&ops[index], index, error)))
        }
    }
}

fn refused(op: &Op, index: usize, source: ZooKeeperError) -> Error {
    match (op, source) {
        (Op::Create { ttl: Some(_), .. }, ZooKeeperError::Unimplemented) => TTL_UNSUPPORTED,
        (op, source) => Error::Transaction { index, path: op.path().to_string(), source },
    }
}

fn answered(op: &Op, result: WriteAnswer) -> TxnResult {
    match (op, result) {
        (Op::Create { .. }, WriteAnswer::Created(node)) => TxnResult::Create { path: node.path, stat: Some(node.stat) },
        (Op::SetData { .. }, WriteAnswer::Set(stat)) => TxnResult::SetData { stat: Some(stat) },
        (Op::Delete { .. }, _) => TxnResult::Delete,
        (Op::Check { .. }, _) => TxnResult::Check,
        // the server answers each operation with its own kind
        (Op::Create { path, .. }, _) => TxnResult::Create { path: path.clone(), stat: None },
        (Op::SetData { .. }, _) => TxnResult::SetData { stat: None },
    }
}

/// The results of a transaction applied in the commit whose reply was lost (`zxid`: the
/// marker's `czxid`, every node the commit created has it): nodes are read again; a
/// sequential node is found among its parent's children by that `czxid`.
async fn recovered(conn: &Conn, ops: &[Op], zxid: i64) -> Result<Vec<TxnResult>> {
    try_join_all(ops.iter().map(|op| async move {
        Ok(match op {
            Op::Check { .. } => TxnResult::Check,
            Op::Delete { .. } => TxnResult::Delete,
            Op::SetData { path, .. } => TxnResult::SetData { stat: conn.exists(path).await? },
            Op::Create { path, mode: CreateMode::PersistentSequential | CreateMode::EphemeralSequential, .. } => {
                let (parent, name) = (paths::parent(path), paths::node_name(path));
                let candidates: Vec<String> = conn
                    .children(parent)
                    .await?
                    .into_iter()
                    .filter(|child| child.starts_with(name))
                    .map(|child| paths::join(parent, &child))
                    .collect();
                // the candidates' stats, read with pipelined requests
                let stats = try_join_all(candidates.iter().map(|child| conn.exists(child))).await?;
                candidates
                    .into_iter()
                    .zip(stats)
                    .find_map(|(child, stat)| stat.filter(|s| s.czxid == zxid).map(|s| (child, s)))
                    .map_or(TxnResult::Create { path: path.clone(), stat: None }, |(child, stat)| TxnResult::Create {
                        path: child,
                        stat: Some(stat),
                    })
            }
            Op::Create { path, .. } => TxnResult::Create { path: path.clone(), stat: conn.exists(path).await? },
        })
    }))
    .await
}
