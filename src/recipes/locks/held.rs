//! A hold: our node once it holds — what every guard, lease and leadership shares
//! ([`HeldNode`]: its fencing token and the loss signal) — and the guard of the mutex and both
//! sides of the read-write lock, [`LockGuard`], with explicit re-entry through it.
//!
//! No task or thread identity decides who holds: a tokio task is not sequential (`join!`,
//! `select!`) and guards move between tasks. Every `acquire()` is a hold of its own (its own
//! node, its own place in the queue); re-entering goes through a guard one already holds
//! ([`LockGuard::reenter`]), so possession of the guard is the proof.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::framework::Stat;
use crate::ZooKeeperError;
use tokio::sync::watch;

use super::order::{Listed, Read};
use super::session::Mark;
use crate::error::{Error, Result};
use crate::framework::wait::{Wake, WatchSet};
use crate::framework::{paths, Framework, LossReason, OneShotWatch, SessionStatus, Transaction, TxnResult, WatchEvent};
use crate::observe::{self, Holding, Kind, PathLabel};
use crate::sync::lock;

/// Our node, once it holds.
#[derive(Debug)]
pub(crate) struct Acquired {
    /// Full path of our node.
    pub path: String,
    /// Its stat at creation (`czxid` is the fencing token).
    pub stat: Stat,
    /// The framework's status when we started holding.
    pub status: SessionStatus,
    /// Our node marked as held alone at the head, for local waiters (see `session.rs`), while
    /// the hold lives.
    pub mark: Option<Arc<Mark>>,
    /// The listing that decided we hold (`None`: we hold because every node we watched was
    /// deleted, without a listing since), and the read behind it (the driver's `list`).
    pub listed: Option<Listed>,
    /// Whether we waited for anyone (false: we held at our first listing).
    pub waited: bool,
    /// Our node's time to live when it is a server-TTL node.
    pub ttl: Option<Duration>,
    /// What contended (the driver's `kind`).
    pub kind: Kind,
    /// The watch on our node, when the engine set it while we waited.
    pub own: Option<NodeWatch>,
}

/// A watch on our node and its data as the watch was set: what a hold's watch starts from,
/// when the engine set it with a waiter's first watches (no request of the hold's own).
#[derive(Debug)]
pub(crate) struct NodeWatch {
    pub data: Vec<u8>,
    pub watch: OneShotWatch,
}

impl Acquired {
    /// A node held without contending (a queue item's lock, a downgrade's read node), created
    /// at `path` with `stat` while the framework's status was `status`.
    pub(crate) fn created(path: String, stat: Stat, status: SessionStatus, kind: Kind) -> Self {
        Acquired { path, stat, status, mark: None, listed: None, waited: false, ttl: None, kind, own: None }
    }

    /// The read behind the listing that made us the holder (the driver's `list`): `None` when no
    /// listing did (the caller reads the node itself).
    pub(crate) fn read(&mut self) -> Option<Read> {
        self.listed.as_mut().and_then(|listed| listed.read.take())
    }
}

/// Curator's revocation request: these bytes as the holder's node data.
pub(crate) const REVOKE_MESSAGE: &[u8] = crate::recipes::layout::REVOKE_MESSAGE;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Watched {
    lost: Option<LossReason>,
    revoke_requested: bool,
}

