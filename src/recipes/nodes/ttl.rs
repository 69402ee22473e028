//! `PersistentTtlNode`: a node that stays while its owner runs and vanishes a TTL after it
//! stops — Curator's `PersistentTtlNode` layout.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::mode::NodeMode;
use super::persistent::PersistentNode;
use super::status::NodeStatus;
use crate::error::{Error, Result};
use crate::framework::validate_ttl;
use crate::framework::{deadline, paths, CreateMode, Framework};
use crate::recipes::layout::TTL_TOUCH_CHILD;
use crate::sync::lock;
use crate::ZooKeeperError;

/// The toucher's progress.
#[derive(Debug, Default)]
struct Touch {
    /// The child was touched (created or written) at least once.
    touched: bool,
    /// Why the latest touch failed, if it did.
    failure: Option<Error>,
}

impl Clone for Touch {
    fn clone(&self) -> Self {
        Touch { touched: self.touched, failure: self.failure.as_ref().map(Error::duplicate) }
    }
}

/// A node that exists while its owner runs and is removed by the server a TTL after the
/// owner stops (closes, drops it, crashes): Curator's `PersistentTtlNode`.
///
/// The node at the path is a CONTAINER kept by a [`PersistentNode`] (not deleted on close);
/// under it, a child `touch` is a persistent node with the TTL, written every TTL / 2. Once the
/// writes stop, the server deletes `touch` after the TTL, then the empty container. Watchers
/// of the node see no event for the touches (they change the child).
///
/// The server must allow TTL nodes (`zookeeper.extendedTypesEnabled=true`, or
/// `extendedTypesEnabled=true` in `zoo.cfg`); one that does not refuses the first touch, and
/// [`wait_for_initial_create`](Self::wait_for_initial_create) returns
/// [`Error::ServerUnsupported`] with nothing created.
///
/// # Curator compatibility
/// Same layout as Curator 5.x: container at the path holding the data, child `touch` with the
/// TTL holding the framework's default data.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::PersistentTtlNode;
///
/// let node = PersistentTtlNode::new(&fw, "/jobs/report-42", Duration::from_secs(30), "running")?;
/// node.start().await?;
/// node.wait_for_initial_create(Duration::from_secs(10)).await?;
/// // ... the node stays while this process runs; 30 s after it stops, it is gone
/// node.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PersistentTtlNode {
    fw: Framework,
    node: Arc<PersistentNode>,
    child: String,
    ttl: Duration,
    touch: watch::Sender<Touch>,
    /// `true` once closing; dropping it ends the toucher.
    closing: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl PersistentTtlNode {
    /// A TTL node at `path` holding `data`, not started yet.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path or the root; [`Error::InvalidArgument`] for
    /// a TTL under 1 ms (zero included) or beyond ZooKeeper's largest, 2^40 − 1 ms (about 34
    /// years; `Duration::MAX` included).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let node = zk_recipes::PersistentTtlNode::new(&fw, "/jobs/a", std::time::Duration::from_secs(10), "")?;
    /// # Ok(()) }
    /// ```
    pub fn new(fw: &Framework, path: &str, ttl: Duration, data: impl Into<Vec<u8>>) -> Result<Self> {
        validate_ttl(ttl)?;
        let node = PersistentNode::with_spec(fw, path, NodeMode::Container, data.into(), false)?;
        Ok(Self {
            fw: fw.clone(),
            node: Arc::new(node),
            child: paths::join(path, TTL_TOUCH_CHILD),
            ttl,
            touch: watch::Sender::new(Touch::default()),
            closing: watch::Sender::new(false),
            task: Mutex::new(None),
        })
    }

    /// Starts touching the child (at once, then every TTL / 2) and, after the first touch,
    /// keeping the container.
    ///
    /// Resolves once the task is spawned, without waiting for the first touch:
    /// [`wait_for_initial_create`](Self::wait_for_initial_create) waits for it.
    ///
    /// # Errors
    /// [`Error::InvalidState`] when already started; [`Error::Closed`] after close or for a
    /// closed framework.
    ///
    /// # Cancel safety
    /// Cancel safe: it does not wait.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(node: zk_recipes::PersistentTtlNode) -> zk_recipes::Result<()> {
    /// node.start().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(&self) -> Result<()> {
        let mut task = lock(&self.task);
        if task.is_some() {
            return Err(Error::InvalidState("the node is already started"));
        }
        if self.fw.is_closed() || *self.closing.borrow() {
            return Err(Error::Closed);
        }
        let toucher = touch_loop(
            self.fw.clone(),
            self.node.clone(),
            self.child.clone(),
            self.ttl,
            self.touch.clone(),
            self.closing.subscribe(),
        );
        *task = Some(self.fw.runtime().spawn(toucher));
        Ok(())
    }

    /// Waits until the node and its `touch` child exist; returns the node's path. The wait
    /// ends by the deadline of the caller's [`with_deadline`](crate::with_deadline) scope too,
    /// when that is earlier. A `timeout` of zero does not wait (the path when both exist now,
    /// else [`Error::Timeout`]); `Duration::MAX` waits without bound. A touch that failed for
    /// a while (the connection, a timeout) does not end the wait: the touches go on.
    ///
    /// # Errors
    /// [`Error::ServerUnsupported`] when the server refuses TTL nodes, and the touch's other
    /// failures that trying again cannot fix (`NoAuth`...); [`Error::InvalidState`] when the
    /// node is not started; [`Error::Timeout`]; the errors of
    /// [`PersistentNode::wait_for_initial_create`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(node: zk_recipes::PersistentTtlNode) -> zk_recipes::Result<()> {
    /// node.wait_for_initial_create(std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_initial_create(&self, timeout: Duration) -> Result<String> {
        if lock(&self.task).is_none() {
            return Err(Error::InvalidState("the node is not started"));
        }
        deadline::timed(self.fw.operation_timeout(), timeout, |at| self.created_by(at)).await
    }

    /// [`wait_for_initial_create`](Self::wait_for_initial_create) until `at` (`None` when it
    /// passed first).
    async fn created_by(&self, at: Instant) -> Result<Option<String>> {
        let mut rx = self.touch.subscribe();
        let touched = rx.wait_for(|t| t.touched || t.failure.as_ref().is_some_and(is_final));
        let touch = match tokio::time::timeout_at(at, touched).await {
            Err(_) => return Ok(None),
            Ok(Err(_)) => return Err(Error::Closed),
            Ok(Ok(touch)) => touch.clone(),
        };
        if let (false, Some(failure)) = (touch.touched, touch.failure) {
            return Err(failure);
        }
        match self.node.wait_for_initial_create(at.saturating_duration_since(Instant::now())).await {
            Err(Error::Timeout { .. }) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Sets the node's data (see [`PersistentNode::set_data`]).
    ///
    /// # Errors
    /// [`Error::Closed`] after close.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(node: zk_recipes::PersistentTtlNode) -> zk_recipes::Result<()> {
    /// node.set_data("50%")?;
    /// # Ok(()) }
    /// ```
    pub fn set_data(&self, data: impl Into<Vec<u8>>) -> Result<()> {
        self.node.set_data(data)
    }

    /// The node's data.
    #[doc(alias = "getData")]
    pub fn data(&self) -> Vec<u8> {
        self.node.data()
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.node.path()
    }

    /// The time to live.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The container's status; [`NodeStatus::Failed`] while touching the child fails with a
    /// non-retryable error (a server without TTL support: [`Error::ServerUnsupported`]).
    pub fn status(&self) -> NodeStatus {
        match self.touch.borrow().failure.as_ref().map(Error::duplicate) {
            Some(failure) => NodeStatus::Failed(failure),
            None => self.node.status(),
        }
    }

    /// Stops touching and keeping the node. The node is *not* deleted: the server removes it a
    /// TTL after the last touch (unless another owner keeps touching it), as Curator does.
    /// Idempotent; dropping does the same.
    ///
    /// # Errors
    /// None today; the `Result` leaves room for the container's close.
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(node: zk_recipes::PersistentTtlNode) -> zk_recipes::Result<()> {
    /// node.close().await?;
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) -> Result<()> {
        self.closing.send_replace(true);
        let task = lock(&self.task).take();
        if let Some(task) = task {
            let _ = task.await;
        }
        self.node.close().await
    }
}

/// Whether a touch's failure ends a wait for the node: not one that may go away as the touches
/// go on (the connection, a deadline, a session expiry).
fn is_final(failure: &Error) -> bool {
    !(failure.is_timeout() || failure.is_connection() || failure.is_retryable())
}

/// Touches the child now and every `ttl / 2`, starting the container's keeper after the first
/// success, until closed or dropped.
async fn touch_loop(
    fw: Framework,
    node: Arc<PersistentNode>,
    child: String,
    ttl: Duration,
    state: watch::Sender<Touch>,
    mut closing: watch::Receiver<bool>,
) {
    let period = ttl / 2;
    loop {
        let outcome = tokio::select! {
            outcome = touch(&fw, &child, ttl) => outcome,
            _ = closing.changed() => return,
        };
        match outcome {
            Ok(()) => {
                if !state.borrow().touched {
                    // the first touch made the container (with its parents): keep it from now
                    let _ = node.launch();
                }
                state.send_replace(Touch { touched: true, failure: None });
            }
            Err(Error::Closed) => return,
            Err(e) => {
                // once per run of failures; the retries that follow are debug
                match state.borrow().failure.is_none() {
                    true => {
                        tracing::warn!(%child, error = %e, ?period, "TTL node: touch failed; trying again every period (further failures at debug)")
                    }
                    false => tracing::debug!(%child, error = %e, "TTL node: touch failed again"),
                }
                state.send_modify(|t| t.failure = Some(e));
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = closing.changed() => return,
        }
    }
}

/// Writes the child, or creates it (with its parent as a container) when it is missing.
async fn touch(fw: &Framework, child: &str, ttl: Duration) -> Result<()> {
    // the default data, compressed by a compressing framework as Curator 5.8 does
    let data = &*fw.encode(child, fw.default_data())?;
    match fw.set_data_plain(child, data, None).await {
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => {}
        other => return other.map(drop),
    }
    let created = fw
        .request("create", child, |conn| async move {
            conn.create_with_parents(child, data, CreateMode::Persistent, Some(ttl)).await
        })
        .await;
    match created {
        Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => Ok(()),
        Err(Error::ZooKeeper(ZooKeeperError::Unimplemented)) => {
            Err(Error::ServerUnsupported(crate::ServerFeature::TtlNodes))
        }
        Err(e) => Err(e),
    }
}
