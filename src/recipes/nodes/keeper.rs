//! The keeper: the one background task of a [`PersistentNode`](super::PersistentNode). It
//! creates the node, watches it, and creates it again whenever it is gone — after a delete,
//! a reconnect, a new session — replacing a node left by a dead session of ours, never taking
//! another live session's.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::framework::Stat;
use tokio::sync::watch;
use zookeeper_client::{Client, Error as ZkError, OneshotWatcher};

use super::mode::{classify, Found, NodeMode};
use super::status::{Hub, NodeStatus};
use crate::error::{Error, Result};
use crate::framework::backoff::Backoff;
use crate::framework::deadline;
use crate::framework::wait::WatchSet;
use crate::framework::{is_retryable, paths, Framework, LossReason, ProtectedName, SessionStatus};
use crate::sync::lock;

/// What the keeper keeps: fixed for its life.
#[derive(Debug)]
pub(crate) struct Spec {
    /// The path as given (`<parent>/<name>` in the protected mode).
    pub path: String,
    pub mode: NodeMode,
    /// The protected name (same `_c_<uuid>-` prefix for the keeper's whole life).
    pub protected: Option<ProtectedName>,
    /// Whether closing (or dropping) deletes the node.
    pub delete_on_close: bool,
}

/// The node the keeper holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    pub path: String,
    pub czxid: i64,
    /// The session that owns it (ephemeral modes).
    pub session: Option<i64>,
}

/// What the handle and the keeper share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub hub: Hub,
    /// The data the node should hold, and how many times it was set.
    desired: Mutex<Desired>,
    kept: Mutex<Option<Kept>>,
}

/// The data the node should hold: as given, and as stored (compressed by a compressing
/// framework, as Curator 5.8's `enableCompression()` stores a `PersistentNode`'s data).
#[derive(Debug, Clone)]
struct Desired {
    data: Vec<u8>,
    stored: Vec<u8>,
    /// How many times it was set.
    generation: u64,
}

impl Shared {
    /// `data` as given and as `stored` (see [`Framework::encode`]).
    pub fn new(data: Vec<u8>, stored: Vec<u8>) -> Arc<Self> {
        let desired = Desired { data, stored, generation: 0 };
        Arc::new(Self { hub: Hub::new(), desired: Mutex::new(desired), kept: Mutex::new(None) })
    }

    pub fn data(&self) -> Vec<u8> {
        lock(&self.desired).data.clone()
    }

    pub fn set_data(&self, data: Vec<u8>, stored: Vec<u8>) {
        let mut desired = lock(&self.desired);
        desired.data = data;
        desired.stored = stored;
        desired.generation += 1;
    }

    fn desired(&self) -> Desired {
        lock(&self.desired).clone()
    }

    pub fn kept(&self) -> Option<Kept> {
        lock(&self.kept).clone()
    }

    fn set_kept(&self, kept: Option<Kept>) {
        *lock(&self.kept) = kept;
    }
}

/// What the handle tells the keeper (a change wakes it; dropping the sender ends it).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Control {
    pub closing: bool,
}

/// Why the keeper stopped.
enum End {
    Closing,
    Dropped,
    FrameworkClosed,
}

/// What one step leaves the keeper waiting for.
enum Step {
    /// Look again at once (after a create, a write, a stale node deleted).
    Again,
    /// Wait for this watch (or a session change, or the handle).
    Watch(OneshotWatcher),
}

/// Runs the keeper until it is closed or dropped; on close, deletes the node (when the spec
/// says so) and returns the delete's outcome.
pub(crate) async fn run(
    fw: Framework,
    spec: Arc<Spec>,
    shared: Arc<Shared>,
    mut control: watch::Receiver<Control>,
) -> Result<()> {
    let mut keeper = Keeper {
        fw,
        spec,
        shared,
        sessions: Vec::new(),
        applied: 0,
        verify_data: false,
        ever: false,
        maybe_created: None,
    };
    let end = keeper.keep(&mut control).await;
    let outcome = match end {
        End::Closing => keeper.delete(true).await,
        End::Dropped => keeper.delete(false).await,
        End::FrameworkClosed => Ok(()),
    };
    keeper.shared.set_kept(None);
    keeper.shared.hub.set(NodeStatus::Closed);
    outcome
}

struct Keeper {
    fw: Framework,
    spec: Arc<Spec>,
    shared: Arc<Shared>,
    /// The sessions in which we sent a create (ephemeral modes): a node of one of them that
    /// is not the current one is a stale node of ours.
    sessions: Vec<i64>,
    /// The data generation the node holds.
    applied: u64,
    /// The node was found, not created by us: compare its data once.
    verify_data: bool,
    /// Whether the node was ever there (`Recreated` rather than `Created`).
    ever: bool,
    /// A create whose reply was lost, in this session: the node may be there.
    maybe_created: Option<i64>,
}