/// A node we hold: what every guard and lease exposes (they deref to it; a leadership is a
/// [`Leadership`](crate::Leadership), with the same token and loss signal).
///
/// # The loss signal
/// [`lost`](Self::lost) resolves when the hold can no longer be trusted: the connection was
/// suspended (under the standard [`ErrorPolicy`](crate::ErrorPolicy)), the session was lost,
/// our node was deleted by someone else, or the framework closed. Stop touching the protected
/// resource then. [`is_lost`](Self::is_lost) answers at once, without a round trip, and as
/// exactly as [`lost`](Self::lost): it knows session-level losses immediately and a deletion of
/// our node as soon as the server tells of it (the node is watched from the moment it is held,
/// by a task that sends one `getData` with a watch: a request off the acquire's path; a release
/// of ours is not reported as a loss).
///
/// # Fencing
/// [`fencing_token`](Self::fencing_token) is our node's creation zxid (`czxid`): it strictly
/// increases across all holders of a path over time, also when the container parent was
/// reaped and sequence numbers restarted. Hand it to the store you write to, and let the store
/// reject writes with a token lower than the highest it has seen.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessMutex;
///
/// let guard = InterProcessMutex::new(&fw, "/locks/ledger")?.acquire().await?;
/// // every guard and lease derefs to HeldNode
/// println!("holding {} (token {}, session {:#x})", guard.path(), guard.fencing_token(), guard.session_id());
/// tokio::select! {
///     reason = guard.lost() => eprintln!("stop: {reason}"),
///     _ = write_ledger(guard.fencing_token()) => {}
/// }
/// assert!(!guard.is_lost() || guard.loss().is_some());
/// # async fn write_ledger(_: i64) {}
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct HeldNode {
    fw: Framework,
    path: String,
    stat: Stat,
    baseline: SessionStatus,
    watched: Mutex<Option<watch::Receiver<Watched>>>,
    /// Set when a time-bounded hold over this node ran out (see `locks::timed_hold`).
    expired: watch::Sender<bool>,
    /// Tells local waiters behind us that we held alone (`session.rs`'s hand-off).
    _mark: Option<Arc<Mark>>,
    /// Our node's time to live when it is a TTL node (a server TTL).
    ttl: Option<Duration>,
    /// Tells of the loss once, in the logs and the metrics (shared with the monitor).
    report: Arc<LossReport>,
    /// Counted among the holders while it lives (feature `metrics`).
    _holding: Holding,
}

impl HeldNode {
    /// A hold of `acquired`'s node, watched from now on: every public hold
    /// ([`is_lost`](Self::is_lost) is exact).
    pub(crate) fn new(fw: &Framework, mut acquired: Acquired) -> Self {
        let own = acquired.own.take();
        let held = Self::unwatched(fw, acquired);
        held.watch_from(own);
        held
    }

    /// A hold of `acquired`'s node whose node is not watched: an internal hold whose node a
    /// transaction of ours deletes (an atomic value's turn, a queue item's lock).
    pub(crate) fn unwatched(fw: &Framework, acquired: Acquired) -> Self {
        let path_label = fw.path_label(paths::parent(&acquired.path));
        let session = match acquired.ttl {
            Some(_) => acquired.status.session_id,
            None => acquired.stat.ephemeral_owner,
        };
        let span = tracing::debug_span!(
            "hold",
            path = %acquired.path,
            kind = acquired.kind.as_str(),
            token = acquired.stat.czxid,
            session = %observe::session_hex(session),
        );
        span.in_scope(|| tracing::debug!(waited = acquired.waited, "held"));
        let report = Arc::new(LossReport {
            kind: acquired.kind,
            label: path_label.clone(),
            path: acquired.path.clone(),
            token: acquired.stat.czxid,
            session,
            told: AtomicBool::new(false),
            ending: AtomicBool::new(false),
            span,
        });
        HeldNode {
            fw: fw.clone(),
            _holding: Holding::start(acquired.kind, path_label),
            path: acquired.path,
            stat: acquired.stat,
            baseline: acquired.status,
            watched: Mutex::new(None),
            expired: watch::Sender::new(false),
            _mark: acquired.mark,
            ttl: acquired.ttl,
            report,
        }
    }

    /// Our node's full path (relative to the namespace).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The fencing token: our node's creation zxid (see the type's docs).
    pub fn fencing_token(&self) -> i64 {
        self.stat.czxid
    }

    /// The id of the session that owns our node (for a TTL node, which has no ephemeral
    /// owner: the session that created it).
    pub fn session_id(&self) -> i64 {
        match self.ttl {
            Some(_) => self.baseline.session_id,
            None => self.stat.ephemeral_owner,
        }
    }

