//! What a cache holds and reports: [`CachedNode`] and [`CacheEvent`].

use crate::framework::Stat;

/// One node as the cache holds it.
///
/// `stat` is the node's stat as of its latest data change (`mzxid`): the cache re-reads a node
/// when its data or existence changes, not when its children do, so `num_children`,
/// `cversion` and `pzxid` may be behind; ask [`Cache::children`](crate::Cache::children)
/// for the children.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::Cache;
///
/// let cache = Cache::node(&fw, "/config/limits").build()?;
/// cache.start().await?;
/// if let Some(node) = cache.get("/config/limits") {
///     println!("{}: version {}, {:?}", node.path, node.stat.version, node.data.as_deref().map(String::from_utf8_lossy));
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedNode {
    /// The node's path, relative to the framework's namespace.
    pub path: String,
    /// The node's data; `None` when the cache was built with `with_data(false)`.
    pub data: Option<Vec<u8>>,
    /// The node's stat (see the type's docs).
    pub stat: Stat,
}

impl CachedNode {
    /// A cached node (for tests of code that consumes a cache's events).
    ///
    /// # Examples
    /// ```
    /// use zk_recipes::cache::CachedNode;
    /// use zk_recipes::Stat;
    ///
    /// let stat = Stat { czxid: 7, mzxid: 7, pzxid: 7, data_length: 2, ..Stat::default() };
    /// let node = CachedNode::new("/config/limits", Some(b"10".to_vec()), stat);
    /// assert_eq!(node.stat.czxid, 7);
    /// ```
    pub fn new(path: impl Into<String>, data: Option<Vec<u8>>, stat: Stat) -> Self {
        Self { path: path.into(), data, stat }
    }
}

/// What happened to a cache, in the order it was applied.
///
/// Replaying `Created`, `Changed` and `Deleted` into a map keyed by path gives the cache's
/// content: after [`Initialized`](Self::Initialized), and again after each
/// [`Resynced`](Self::Resynced) whose `dropped` is 0.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use futures_util::StreamExt;
/// use zk_recipes::{Cache, CacheEvent};
///
/// let cache = Cache::children(&fw, "/services/api").build()?;
/// let mut events = Box::pin(cache.events());
/// cache.start().await?;
/// while let Some(event) = events.next().await {
///     match event {
///         CacheEvent::Created(node) => println!("+ {}", node.path),
///         CacheEvent::Changed { new, .. } => println!("~ {}", new.path),
///         CacheEvent::Deleted(node) => println!("- {}", node.path),
///         CacheEvent::Initialized => println!("loaded"),
///         CacheEvent::Resynced { dropped } if dropped > 0 => println!("too slow: {} nodes now", cache.len()),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheEvent {
    /// A node appeared (on the initial load: every node found, parents before children).
    Created(CachedNode),
    /// A node's data changed (its `mzxid` grew).
    Changed {
        /// The node as it was cached.
        old: CachedNode,
        /// The node as it is now.
        new: CachedNode,
    },
    /// A node went away (also reported, then `Created`, for a node deleted and re-created
    /// while we could not see it: its `czxid` differs).
    Deleted(CachedNode),
    /// The initial load is complete: exactly once per cache, after the `Created` of every node
    /// present at start.
    Initialized,
    /// After a reconnect or a new session, the whole subtree was read again and the
    /// differences were reported just before this event (`dropped == 0`).
    ///
    /// With `dropped > 0`, this subscriber was too slow: its buffer overflowed and that many
    /// events were dropped in place of which this one comes. Read
    /// [`Cache::snapshot`](crate::Cache::snapshot) to catch up; the events after this one
    /// continue from there.
    Resynced {
        /// How many events this subscriber lost to an overflow (0 after a resync).
        dropped: u64,
    },
}

impl CacheEvent {
    /// The node concerned (the new one for `Changed`), if any.
    pub fn node(&self) -> Option<&CachedNode> {
        match self {
            Self::Created(node) | Self::Deleted(node) | Self::Changed { new: node, .. } => Some(node),
            Self::Initialized | Self::Resynced { .. } => None,
        }
    }
}
