//! What a watch reports: [`WatchEvent`] (a [`PersistentWatcher`](crate::PersistentWatcher)'s
//! stream items and a [`OneShotWatch`](crate::ops::OneShotWatch)'s one event), in this crate's
//! own types.

use zookeeper_client::{EventType, WatchedEvent};

/// Why a [`WatchEvent::Reset`] was emitted: events may have been missed since the previous
/// one (or, for the first, nothing was watched before).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use futures_util::StreamExt;
/// use zk_recipes::cache::{PersistentWatcher, ResetReason, WatchEvent};
///
/// let mut events = Box::pin(PersistentWatcher::new(&fw, "/config", true)?.events());
/// while let Some(event) = events.next().await {
///     if let WatchEvent::Reset(reason) = event? {
///         if reason != ResetReason::Registered {
///             println!("events may have been missed ({reason:?}): read /config again");
///         }
///     }
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetReason {
    /// The watch was registered for the first time.
    Registered,
    /// The connection dropped and came back on the same session: events that happened while
    /// disconnected are not delivered (ZOOKEEPER-4698). The watch was registered again.
    Reconnected,
    /// The framework built a new session (the old one expired or was considered lost): the
    /// watch was registered on it.
    NewSession,
    /// The session a [`OneShotWatch`](crate::ops::OneShotWatch) was set on ended (expired,
    /// closed): the watch is gone; read and watch again, on the framework's next session.
    SessionEnded,
}

/// What a [`PersistentWatcher`](crate::PersistentWatcher) reports, and what a
/// [`OneShotWatch`](crate::ops::OneShotWatch) fires with.
///
/// Paths are relative to the framework's namespace, as every path of this crate. `zxid` is the
/// transaction that caused the event on ZooKeeper 3.9 and later, `-1` on older servers
/// (ZOOKEEPER-4655).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use futures_util::StreamExt;
/// use zk_recipes::cache::{PersistentWatcher, WatchEvent};
///
/// let watcher = PersistentWatcher::new(&fw, "/jobs", true)?;   // recursive
/// let mut events = Box::pin(watcher.events());
/// while let Some(event) = events.next().await {
///     match event? {
///         WatchEvent::Created { path, .. } => println!("new job {path}"),
///         WatchEvent::Reset(_) => println!("re-read /jobs: events may have been missed"),
///         other => println!("{other:?}"),
///     }
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// A node was created.
    Created {
        /// The node.
        path: String,
        /// The creating transaction (`-1` before ZooKeeper 3.9).
        zxid: i64,
    },
    /// A node was deleted.
    Deleted {
        /// The node.
        path: String,
        /// The deleting transaction (`-1` before ZooKeeper 3.9).
        zxid: i64,
    },
    /// A node's data was written.
    DataChanged {
        /// The node.
        path: String,
        /// The writing transaction (`-1` before ZooKeeper 3.9).
        zxid: i64,
    },
    /// A node's children changed (only for a non-recursive watch: a recursive one reports the
    /// children's own `Created` / `Deleted` instead).
    ChildrenChanged {
        /// The parent node.
        path: String,
        /// The transaction (`-1` before ZooKeeper 3.9).
        zxid: i64,
    },
    /// Events may have been missed: re-read what you know. The first event of every stream.
    Reset(ResetReason),
}

impl WatchEvent {
    /// The node's path, for node events.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::Created { path, .. }
            | Self::Deleted { path, .. }
            | Self::DataChanged { path, .. }
            | Self::ChildrenChanged { path, .. } => Some(path),
            Self::Reset(_) => None,
        }
    }

    pub(crate) fn from_node_event(event: WatchedEvent) -> Option<Self> {
        let WatchedEvent { event_type, path, zxid, .. } = event;
        Some(match event_type {
            EventType::NodeCreated => Self::Created { path, zxid },
            EventType::NodeDeleted => Self::Deleted { path, zxid },
            EventType::NodeDataChanged => Self::DataChanged { path, zxid },
            EventType::NodeChildrenChanged => Self::ChildrenChanged { path, zxid },
            EventType::Session => return None,
        })
    }
}