impl Keeper {
    async fn keep(&mut self, control: &mut watch::Receiver<Control>) -> End {
        let mut pause = Backoff::new(Duration::from_millis(50), Duration::from_secs(2)).with_jitter();
        loop {
            match control.has_changed() {
                Err(_) => return End::Dropped,
                Ok(_) if control.borrow_and_update().closing => return End::Closing,
                Ok(_) => {}
            }
            tokio::select! {
                connected = self.fw.wait_until_connected() => {
                    if connected.is_err() {
                        return End::FrameworkClosed;
                    }
                }
                _ = control.changed() => continue,
            }
            let Ok(client) = self.fw.raw_client() else { return End::FrameworkClosed };
            let status = self.fw.status();
            let session = client.session_id().0;
            self.forget_lost_session(session);
            let (watcher, deadline) = match self.step(&client, session).await {
                Ok(Step::Again) => {
                    pause.reset();
                    continue;
                }
                Ok(Step::Watch(watcher)) => {
                    pause.reset();
                    (Some(watcher), None)
                }
                Err(e) if is_retryable(&e) => {
                    tracing::debug!(path = %self.spec.path, error = %e, "persistent node: retrying");
                    (None, Some(deadline::after(pause.next_pause())))
                }
                Err(e) => {
                    tracing::warn!(path = %self.spec.path, error = %e, "persistent node: cannot create it");
                    self.shared.hub.set(NodeStatus::Failed(to_error(e)));
                    (None, None)
                }
            };
            let moved = move |s: &SessionStatus| {
                s.closed || s.session_id != status.session_id || s.suspensions != status.suspensions
            };
            let mut watch = WatchSet::new(watcher);
            tokio::select! {
                _ = watch.wait_or_status(&self.fw, deadline, moved) => {}
                _ = control.changed() => {}
            }
        }
    }

    /// After a session change, an ephemeral node of the old session is gone (or soon will be).
    fn forget_lost_session(&mut self, session: i64) {
        if self.maybe_created.is_some_and(|s| s != session) {
            self.maybe_created = None;
        }
        let kept = self.shared.kept();
        if kept.as_ref().and_then(|k| k.session).is_some_and(|s| s != session) {
            self.shared.set_kept(None);
            self.shared.hub.set(NodeStatus::Lost { reason: LossReason::SessionLost });
        }
    }

    async fn step(&mut self, client: &Client, session: i64) -> Result<Step, ZkError> {
        let Some(name) = self.spec.protected.clone() else {
            let path = self.spec.path.clone();
            return match client.get_and_watch_data(&path).await {
                Ok((data, stat, watcher)) => {
                    self.found(client, &path, &data, &Stat::from_client(&stat), watcher, session).await
                }
                Err(ZkError::NoNode) => {
                    self.gone();
                    self.create(client, &path, session).await
                }
                Err(e) => Err(e),
            };
        };
        if let Some(kept) = self.shared.kept() {
            match client.get_and_watch_data(&kept.path).await {
                Ok((data, stat, watcher)) => {
                    return self.found(client, &kept.path, &data, &Stat::from_client(&stat), watcher, session).await
                }
                Err(ZkError::NoNode) => self.gone(),
                Err(e) => return Err(e),
            }
        }
        // Ours may be there under our prefix (a create whose reply was lost) or be a leftover of
        // an old session of ours: adopt the first, replace the second.
        let children = match client.list_children(name.parent()).await {
            Ok(children) => children,
            Err(ZkError::NoNode) => Vec::new(),
            Err(e) => return Err(e),
        };
        for child in children.iter().filter(|c| name.matches(c)) {
            let path = paths::join(name.parent(), child);
            let Some(stat) = client.check_stat(&path).await? else { continue };
            let stat = Stat::from_client(&stat);
            if stat.ephemeral_owner == session {
                self.adopt(&path, &stat, session);
                return Ok(Step::Again);
            }
            // our prefix, another session: one of ours that is gone
            self.replace_stale(client, &path, &stat).await?;
        }
        self.maybe_created = None; // none of ours is there
        self.create(client, &name.path(), session).await
    }

