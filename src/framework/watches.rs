//! One-shot watches through the framework: read a node (its data, its existence, its children)
//! and set a watch on it in the same request, through the namespace and the retry loop.
//! Persistent watches are [`PersistentWatcher`](crate::PersistentWatcher).

use crate::framework::Stat;
use zookeeper_client::OneshotWatcher;

use super::watch_event::{ResetReason, WatchEvent};

use super::paths::validate_path;
use super::session::Framework;
use crate::error::Result;

/// A one-shot watch set by [`Framework::watch_data`], [`watch_exists`](Framework::watch_exists)
/// or [`watch_children`](Framework::watch_children): it fires once, for the first change after
/// the read that set it. Dropping it (or [`remove`](Self::remove)) removes it.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// let (data, _stat, watch) = fw.watch_data("/config/limits").await?;
/// println!("limits: {}", String::from_utf8_lossy(&data));
/// let event = watch.changed().await;          // fires once, at the next change
/// println!("changed: {event:?}");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct OneShotWatch(OneshotWatcher);

impl OneShotWatch {
    pub(crate) fn new(watcher: OneshotWatcher) -> Self {
        Self(watcher)
    }

    /// Waits for the change: a node event whose path is relative to the namespace. Across a
    /// reconnect the server sends the events missed meanwhile; when the session ends
    /// (expired, closed) the event is [`WatchEvent::Reset`] with
    /// [`ResetReason::SessionEnded`] instead: read and watch again on the framework's new
    /// session.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future drops (removes) the watch.
    pub async fn changed(self) -> WatchEvent {
        // a session event (the only kind that is not a node's) ends the watch
        WatchEvent::from_node_event(self.0.changed().await).unwrap_or(WatchEvent::Reset(ResetReason::SessionEnded))
    }

    /// Removes the watch (the same as dropping it).
    pub fn remove(self) {
        drop(self)
    }
}

impl Framework {
    /// The data and stat of `path`, and a watch that fires when the node's data changes or it
    /// is deleted.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath); [`Error::ZooKeeper`](crate::Error::ZooKeeper)
    /// with `NoNode` (no watch is left then; use [`watch_exists`](Self::watch_exists)); the
    /// errors of the retry loop.
    ///
    /// # Cancel safety
    /// Cancel safe: a watch set by a cancelled call is dropped with it.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let (data, _stat, watch) = fw.watch_data("/config").await?;
    /// println!("config: {data:?}");
    /// let event = watch.changed().await;
    /// println!("{event:?} on {:?}", event.path());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn watch_data(&self, path: &str) -> Result<(Vec<u8>, Stat, OneShotWatch)> {
        validate_path(path)?;
        self.request("watch", path, |conn| async move { conn.watch_data(path).await }).await
    }

    /// The stat of `path` if it exists, and a watch that fires when it is created, changed or
    /// deleted.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath); the errors of the retry loop.
    ///
    /// # Cancel safety
    /// Cancel safe: a watch set by a cancelled call is dropped with it.
    pub async fn watch_exists(&self, path: &str) -> Result<(Option<Stat>, OneShotWatch)> {
        validate_path(path)?;
        self.request("watch", path, |conn| async move { conn.watch_exists(path).await }).await
    }

    /// The children's names of `path`, and a watch that fires when a child is created or
    /// deleted, or the node is deleted.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath); [`Error::ZooKeeper`](crate::Error::ZooKeeper)
    /// with `NoNode`; the errors of the retry loop.
    ///
    /// # Cancel safety
    /// Cancel safe: a watch set by a cancelled call is dropped with it.
    pub async fn watch_children(&self, path: &str) -> Result<(Vec<String>, OneShotWatch)> {
        validate_path(path)?;
        self.request("watch", path, |conn| async move { conn.watch_children(path).await }).await
    }
}