    /// Our node's time to live when it is a TTL node — a lock taken with a server TTL
    /// ([`InterProcessMutex::with_server_ttl`](crate::InterProcessMutex::with_server_ttl)):
    /// the server deletes it unless it is [`touch`](Self::touch)ed within that time.
    pub fn server_ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// Refreshes our node's modification time: for a TTL node, the server's lease starts
    /// again (a [`TimedHold`](crate::TimedHold) does this on every renewal). Harmless on
    /// an ephemeral node.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the hold is lost (the node reaped included: the hold is then
    /// lost with [`LossReason::Expired`]); the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn touch(&self) -> Result<()> {
        if let Some(reason) = self.loss() {
            return Err(Error::LockLost { path: self.path.clone(), reason });
        }
        match self.fw.touch(&self.path).await {
            Ok(_) => Ok(()),
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => {
                if self.ttl.is_some() {
                    self.expire();
                }
                let reason = self.loss().unwrap_or(LossReason::NodeDeleted);
                Err(Error::LockLost { path: self.path.clone(), reason })
            }
            Err(e) => Err(e),
        }
    }

    fn status_loss(&self, now: &SessionStatus) -> Option<LossReason> {
        now.loss_since(&self.baseline, self.fw.error_policy())
    }

    /// Why the hold is lost, if it is (as far as known without a round trip).
    pub fn loss(&self) -> Option<LossReason> {
        let loss = self.known_loss();
        if let Some(reason) = loss {
            self.report.lost(reason);
        }
        loss
    }

    fn known_loss(&self) -> Option<LossReason> {
        if *self.expired.borrow() {
            return Some(LossReason::Expired);
        }
        let watched = lock(&self.watched).as_ref().and_then(|rx| rx.borrow().lost);
        watched.or_else(|| self.status_loss(&self.fw.status()))
    }

    /// Whether the hold is lost (as far as known without a round trip).
    pub fn is_lost(&self) -> bool {
        self.loss().is_some()
    }

    /// Resolves when the hold can no longer be trusted, with the reason.
    ///
    /// # Cancel safety
    /// Cancel safe; call it again (or from several tasks) at will.
    pub async fn lost(&self) -> LossReason {
        let mut rx = self.watcher();
        let mut expired = self.expired.subscribe();
        let reason = tokio::select! {
            biased;
            Ok(_) = expired.wait_for(|e| *e) => LossReason::Expired,
            lost = rx.wait_for(|w| w.lost.is_some()) => {
                let lost = lost.ok().and_then(|w| w.lost);
                if *self.expired.borrow() { LossReason::Expired } else { lost.unwrap_or(LossReason::Closed) }
            }
        };
        self.report.lost(reason);
        reason
    }

    /// Marks the hold lost because its lease ran out (the caller deletes the node).
    pub(crate) fn expire(&self) {
        self.expired.send_replace(true);
    }

    /// The session status when the hold was taken (what a loss is measured against).
    pub(crate) fn baseline(&self) -> SessionStatus {
        self.baseline
    }

    /// The framework the hold was taken through.
    pub(crate) fn framework(&self) -> &Framework {
        &self.fw
    }

    /// Whether someone asked this holder to release (Curator's revocation protocol: our node's
    /// data set to `__REVOKE__`; known as soon as the node's watch tells).
    pub fn revocation_requested(&self) -> bool {
        lock(&self.watched).as_ref().is_some_and(|rx| rx.borrow().revoke_requested)
    }

    /// Resolves when someone asks us to release (Curator's revocation protocol: our node's
    /// data set to `__REVOKE__`). Asking is not forcing: release when convenient.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn revoked(&self) {
        let mut rx = self.watcher();
        let _ = rx.wait_for(|w| w.revoke_requested).await;
    }

    fn watcher(&self) -> watch::Receiver<Watched> {
        self.watch_from(None)
    }

    /// The receiver of what the monitor learns, starting the monitor if it is not running:
    /// from `first`, a watch on our node set already (by the engine, while we waited), else
    /// with a request of its own.
    fn watch_from(&self, first: Option<NodeWatch>) -> watch::Receiver<Watched> {
        let mut slot = lock(&self.watched);
        if let Some(rx) = slot.as_ref() {
            return rx.clone();
        }
        let (tx, rx) = watch::channel(Watched::default());
        let (report, expired) = (self.report.clone(), self.expired.subscribe());
        let (fw, path, baseline) = (self.fw.clone(), self.path.clone(), self.baseline);
        let monitor = Monitor { fw, path, baseline, tx, report, expired };
        self.fw.runtime().spawn(monitor.run(first));
        *slot = Some(rx.clone());
        rx
    }

    /// Deletes our node (guaranteed: a failure continues in the background).
    ///
    /// Returns [`Error::LockLost`] when the hold had been lost before the release (the node is
    /// cleaned up all the same).
    pub(crate) async fn release(&self) -> Result<()> {
        let loss = self.loss();
        self.ending();
        self.report.span.in_scope(|| tracing::debug!(lost = ?loss, "releasing"));
        self.fw.delete_guaranteed(&self.path).await?;
        match loss {
            Some(reason) => Err(Error::LockLost { path: self.path.clone(), reason }),
            None => Ok(()),
        }
    }

    /// We are about to delete our node (a release, or a transaction that deletes it): its
    /// deletion is ours, not a loss to report.
    pub(crate) fn ending(&self) {
        self.report.ending.store(true, Ordering::SeqCst);
    }

    /// Deletes our node in the background (for `Drop`).
    pub(crate) fn release_in_background(&self) {
        self.ending();
        self.fw.delete_now_in_background(self.path.clone(), Some(self.session_id()));
    }
}

