//! What a kept node reports: [`NodeStatus`], as a current value and as a stream of changes.

use futures_core::Stream;
use tokio::sync::{broadcast, watch};

use crate::error::Error;
use crate::framework::LossReason;

/// How many status changes a subscriber of [`PersistentNode::events`](crate::PersistentNode::events)
/// may fall behind before it skips to the current status.
const EVENT_CAPACITY: usize = 64;

/// The state of a [`PersistentNode`](crate::PersistentNode): its current value, and each
/// change on [`events`](crate::PersistentNode::events).
///
/// # Examples
/// ```no_run
/// # async fn demo(node: zk_recipes::PersistentNode) {
/// use futures_util::StreamExt;
/// use zk_recipes::NodeStatus;
///
/// let mut events = Box::pin(node.events());
/// while let Some(status) = events.next().await {
///     match status {
///         NodeStatus::Created { path, czxid } | NodeStatus::Recreated { path, czxid } => {
///             println!("{path} is there (czxid {czxid})")
///         }
///         NodeStatus::Lost { reason } => println!("gone ({reason}); re-creating"),
///         other => println!("{other:?}"),
///     }
/// }
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug)]
pub enum NodeStatus {
    /// Not started, or started and not created yet.
    Pending,
    /// The node exists, created (or, for a non-ephemeral mode, found and kept) for the first
    /// time.
    Created {
        /// The node's path (with its sequence number in the protected mode).
        path: String,
        /// The node's `czxid`: it changes each time the node is created again.
        czxid: i64,
    },
    /// The node is gone: deleted by someone, reaped, or (ephemeral modes) its session lost. It
    /// is created again as soon as the session allows.
    Lost {
        /// Why: [`LossReason::NodeDeleted`] or [`LossReason::SessionLost`].
        reason: LossReason,
    },
    /// A node of one of our own sessions that is gone (the server had not removed it yet) was
    /// found at our path and deleted; ours is created next. Never adopted, never reported as
    /// `NodeExists`.
    StaleReplaced {
        /// The stale node's path.
        path: String,
        /// Its `ephemeralOwner`: our old session.
        owner: i64,
    },
    /// The node exists again after a loss.
    Recreated {
        /// The node's path (a new sequence number in the protected mode).
        path: String,
        /// The new node's `czxid`.
        czxid: i64,
    },
    /// The path holds an ephemeral node of another live session: it is not taken over. The
    /// keeper watches it and creates ours once it is gone.
    Conflict {
        /// The path.
        path: String,
        /// The other session (the node's `ephemeralOwner`).
        owner: i64,
    },
    /// The node cannot be created: a non-retryable error ([`Error::ServerUnsupported`] for a TTL
    /// node on a server without extended types, `NoAuth`, ...). The keeper tries again after
    /// the next reconnect or data change.
    Failed(Error),
    /// The node was closed (or its framework was).
    Closed,
}

/// A copy; a `Failed` status carries a copy of its error.
impl Clone for NodeStatus {
    fn clone(&self) -> Self {
        match self {
            Self::Pending => Self::Pending,
            Self::Created { path, czxid } => Self::Created { path: path.clone(), czxid: *czxid },
            Self::Lost { reason } => Self::Lost { reason: *reason },
            Self::StaleReplaced { path, owner } => Self::StaleReplaced { path: path.clone(), owner: *owner },
            Self::Recreated { path, czxid } => Self::Recreated { path: path.clone(), czxid: *czxid },
            Self::Conflict { path, owner } => Self::Conflict { path: path.clone(), owner: *owner },
            Self::Failed(e) => Self::Failed(e.duplicate()),
            Self::Closed => Self::Closed,
        }
    }
}

/// Two `Failed` statuses are equal when their errors are of one kind with one message.
impl PartialEq for NodeStatus {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Pending, Self::Pending) | (Self::Closed, Self::Closed) => true,
            (Self::Created { path: a, czxid: x }, Self::Created { path: b, czxid: y })
            | (Self::Recreated { path: a, czxid: x }, Self::Recreated { path: b, czxid: y }) => a == b && x == y,
            (Self::Lost { reason: a }, Self::Lost { reason: b }) => a == b,
            (Self::StaleReplaced { path: a, owner: x }, Self::StaleReplaced { path: b, owner: y })
            | (Self::Conflict { path: a, owner: x }, Self::Conflict { path: b, owner: y }) => a == b && x == y,
            (Self::Failed(a), Self::Failed(b)) => a.same(b),
            _ => false,
        }
    }
}

impl Eq for NodeStatus {}

impl NodeStatus {
    /// The node's path and `czxid` while it exists (`Created` or `Recreated`).
    pub fn node(&self) -> Option<(&str, i64)> {
        match self {
            Self::Created { path, czxid } | Self::Recreated { path, czxid } => Some((path, *czxid)),
            _ => None,
        }
    }
}

/// Where the keeper publishes its status: the current value and every change.
#[derive(Debug)]
pub(crate) struct Hub {
    current: watch::Sender<NodeStatus>,
    changes: broadcast::Sender<NodeStatus>,
}

impl Hub {
    pub fn new() -> Self {
        Self { current: watch::Sender::new(NodeStatus::Pending), changes: broadcast::channel(EVENT_CAPACITY).0 }
    }

    /// Publishes `status` if it differs from the current one.
    pub fn set(&self, status: NodeStatus) {
        let changed = self.current.send_if_modified(|s| {
            if *s == status {
                return false;
            }
            *s = status.clone();
            true
        });
        if changed {
            let _ = self.changes.send(status);
        }
    }

    pub fn get(&self) -> NodeStatus {
        self.current.borrow().clone()
    }

    pub fn watch(&self) -> watch::Receiver<NodeStatus> {
        self.current.subscribe()
    }

    /// The current status, then every change until `Closed` (a subscriber that falls behind
    /// skips to the current status).
    pub fn stream(&self) -> impl Stream<Item = NodeStatus> + Send + 'static {
        let mut rx = self.changes.subscribe();
        let mut current = self.current.subscribe();
        let first = current.borrow_and_update().clone();
        async_stream::stream! {
            let mut last = first.clone();
            yield first;
            while last != NodeStatus::Closed {
                last = match rx.recv().await {
                    Ok(status) => status,
                    Err(broadcast::error::RecvError::Lagged(_)) => current.borrow_and_update().clone(),
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                yield last.clone();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    #[tokio::test]
    async fn stream_starts_with_the_current_status_and_ends_after_closed() {
        let hub = Hub::new();
        hub.set(NodeStatus::Created { path: "/a".into(), czxid: 5 });
        let stream = hub.stream();
        hub.set(NodeStatus::Created { path: "/a".into(), czxid: 5 }); // unchanged: not repeated
        hub.set(NodeStatus::Lost { reason: LossReason::NodeDeleted });
        hub.set(NodeStatus::Recreated { path: "/a".into(), czxid: 9 });
        hub.set(NodeStatus::Closed);
        let got: Vec<_> = stream.collect().await;
        assert_eq!(
            got,
            vec![
                NodeStatus::Created { path: "/a".into(), czxid: 5 },
                NodeStatus::Lost { reason: LossReason::NodeDeleted },
                NodeStatus::Recreated { path: "/a".into(), czxid: 9 },
                NodeStatus::Closed,
            ]
        );
        assert_eq!(hub.get().node(), None);
    }
}
