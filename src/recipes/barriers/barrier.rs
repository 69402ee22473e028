//! `DistributedBarrier`: a gate that holds every waiter until it is removed.

use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::wait::{wait, Wake};
use crate::framework::{paths, CreateMode, Framework};
use crate::ZooKeeperError;

/// A barrier that blocks every waiter while it is set: Curator's `DistributedBarrier`.
///
/// One process [sets](Self::set_barrier) the barrier, any number of processes
/// [wait on it](Self::wait_on_barrier), and they all pass once someone
/// [removes](Self::remove_barrier) it. A barrier that is not set lets waiters through at once.
///
/// # Notable behaviors
/// * A waiter passes only when it has *seen* the node missing: after any wake-up (a watch
///   event, a reconnection, a new session after expiry) it checks again, so a session event
///   never lets a waiter through early.
/// * Waiting costs one watch per waiter, and no polling.
///
/// # Curator compatibility
/// The barrier is one persistent node at `path` holding the framework's default data (Curator
/// writes its default data, the local IP address); its missing parents are containers. A
/// Curator `DistributedBarrier` on the same path sets, removes and waits on the same barrier.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedBarrier;
/// let barrier = DistributedBarrier::new(&fw, "/jobs/nightly/gate")?;
/// barrier.set_barrier().await?;
/// // ... elsewhere: every worker waits until the coordinator removes it
/// barrier.wait_on_barrier().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedBarrier {
    fw: Framework,
    path: String,
}

impl DistributedBarrier {
    /// A barrier at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path (or the root).
    pub fn new(fw: &Framework, path: &str) -> Result<Self> {
        paths::validate_recipe_path(path)?;
        Ok(Self { fw: fw.clone(), path: path.to_string() })
    }

    /// The barrier's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sets the barrier: creates the node (a barrier that is already set is fine).
    ///
    /// # Errors
    /// The framework's errors ([`Error::Closed`], [`Error::RetriesExhausted`], `NoAuth`...).
    ///
    /// # Cancel safety
    /// Cancel safe in the sense that nothing of ours is left half-done: the barrier may or may
    /// not have been set.
    pub async fn set_barrier(&self) -> Result<()> {
        // the default data, compressed by a compressing framework as Curator 5.8 writes it
        let data = self.fw.encode(&self.path, self.fw.default_data())?;
        match self.fw.create_if_absent(&self.path, &data, CreateMode::Persistent).await {
            Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Removes the barrier: deletes the node (a barrier that is not set is fine); every waiter
    /// passes.
    ///
    /// # Errors
    /// `NotEmpty` as [`Error::ZooKeeper`] when someone created children under the barrier
    /// node; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe in the sense that nothing is left half-done: the barrier may or may not have
    /// been removed.
    pub async fn remove_barrier(&self) -> Result<()> {
        self.fw.delete_if_exists(&self.path).await
    }

    /// Waits until the barrier is not set (at once when it is not).
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`wait_on_barrier_timeout`](Self::wait_on_barrier_timeout)
    /// with the time left.
    ///
    /// # Errors
    /// The framework's errors ([`Error::Closed`], [`Error::RetriesExhausted`] when the
    /// connection stays down longer than the retry policy allows...).
    ///
    /// # Cancel safety
    /// Cancel safe: waiting leaves nothing on the server but a watch.
    #[doc(alias = "waitOnBarrier")]
    pub async fn wait_on_barrier(&self) -> Result<()> {
        if let Some(left) = deadline::scope_left() {
            return self.wait_on_barrier_timeout(left).await;
        }
        self.wait_until(None).await.map(drop)
    }

    /// Waits at most `timeout` until the barrier is not set.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the barrier was still set at the deadline (nothing is left
    /// behind: the watch's wake-up is simply ignored); as
    /// [`wait_on_barrier`](Self::wait_on_barrier) otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(barrier: zk_recipes::DistributedBarrier) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// match barrier.wait_on_barrier_timeout(Duration::from_secs(5)).await {
    ///     Ok(()) => println!("through"),
    ///     Err(zk_recipes::Error::Timeout { .. }) => println!("still set after 5 s"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    #[doc(alias = "waitOnBarrier")]
    pub async fn wait_on_barrier_timeout(&self, timeout: Duration) -> Result<()> {
        deadline::timed(self.fw.operation_timeout(), timeout, |at| async move {
            Ok(self.wait_until(Some(at)).await?.then_some(()))
        })
        .await
    }

    async fn wait_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let path = self.path.as_str();
        loop {
            let session = self.fw.status().session_id;
            let watcher = self
                .fw
                .request("watch", path, |conn| async move {
                    let (stat, watcher) = conn.watch_exists(path).await?;
                    Ok(stat.map(|_| watcher))
                })
                .await?;
            let Some(watcher) = watcher else { return Ok(true) };
            match wait(&self.fw, watcher, deadline, session).await {
                Wake::Deadline => return Ok(false),
                // re-check: only a missing node lets us through
                Wake::Event(_) | Wake::SessionChanged => {}
            }
        }
    }
}