impl Drop for HeldNode {
    fn drop(&mut self) {
        // a loss nobody asked about is told when the hold ends
        if !self.report.told.load(Ordering::Relaxed) {
            self.loss();
        }
    }
}

/// Tells of a hold's loss once: a warning that names the hold in its own fields (path, kind,
/// fencing token, session, reason: an INFO filter, which disables the `DEBUG` hold span, still
/// shows which lock was lost), and the losses counter.
#[derive(Debug)]
struct LossReport {
    kind: Kind,
    label: PathLabel,
    path: String,
    token: i64,
    session: i64,
    told: AtomicBool,
    /// We delete our node (a release): its deletion is no loss.
    ending: AtomicBool,
    /// The `hold` span: from acquired to the drop of the last of the hold and its monitor.
    span: tracing::Span,
}

impl LossReport {
    fn lost(&self, reason: LossReason) {
        if self.told.swap(true, Ordering::Relaxed) {
            return;
        }
        observe::hold_lost(self.kind, &self.label, reason.as_label());
        let (path, kind, token) = (&self.path, self.kind.as_str(), self.token);
        let session = observe::session_hex(self.session);
        self.span.in_scope(|| match reason {
            // the holder's own doing: nothing to warn of
            LossReason::Closed => tracing::debug!(%reason, "hold ended: the framework was closed"),
            _ => tracing::warn!(%path, kind, token, %session, %reason, "hold LOST: stop using what it protects"),
        });
    }
}

/// Watches our node and the session for as long as anyone holds a receiver.
struct Monitor {
    fw: Framework,
    path: String,
    baseline: SessionStatus,
    tx: watch::Sender<Watched>,
    report: Arc<LossReport>,
    /// Whether a timed hold over the node ran out (its deletion is then that).
    expired: watch::Receiver<bool>,
}

impl Monitor {
    /// Until the hold is lost or nobody listens: watch our node (deleted, or asked to revoke)
    /// and the session, with the framework's one wait.
    async fn run(self, mut first: Option<NodeWatch>) {
        loop {
            let seen = self.fw.status();
            if let Some(reason) = self.loss(&seen) {
                return self.lost(reason);
            }
            let watch = match (first.take(), self.fw.conn()) {
                // set while we waited: no request (a change since is waiting in it)
                (Some(NodeWatch { data, watch }), _) => Ok((data, watch)),
                (None, Ok(conn)) => conn.watch_data(&self.path).await.map(|(data, _, watch)| (data, watch)),
                (None, Err(e)) => Err(e),
            };
            let watchers = match watch {
                Ok((data, watcher)) => {
                    if self.is_revoke_message(data) {
                        self.tx.send_modify(|w| w.revoke_requested = true);
                    }
                    vec![watcher]
                }
                Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => return self.node_gone(),
                // connection trouble: the status tells us when it matters
                Err(_) => Vec::new(),
            };
            let mut watching = WatchSet::new(watchers);
            let wake = tokio::select! {
                (wake, _) = watching.wait_or_status(&self.fw, None, |now| *now != seen) => wake,
                _ = self.tx.closed() => return,
            };
            if matches!(wake, Wake::Event(WatchEvent::Deleted { .. })) {
                return self.node_gone();
            }
        }
    }

    /// Whether our node's data asks us to release: `__REVOKE__` as stored, or compressed by a
    /// revoker whose framework compresses (Curator 5.8's `Revoker` under
    /// `enableCompression()`).
    fn is_revoke_message(&self, data: Vec<u8>) -> bool {
        data == REVOKE_MESSAGE || self.fw.compressed().decode(&self.path, data).is_ok_and(|d| d == REVOKE_MESSAGE)
    }