    /// A node is at `path`: keep it, replace it, or leave it to its owner.
    async fn found(
        &mut self,
        client: &Client,
        path: &str,
        data: &[u8],
        stat: &Stat,
        watcher: OneshotWatcher,
        session: i64,
    ) -> Result<Step, ZkError> {
        self.maybe_created = None; // whatever our lost create did, this is what is there
        match classify(self.spec.mode, stat.ephemeral_owner, session, &self.sessions) {
            Found::Stale(_) => {
                self.replace_stale(client, path, stat).await?;
                Ok(Step::Again)
            }
            Found::Other(owner) => {
                self.gone();
                self.shared.hub.set(NodeStatus::Conflict { path: path.to_string(), owner });
                Ok(Step::Watch(watcher))
            }
            Found::Ours => {
                // a node we did not see created is adopted only once it holds our data: its
                // waiters (`wait_for_initial_create`) must not read the data it was found with
                let adopting = self.shared.kept().is_none_or(|k| k.czxid != stat.czxid);
                let desired = self.shared.desired();
                let generation = desired.generation;
                // compared as read (decompressed by a compressing framework): another writer's
                // gzip of the same data may be other bytes; data that does not decompress is
                // not ours and is written over
                let holds = |d: &[u8]| self.fw.decode_or_empty(path, d.to_vec()).is_ok_and(|d| d == desired.data);
                if (adopting || generation != self.applied || self.verify_data) && !holds(data) {
                    return match client.set_data(path, &desired.stored, Some(stat.version)).await {
                        Ok(_) | Err(ZkError::BadVersion | ZkError::NoNode) => Ok(Step::Again),
                        Err(e) => Err(e),
                    };
                }
                if adopting {
                    self.adopt(path, stat, session);
                }
                self.applied = generation;
                self.verify_data = false;
                Ok(Step::Watch(watcher))
            }
        }
    }

    /// Keeps a node we did not see created (a lost create reply, or a node found at the path).
    fn adopt(&mut self, path: &str, stat: &Stat, session: i64) {
        self.verify_data = true;
        self.maybe_created = None;
        self.kept(path.to_string(), stat.czxid, session);
    }

    fn kept(&mut self, path: String, czxid: i64, session: i64) {
        let session = self.spec.mode.is_ephemeral().then_some(session);
        self.shared.set_kept(Some(Kept { path: path.clone(), czxid, session }));
        let status =
            if self.ever { NodeStatus::Recreated { path, czxid } } else { NodeStatus::Created { path, czxid } };
        self.ever = true;
        self.shared.hub.set(status);
    }

    /// Our node is not there (any more).
    fn gone(&mut self) {
        if self.shared.kept().is_some() {
            self.shared.set_kept(None);
            self.shared.hub.set(NodeStatus::Lost { reason: LossReason::NodeDeleted });
        }
    }

    /// Deletes a node of a dead session of ours (this version only: a newer node stays).
    async fn replace_stale(&mut self, client: &Client, path: &str, stat: &Stat) -> Result<(), ZkError> {
        tracing::info!(%path, owner = stat.ephemeral_owner, "persistent node: replacing a node of our old session");
        match client.delete(path, Some(stat.version)).await {
            Ok(()) | Err(ZkError::NoNode | ZkError::BadVersion) => {}
            Err(e) => return Err(e),
        }
        self.shared.hub.set(NodeStatus::StaleReplaced { path: path.to_string(), owner: stat.ephemeral_owner });
        Ok(())
    }

    async fn create(&mut self, client: &Client, path: &str, session: i64) -> Result<Step, ZkError> {
        let Desired { stored: data, generation, .. } = self.shared.desired();
        if self.spec.mode.is_ephemeral() && !self.sessions.contains(&session) {
            self.sessions.push(session);
        }
        let (mode, ttl) = self.spec.mode.create_mode();
        match self.fw.create_with_parents_ttl(client, path, &data, mode, ttl).await {
            Ok(created) => {
                self.applied = generation;
                self.verify_data = false;
                self.maybe_created = None;
                self.kept(created.path, created.stat.czxid, session);
                Ok(Step::Again)
            }
            // someone else's, or ours from a lost reply: the next look decides
            Err(ZkError::NodeExists) => Ok(Step::Again),
            Err(e) => {
                if is_retryable(&e) {
                    self.maybe_created = Some(session);
                }
                Err(e)
            }
        }
    }

    /// Deletes the node on close (`foreground`: the outcome is returned) or after the handle
    /// was dropped (in the background). A node of another session is never touched.
    async fn delete(&mut self, foreground: bool) -> Result<()> {
        if !self.spec.delete_on_close {
            return Ok(());
        }
        let current = self.fw.status().session_id;
        if let Some(kept) = self.shared.kept() {
            if kept.session.is_some_and(|s| s != current) {
                return Ok(()); // gone with its session
            }
            if foreground {
                return self.fw.delete_guaranteed(&kept.path).await;
            }
            self.fw.delete_now_in_background(kept.path, kept.session);
        } else if self.maybe_created == Some(current) {
            // a create whose reply was lost: find it by its name and delete it
            match &self.spec.protected {
                Some(name) => self.fw.delete_protected_in_background(name.clone()),
                None => self.fw.delete_in_background(self.spec.path.clone(), Some(current)),
            }
        }
        Ok(())
    }
}

/// The error a keeper reports for a create the server refuses.
fn to_error(e: ZkError) -> Error {
    match e {
        ZkError::Unimplemented => crate::framework::TTL_UNSUPPORTED,
        other => Error::from_client(other),
    }
}
