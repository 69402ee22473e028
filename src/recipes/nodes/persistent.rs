//! `PersistentNode`: a node that stays there while its owner runs — Curator's
//! `PersistentNode`, without its stale-node bug.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::keeper::{run, Control, Shared, Spec};
use super::mode::NodeMode;
use super::status::NodeStatus;
use crate::error::{Error, Result};
use crate::framework::{deadline, paths, Framework, ProtectedName};
use crate::sync::lock;

#[derive(Debug)]
enum Task {
    NotStarted,
    Running(JoinHandle<Result<()>>),
    Closed,
}

/// A node that exists whenever the session is healthy: Curator's `PersistentNode` (and
/// `PersistentEphemeralNode`).
///
/// Once [`start`](Self::start)ed, one background task creates the node (with container
/// parents), watches it, and creates it again after it is deleted by someone, after a
/// reconnect, after the session is lost and a new one built, after an ensemble restart. Its
/// [`status`](Self::status) and [`events`](Self::events) tell what happens.
///
/// # Notable behaviors
/// * **No stale adoption**: a node left at our path by a dead session of ours (the server
///   has not expired it yet when our new session arrives) is recognised by its
///   `ephemeralOwner`, deleted and created again: [`NodeStatus::StaleReplaced`] then
///   [`NodeStatus::Recreated`]. It is never adopted (Curator adopts it, and the node then
///   vanishes when the old session expires) nor reported as `NodeExists` (Dubbo #5135).
/// * **No theft**: an ephemeral node of another live session at our path is not taken over:
///   [`NodeStatus::Conflict`] (and [`Error::NodeHeldByOther`] from
///   [`wait_for_initial_create`](Self::wait_for_initial_create)); ours is created once it is
///   gone.
/// * **Writes while disconnected**: [`set_data`](Self::set_data) records the data and returns;
///   the task writes it as soon as it can, the latest data winning.
/// * **Close deletes** the node (guaranteed delete: retried in the background if need be);
///   dropping the handle without closing deletes it in the background. The task ends either
///   way.
/// * **Compression**: on a compressing framework
///   ([`enable_compression`](crate::FrameworkBuilder::enable_compression), or a
///   [`compressed`](Framework::compressed) handle) the node holds its data gzip-compressed, as
///   Curator 5.8's `enableCompression()` writes it; [`data`](Self::data) stays as given. A node
///   of ours whose data does not decompress to ours is written over.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::{NodeMode, PersistentNode};
///
/// let node = PersistentNode::new(&fw, "/services/api/host-1", NodeMode::Ephemeral, "10.0.0.1:8080")?;
/// node.start().await?;
/// node.wait_for_initial_create(Duration::from_secs(10)).await?;
/// node.set_data("10.0.0.1:8081")?; // applied now, or after the next reconnect
/// node.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PersistentNode {
    fw: Framework,
    spec: Arc<Spec>,
    shared: Arc<Shared>,
    control: watch::Sender<Control>,
    task: Mutex<Task>,
}

impl PersistentNode {
    /// A node at `path` in `mode` holding `data`, not started yet. In
    /// [`NodeMode::ProtectedEphemeralSequential`] `path` is `<parent>/<name>` and the node is
    /// `<parent>/_c_<uuid>-<name><seq>`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path or the root; [`Error::InvalidArgument`] for
    /// a TTL under 1 ms (zero included) or beyond ZooKeeper's largest, 2^40 − 1 ms (about 34
    /// years; `Duration::MAX` included); on a compressing framework, the
    /// [`CompressionProvider`](crate::CompressionProvider)'s error for data it cannot compress.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::{NodeMode, PersistentNode};
    ///
    /// let node = PersistentNode::new(&fw, "/workers/worker-", NodeMode::ProtectedEphemeralSequential, "")?;
    /// # Ok(()) }
    /// ```
    pub fn new(fw: &Framework, path: &str, mode: NodeMode, data: impl Into<Vec<u8>>) -> Result<Self> {
        Self::with_spec(fw, path, mode, data.into(), true)
    }