    /// Our node is gone: a loss, unless we deleted it (a release).
    fn node_gone(&self) {
        if self.report.ending.load(Ordering::SeqCst) {
            return;
        }
        let reason = match self.loss(&self.fw.status()) {
            Some(reason) => reason,
            None if *self.expired.borrow() => LossReason::Expired,
            None => LossReason::NodeDeleted,
        };
        self.lost(reason)
    }

    fn lost(&self, reason: LossReason) {
        self.report.lost(reason);
        self.tx.send_modify(|w| w.lost = Some(reason));
    }

    fn loss(&self, now: &SessionStatus) -> Option<LossReason> {
        now.loss_since(&self.baseline, self.fw.error_policy())
    }
}

/// Compile-time check that guards built on `Held` can cross tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<HeldNode>();
    assert_send_sync::<Arc<HeldNode>>();
};

/// How many holds a lock handle (and its clones) has in this process right now (Curator's
/// `isAcquiredInThisProcess`).
#[derive(Debug, Default)]
pub(crate) struct LocalHolds(AtomicUsize);

impl LocalHolds {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// One node held once, shared by the guards re-entered from it; the node is released when the
/// last of them goes.
#[derive(Debug)]
pub(crate) struct Entry {
    node: HeldNode,
    local: Arc<LocalHolds>,
    released: AtomicBool,
}

impl Entry {
    pub fn new(node: HeldNode, local: &Arc<LocalHolds>) -> Arc<Self> {
        local.0.fetch_add(1, Ordering::SeqCst);
        Arc::new(Entry { node, local: local.clone(), released: AtomicBool::new(false) })
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if !self.released.load(Ordering::SeqCst) {
            self.node.release_in_background();
        }
        self.local.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A held lock of an [`InterProcessMutex`](crate::InterProcessMutex) or of the read side of an
/// [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock) (the write side's guard,
/// [`WriteGuard`](crate::WriteGuard), wraps one).
///
/// Derefs to [`HeldNode`]: `path()`, `fencing_token()`, `is_lost()`, `lost()`, `revoked()`.
/// Owned, `Send` and `'static`: it may be moved to and released from any task.
///
/// # Re-entrancy
/// Explicit: [`reenter`](Self::reenter) returns another guard on the same node, at once and
/// without a request to the server; the node is deleted when the last of them is released or
/// dropped, in any order. Acquiring the lock again instead (`mutex.acquire()`) is a new hold
/// with a node of its own, which waits for this one — as acquiring a `tokio::sync::Mutex`
/// twice would.
///
/// Dropping releases in the background (guaranteed delete), never blocks and never panics,
/// also outside a runtime.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessMutex;
/// let mutex = InterProcessMutex::new(&fw, "/locks/orders")?;
/// let outer = mutex.acquire().await?;
/// let inner = outer.reenter()?; // same node, same fencing token
/// assert_eq!(inner.fencing_token(), outer.fencing_token());
/// inner.release().await?; // the node stays: `outer` still holds
/// outer.release().await?; // the node is deleted
/// # Ok(()) }
/// ```
#[must_use = "the lock is released when the guard is dropped"]
#[derive(Debug)]
pub struct LockGuard {
    entry: Arc<Entry>,
}

impl Deref for LockGuard {
    type Target = HeldNode;

    fn deref(&self) -> &HeldNode {
        &self.entry.node
    }
}

impl LockGuard {
    pub(crate) fn new(node: HeldNode, local: &Arc<LocalHolds>) -> Self {
        Self { entry: Entry::new(node, local) }
    }

    /// Re-enters this hold: another guard on the same node (Curator's re-entrant acquire, with
    /// the guard as the proof of ownership instead of the thread). Needs no request to the
    /// server. The node is deleted when the last guard sharing it is released or dropped.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the hold is already known lost.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::LockGuard) -> zk_recipes::Result<()> {
    /// let again = guard.reenter()?;
    /// assert_eq!(again.guard_count(), 2);
    /// drop(guard); // the node stays while `again` lives
    /// again.release().await?;
    /// # Ok(()) }
    /// ```
    #[doc(alias = "acquire")]
    pub fn reenter(&self) -> Result<LockGuard> {
        if let Some(reason) = self.entry.node.loss() {
            return Err(Error::LockLost { path: self.entry.node.path().to_string(), reason });
        }
        Ok(LockGuard { entry: self.entry.clone() })
    }

    /// Releases this hold. When it was the last guard on its node, the node is deleted and
    /// the outcome reported; a failed delete continues in the background.
    ///
    /// # Errors
    /// [`Error::LockLost`] when the lock had been lost before the release (nothing is left
    /// behind either way); the delete's error otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe: if cancelled, the delete continues in the background.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(guard: zk_recipes::LockGuard) -> zk_recipes::Result<()> {
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(self) -> Result<()> {
        match Arc::try_unwrap(self.entry) {
            Err(_) => Ok(()), // another guard re-entered from this one keeps the node
            Ok(entry) => {
                let result = entry.node.release().await;
                entry.released.store(true, Ordering::SeqCst);
                result
            }
        }
    }

    /// Commits `txn` and releases this hold in the same `multi`: the writes are applied only
    /// while the hold is held (as with [`Transaction::while_held`](crate::ops::Transaction::while_held)), and our node is deleted
    /// by the same commit — the next holder's hand-off and the protected writes are one
    /// request and one log write, where a commit then a [`release`](Self::release) are two.
    /// The write-then-unlock of a lock per entity (decrement a stock, then let go) costs one
    /// write less.
    ///
    /// When other guards re-entered from this one still hold the node, the node stays: the
    /// transaction is committed guarded by the hold and this guard is released. Whatever the
    /// outcome, this guard's hold is over when the call returns: on an error the node is
    /// deleted in the background, as when a guard is dropped (the commit was not applied,
    /// unless the error is [`Error::OutcomeUnknown`]).
    ///
    /// # Errors
    /// Those of [`Transaction::commit`](crate::ops::Transaction::commit): [`Error::LockLost`] when the hold was known lost
    /// before or its node is gone at commit (nothing applied); [`Error::Transaction`] when one
    /// of `txn`'s operations was refused (nothing applied, the hold released all the same);
    /// [`Error::OutcomeUnknown`] for a commit [`without_marker`](crate::ops::Transaction::without_marker)
    /// whose reply was lost.
    ///
    /// # Cancel safety
    /// As [`Transaction::commit`](crate::ops::Transaction::commit): not cancel safe for the writes (a commit already sent is
    /// applied or not); the hold ends either way (our node is deleted in the background).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::InterProcessMutex;
    /// let guard = InterProcessMutex::new(&fw, "/locks/sku-42")?.acquire().await?;
    /// let (data, stat) = fw.get_data("/stock/sku-42").await?;
    /// let left: i64 = String::from_utf8_lossy(&data).parse().unwrap_or(0);
    /// let sell = fw.transaction().set_data("/stock/sku-42", (left - 1).to_string().as_bytes(), Some(stat.version));
    /// guard.commit_and_release(sell).await?; // the stock written and the lock let go, in one write
    /// # Ok(()) }
    /// ```
    #[doc(alias = "release_with")]
    pub async fn commit_and_release(self, txn: Transaction<'_>) -> Result<Vec<TxnResult>> {
        match Arc::try_unwrap(self.entry) {
            // another guard re-entered from this one keeps the node
            Err(entry) => txn.while_held(&entry.node).commit().await,
            Ok(entry) => {
                let node = &entry.node;
                // our transaction deletes the node: no loss to report when it does
                node.ending();
                let committed = txn.release_hold(node.path(), node.loss()).commit().await;
                // applied: the node went with the commit; else it is deleted in the background
                // when `entry` drops
                entry.released.store(committed.is_ok(), Ordering::SeqCst);
                committed
            }
        }
    }

    /// How many guards share this guard's hold — its node (1 until
    /// [`reenter`](Self::reenter)ed; each guard re-entered and not yet released counts one).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(guard: zk_recipes::LockGuard) -> zk_recipes::Result<()> {
    /// assert_eq!(guard.guard_count(), 1);
    /// let again = guard.reenter()?;
    /// assert_eq!(guard.guard_count(), 2);
    /// # Ok(()) }
    /// ```
    pub fn guard_count(&self) -> usize {
        Arc::strong_count(&self.entry)
    }

    /// The former name of [`guard_count`](Self::guard_count).
    #[deprecated(since = "0.1.0", note = "renamed `guard_count`: it counts the guards that share one hold")]
    pub fn hold_count(&self) -> usize {
        self.guard_count()
    }
}