    /// A node that closing leaves in place (the TTL node's container).
    pub(crate) fn with_spec(
        fw: &Framework,
        path: &str,
        mode: NodeMode,
        data: Vec<u8>,
        delete_on_close: bool,
    ) -> Result<Self> {
        paths::validate_recipe_path(path)?;
        mode.validate()?;
        let protected = (mode == NodeMode::ProtectedEphemeralSequential)
            .then(|| ProtectedName::new(paths::parent(path), paths::node_name(path)));
        let stored = fw.encode(path, &data)?.into_owned();
        Ok(Self {
            fw: fw.clone(),
            spec: Arc::new(Spec { path: path.to_string(), mode, protected, delete_on_close }),
            shared: Shared::new(data, stored),
            control: watch::Sender::new(Control::default()),
            task: Mutex::new(Task::NotStarted),
        })
    }

    /// Starts the background task that creates and keeps the node.
    ///
    /// Resolves once the task is spawned, without waiting for the node (which needs a
    /// connection): [`wait_for_initial_create`](Self::wait_for_initial_create) waits for it,
    /// [`status`](Self::status) and [`events`](Self::events) follow it.
    ///
    /// # Errors
    /// [`Error::InvalidState`] when already started; [`Error::Closed`] after
    /// [`close`](Self::close) or for a closed framework.
    ///
    /// # Cancel safety
    /// Cancel safe: it does not wait.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(node: zk_recipes::PersistentNode) -> zk_recipes::Result<()> {
    /// node.start().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(&self) -> Result<()> {
        self.launch()
    }

    /// Spawns the keeper task (what [`start`](Self::start) does, without an await).
    pub(crate) fn launch(&self) -> Result<()> {
        let mut task = lock(&self.task);
        match *task {
            Task::NotStarted if self.fw.is_closed() => return Err(Error::Closed),
            Task::NotStarted => {}
            Task::Running(_) => return Err(Error::InvalidState("the node is already started")),
            Task::Closed => return Err(Error::Closed),
        }
        let keeper = run(self.fw.clone(), self.spec.clone(), self.shared.clone(), self.control.subscribe());
        *task = Task::Running(self.fw.runtime().spawn(keeper));
        Ok(())
    }

    /// Waits until the node exists and returns its path (with its sequence number in the
    /// protected mode). Returns at once when it exists already. The wait ends by the deadline
    /// of the caller's [`with_deadline`](crate::with_deadline) scope too, when that is
    /// earlier. A `timeout` of zero does not wait (the path when the node exists now, else
    /// [`Error::Timeout`]); `Duration::MAX` waits without bound.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it does not exist within `timeout`;
    /// [`Error::NodeHeldByOther`] while another session's ephemeral node holds the path;
    /// the error the server refuses the create with ([`Error::ServerUnsupported`] for a TTL node on a
    /// server without extended types, `NoAuth` as [`Error::ZooKeeper`], ...);
    /// [`Error::InvalidState`] when not started; [`Error::Closed`] once closed.
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(node: zk_recipes::PersistentNode) -> zk_recipes::Result<()> {
    /// let path = node.wait_for_initial_create(std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_initial_create(&self, timeout: Duration) -> Result<String> {
        if matches!(*lock(&self.task), Task::NotStarted) {
            return Err(Error::InvalidState("the node is not started"));
        }
        let status = deadline::timed(self.fw.operation_timeout(), timeout, |at| self.settled_by(at)).await?;
        match status {
            NodeStatus::Created { path, .. } | NodeStatus::Recreated { path, .. } => Ok(path),
            NodeStatus::Conflict { path, owner } => Err(Error::NodeHeldByOther { path, owner }),
            NodeStatus::Failed(e) => Err(e),
            _ => Err(Error::Closed),
        }
    }

    /// The node's status once it is no longer on its way (`None` when `at` passed first).
    async fn settled_by(&self, at: Instant) -> Result<Option<NodeStatus>> {
        let mut rx = self.shared.hub.watch();
        let settled = rx.wait_for(|s| {
            !matches!(s, NodeStatus::Pending | NodeStatus::Lost { .. } | NodeStatus::StaleReplaced { .. })
        });
        let status = match tokio::time::timeout_at(at, settled).await {
            Err(_) => None,
            Ok(Err(_)) => return Err(Error::Closed),
            Ok(Ok(status)) => Some(status.clone()),
        };
        Ok(status)
    }

    /// Sets the node's data: written at once when connected, else as soon as the session
    /// allows (the latest data wins); every re-creation uses it too. Returns without waiting
    /// for the write.
    ///
    /// # Errors
    /// [`Error::Closed`] after [`close`](Self::close); on a compressing framework, the
    /// [`CompressionProvider`](crate::CompressionProvider)'s error for data it cannot compress.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(node: zk_recipes::PersistentNode) -> zk_recipes::Result<()> {
    /// node.set_data(b"draining".to_vec())?;
    /// # Ok(()) }
    /// ```
    pub fn set_data(&self, data: impl Into<Vec<u8>>) -> Result<()> {
        if matches!(*lock(&self.task), Task::Closed) {
            return Err(Error::Closed);
        }
        let data = data.into();
        let stored = self.fw.encode(&self.spec.path, &data)?.into_owned();
        self.shared.set_data(data, stored);
        self.control.send_modify(|_| {});
        Ok(())
    }

    /// The data the node holds (or will hold once written).
    #[doc(alias = "getData")]
    pub fn data(&self) -> Vec<u8> {
        self.shared.data()
    }

    /// The node's path while it exists (with its sequence number in the protected mode).
    #[doc(alias = "getActualPath")]
    pub fn actual_path(&self) -> Option<String> {
        self.shared.kept().map(|k| k.path)
    }

    /// The path given to [`new`](Self::new).
    pub fn path(&self) -> &str {
        &self.spec.path
    }

    /// The mode given to [`new`](Self::new).
    pub fn mode(&self) -> NodeMode {
        self.spec.mode
    }

    /// The current status.
    pub fn status(&self) -> NodeStatus {
        self.shared.hub.get()
    }

    /// The current status as a `tokio::sync::watch::Receiver`: for code that needs only the
    /// latest status (is the node there now), not every transition; `changed()` wakes on the
    /// next one, intermediate ones may be skipped. [`events`](Self::events) is the `Stream`
    /// of every transition.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<NodeStatus> {
        self.shared.hub.watch()
    }

    /// The current status, then every change, until [`NodeStatus::Closed`] (a subscriber more
    /// than 64 changes behind skips to the current status). A `Stream` because each transition
    /// matters (a `Lost` then `Recreated` is a new node, with a new `czxid`); for the latest
    /// status only, [`watch`](Self::watch).
    ///
    /// # Cancel safety
    /// `next()` on the stream is cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(node: zk_recipes::PersistentNode) {
    /// use futures_util::StreamExt;
    ///
    /// let mut events = Box::pin(node.events());
    /// while let Some(status) = events.next().await {
    ///     println!("{status:?}");
    /// }
    /// # }
    /// ```
    #[doc(alias = "addListener")]
    pub fn events(&self) -> impl Stream<Item = NodeStatus> + Send + 'static {
        self.shared.hub.stream()
    }

    /// Stops keeping the node and deletes it (guaranteed delete: when the foreground attempt
    /// fails, the delete goes on in the background and the error is returned). The status
    /// goes [`NodeStatus::Closed`] and the task ends. Idempotent.
    ///
    /// # Errors
    /// The foreground delete's error ([`Error::RetriesExhausted`], `NoAuth` as
    /// [`Error::ZooKeeper`], ...).
    ///
    /// # Cancel safety
    /// Cancel safe: the task finishes the close (and the delete) by itself.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(node: zk_recipes::PersistentNode) -> zk_recipes::Result<()> {
    /// node.close().await?;
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) -> Result<()> {
        let task = std::mem::replace(&mut *lock(&self.task), Task::Closed);
        self.control.send_modify(|c| c.closing = true);
        match task {
            Task::Running(task) => task.await.unwrap_or(Ok(())),
            Task::NotStarted => {
                self.shared.hub.set(NodeStatus::Closed);
                Ok(())
            }
            Task::Closed => Ok(()),
        }
    }
}

// Nodes are shared between tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<PersistentNode>();
    assert_send_sync::<NodeStatus>();
};
