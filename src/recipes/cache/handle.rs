//! `Cache` and its builder: the public face of the cache engine.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::engine::run;
use super::node::{CacheEvent, CachedNode};
use super::scope::{GuardedFilter, PathFilter, Scope};
use super::source::WatchMode;
use super::state::{Phase, Shared};
use crate::error::{Error, Result};
use crate::framework::{deadline, validate_path, Framework};
use crate::observe::CacheSite;
use crate::sync::lock;

/// How many events a subscriber's buffer holds by default before it overflows.
pub const DEFAULT_EVENT_CAPACITY: usize = 4096;

/// Which nodes a cache keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tree,
    Children,
    Node,
}

/// Configures a [`Cache`]; made by [`Cache::tree`], [`Cache::children`] or [`Cache::node`].
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::cache::{Cache, WatchMode};
///
/// let cache = Cache::tree(&fw, "/config")
///     .max_depth(2)                                  // /config, its children and grandchildren
///     .with_data(true)
///     .filter(|path| !path.ends_with(".tmp"))
///     .event_capacity(4_096)
///     .watch_mode(WatchMode::Auto)                   // persistent watch, one-shot before 3.6
///     .build()?;
/// cache.start().await?;
/// println!("{} nodes", cache.len());
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until built"]
pub struct CacheBuilder {
    fw: Framework,
    path: String,
    kind: Kind,
    max_depth: Option<usize>,
    with_data: bool,
    filter: Option<PathFilter>,
    capacity: usize,
    watch_mode: WatchMode,
}

impl std::fmt::Debug for CacheBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheBuilder")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("max_depth", &self.max_depth)
            .field("with_data", &self.with_data)
            .field("filter", &self.filter.is_some())
            .field("capacity", &self.capacity)
            .field("watch_mode", &self.watch_mode)
            .finish()
    }
}

impl CacheBuilder {
    /// Keeps the tree only down to `depth` levels below the root (the root is level 0; 1
    /// keeps its children). Tree caches only.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// Whether to keep each node's data (default `true`). Without, [`CachedNode::data`] is
    /// `None` and only stats are read.
    pub fn with_data(mut self, with_data: bool) -> Self {
        self.with_data = with_data;
        self
    }

    /// Keeps only the nodes whose path `accept` returns `true` for (it sees every path below
    /// the root; the root is always kept). A refused node's descendants are not kept either,
    /// nor read. A filter that panics is contained: the path it panicked on is refused, the
    /// cache goes on, and [`Cache::failure`] reports the first panic as
    /// [`Error::InvalidArgument`].
    pub fn filter(mut self, accept: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.filter = Some(Arc::new(accept));
        self
    }

    /// How many events each subscriber's buffer holds before it overflows (default
    /// [`DEFAULT_EVENT_CAPACITY`]); see [`Cache::events`].
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Which watches follow the nodes (default [`WatchMode::Auto`]: a persistent recursive
    /// watch, one-shot watches when the server refuses `addWatch`). Events and guarantees are
    /// the same in every mode; [`Cache::watch_mode`] tells which one is in use.
    ///
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::Cache;
    /// use zk_recipes::cache::WatchMode;
    ///
    /// let cache = Cache::children(&fw, "/workers").watch_mode(WatchMode::OneShot).build()?;
    /// # Ok(()) }
    /// ```
    pub fn watch_mode(mut self, mode: WatchMode) -> Self {
        self.watch_mode = mode;
        self
    }

    /// The cache, not started yet.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path; [`Error::InvalidArgument`] for
    /// `max_depth(0)` (use [`Cache::node`]), a `max_depth` on a children or node cache, or an
    /// event capacity of 0.
    pub fn build(self) -> Result<Cache> {
        validate_path(&self.path)?;
        let max_depth = match (self.kind, self.max_depth) {
            (Kind::Tree, Some(0)) => {
                return Err(Error::invalid("max_depth", "max_depth must be at least 1 (Cache::node keeps one node)"))
            }
            (Kind::Tree, depth) => depth,
            (_, Some(_)) => return Err(Error::invalid("max_depth", "max_depth applies to tree caches only")),
            (Kind::Children, None) => Some(1),
            (Kind::Node, None) => Some(0),
        };
        if self.capacity == 0 {
            return Err(Error::invalid("event_capacity", "the event capacity must be at least 1"));
        }
        let scope = Scope {
            root: self.path,
            max_depth,
            with_data: self.with_data,
            filter: self.filter.map(GuardedFilter::new),
        };
        let kind = match max_depth {
            Some(0) => "node",
            Some(1) => "children",
            _ => "tree",
        };
        let site = CacheSite::new(kind, self.fw.path_label(&scope.root));
        Ok(Cache {
            fw: self.fw,
            shared: Shared::new(scope, self.capacity, site),
            recursive: self.kind != Kind::Node,
            watch_mode: self.watch_mode,
            task: Mutex::new(Task::NotStarted),
        })
    }
}

#[derive(Debug)]
enum Task {
    NotStarted,
    Running(AbortHandle, watch::Receiver<()>),
    Closed(Option<watch::Receiver<()>>),
}

/// A local copy of a subtree, a node's children or one node, kept current by a persistent
/// watch (or one-shot watches, see [`WatchMode`]): Curator's `CuratorCache` (and its
/// `TreeCache` / `PathChildrenCache` / `NodeCache` modes).
///
/// Build it with [`Cache::tree`], [`Cache::children`] or [`Cache::node`], then
/// [`start`](Self::start) it. Read it at any time ([`get`](Self::get),
/// [`child_names`](Self::child_names), [`snapshot`](Self::snapshot)), follow it
/// ([`events`](Self::events), [`version`](Self::version)).
///
/// # Notable behaviors
/// * **One watch**: a persistent recursive watch on the root (a persistent one for a node
///   cache), kept through reconnects and new sessions by a [`PersistentWatcher`]
///   (ZooKeeper 3.6+). The root need not exist; it is followed when created, deleted and
///   re-created.
/// * **Older servers**: when the server refuses `addWatch` (`Unimplemented`: ZooKeeper
///   before 3.6), the cache goes on with one-shot watches on every node, Curator's `TreeCache`
///   algorithm, with the same events and guarantees; [`CacheBuilder::watch_mode`] chooses
///   either kind up front (see [`WatchMode`]).
/// * **Never backwards**: each event re-reads the node it names; the answer is applied only
///   when its `mzxid` is newer than the cached one (a different `czxid` is a new node at the
///   same path: `Deleted` then `Created`).
/// * **Resync**: events during a disconnection are lost by ZooKeeper (ZOOKEEPER-4698). After
///   every reconnect and new session the whole subtree is read again and exactly the
///   differences are reported — comparing `czxid` and `mzxid`, so a node deleted and
///   re-created with the same data and version while we were cut off is reported — then
///   [`CacheEvent::Resynced`].
/// * **Slow consumers** never block the cache: see [`events`](Self::events).
/// * Closing or dropping the cache ends its task and removes its watch.
///
/// [`PersistentWatcher`]: crate::PersistentWatcher
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use futures_util::StreamExt;
/// use zk_recipes::{Cache, CacheEvent};
///
/// let cache = Cache::tree(&fw, "/services").max_depth(2).build()?;
/// let events = cache.events();
/// cache.start().await?;
/// futures_util::pin_mut!(events);
/// while let Some(event) = events.next().await {
///     match event {
///         CacheEvent::Initialized => println!("{} nodes", cache.len()),
///         CacheEvent::Changed { new, .. } => println!("{} changed", new.path),
///         other => println!("{other:?}"),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[doc(alias = "CuratorCache")]
#[doc(alias = "TreeCache")]
#[doc(alias = "PathChildrenCache")]
#[doc(alias = "NodeCache")]
pub struct Cache {
    fw: Framework,
    shared: Arc<Shared>,
    recursive: bool,
    watch_mode: WatchMode,
    task: Mutex<Task>,
}

impl Cache {
    /// A cache of the subtree at `path`: the node and all its descendants (down to
    /// [`max_depth`](CacheBuilder::max_depth)).
    pub fn tree(fw: &Framework, path: &str) -> CacheBuilder {
        Self::builder(fw, path, Kind::Tree)
    }

    /// A cache of the node at `path` and its children (not their descendants).
    pub fn children(fw: &Framework, path: &str) -> CacheBuilder {
        Self::builder(fw, path, Kind::Children)
    }

    /// A cache of the node at `path` alone.
    pub fn node(fw: &Framework, path: &str) -> CacheBuilder {
        Self::builder(fw, path, Kind::Node)
    }

    fn builder(fw: &Framework, path: &str, kind: Kind) -> CacheBuilder {
        CacheBuilder {
            fw: fw.clone(),
            path: path.to_string(),
            kind,
            max_depth: None,
            with_data: true,
            filter: None,
            capacity: DEFAULT_EVENT_CAPACITY,
            watch_mode: WatchMode::Auto,
        }
    }

    /// The cached root path.
    pub fn path(&self) -> &str {
        &self.shared.scope.root
    }

    /// Starts the cache: its task registers the watch, loads the nodes (`Created` for each,
    /// then [`CacheEvent::Initialized`]), then follows them.
    ///
    /// Resolves once the task is spawned, without waiting for the initial load (which needs a
    /// connection): await [`initialized`](Self::initialized) (or
    /// [`initialized_timeout`](Self::initialized_timeout)) when the content must be there.
    ///
    /// # Errors
    /// [`Error::InvalidState`] when already started; [`Error::Closed`] after
    /// [`close`](Self::close) or when the framework is closed.
    ///
    /// # Cancel safety
    /// Cancel safe: it does not wait.
    pub async fn start(&self) -> Result<()> {
        self.spawn()
    }

    fn spawn(&self) -> Result<()> {
        let mut task = lock(&self.task);
        match *task {
            Task::NotStarted => {}
            Task::Running(..) => return Err(Error::InvalidState("the cache is already started")),
            Task::Closed(_) => return Err(Error::Closed),
        }
        if self.fw.is_closed() {
            return Err(Error::Closed);
        }
        let (alive, ended) = watch::channel(());
        let handle = self
            .fw
            .runtime()
            .spawn(run(self.fw.clone(), self.shared.clone(), self.recursive, self.watch_mode, alive))
            .abort_handle();
        *task = Task::Running(handle, ended);
        Ok(())
    }

    /// The cached node at `path`, if any.
    pub fn get(&self, path: &str) -> Option<CachedNode> {
        self.shared.get(path)
    }

    /// The names of the cached children of `path`, sorted.
    pub fn child_names(&self, path: &str) -> Vec<String> {
        self.shared.child_names(path)
    }

    /// Every cached node by path, taken at one instant.
    pub fn snapshot(&self) -> BTreeMap<String, CachedNode> {
        self.shared.snapshot()
    }

    /// How many nodes are cached.
    pub fn len(&self) -> usize {
        self.shared.len()
    }

    /// Whether no node is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the initial load is done.
    pub fn is_initialized(&self) -> bool {
        self.shared.is_initialized()
    }

    /// Waits until the started cache's first load is done: every node of the tree is in the
    /// cache (and [`CacheEvent::Initialized`] was sent). At once when it is done already. Under
    /// a [`with_deadline`](crate::with_deadline) scope it ends by the scope's deadline.
    ///
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let cache = zk_recipes::Cache::tree(&fw, "/config").build()?;
    /// cache.start().await?;
    /// cache.initialized().await?;
    /// println!("{} nodes", cache.len());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidState`] when the cache was not started; the error the cache stopped
    /// with when it failed before its first load ([`Error::Closed`] when it was closed);
    /// [`Error::Timeout`] when a scope's deadline passed first.
    ///
    /// # Cancel safety
    /// Cancel safe: it only waits; the cache goes on loading.
    pub async fn initialized(&self) -> Result<()> {
        match crate::current_deadline() {
            Some(deadline) => self.initialized_timeout(deadline.remaining()).await,
            None => self.loaded_by(None).await.map(drop),
        }
    }

    /// [`initialized`](Self::initialized), waiting at most `timeout`.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the first load is not done by then (the cache goes on
    /// loading); as [`initialized`](Self::initialized) otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn initialized_timeout(&self, timeout: Duration) -> Result<()> {
        deadline::timed(self.fw.operation_timeout(), timeout, |at| async move {
            Ok(self.loaded_by(Some(at)).await?.then_some(()))
        })
        .await
    }

    /// [`initialized`](Self::initialized) bounded as a framework operation: by the scope's
    /// deadline, else by the framework's operation timeout (a `start()` that returns loaded).
    pub(crate) async fn initialized_as_operation(&self) -> Result<()> {
        let deadline = deadline::of_operation(self.fw.operation_timeout());
        self.initialized_timeout(deadline.remaining()).await
    }

    /// Waits for the first load until `until`: `false` when it passed first.
    async fn loaded_by(&self, until: Option<Instant>) -> Result<bool> {
        if matches!(*lock(&self.task), Task::NotStarted) {
            return Err(Error::InvalidState("the cache is not started"));
        }
        let mut phase = self.shared.phase();
        let loaded = async {
            match phase.wait_for(|phase| *phase != Phase::Loading).await.map(|phase| *phase) {
                Ok(Phase::Loaded) => Ok(true),
                _ => Err(self.shared.failure().unwrap_or(Error::Closed)),
            }
        };
        match until {
            None => loaded.await,
            Some(at) => tokio::time::timeout_at(at, loaded).await.unwrap_or(Ok(false)),
        }
    }

    /// A counter bumped on every applied change (each `Created`, `Changed` and `Deleted`), as
    /// a `watch::Receiver`: only its latest value matters ("the content changed since I last
    /// read it"); [`events`](Self::events) is the `Stream` of each change.
    pub fn version(&self) -> watch::Receiver<u64> {
        self.shared.version()
    }

    /// Which kind of watch the cache follows its nodes with now: [`WatchMode::Persistent`] or
    /// [`WatchMode::OneShot`] (never `Auto`); `None` until its watches are first set.
    pub fn watch_mode(&self) -> Option<WatchMode> {
        self.shared.watch_mode()
    }

    /// Why the cache stopped following the server, if it did: a non-retryable error from
    /// `addWatch` (with [`WatchMode::Persistent`], a server older than 3.6 refuses it:
    /// [`Error::ServerUnsupported`]`(`[`ServerFeature::PersistentWatches`](crate::ServerFeature::PersistentWatches)`)`),
    /// from setting one-shot watches, or from reading the subtree. Its event
    /// streams have ended then. (Nodes the session may not read, `NoAuth`, are left out of the
    /// cache and logged, not a failure.) Also the first panic of the
    /// [`filter`](CacheBuilder::filter), as [`Error::InvalidArgument`]: the cache goes on
    /// without the paths the filter panicked on.
    pub fn failure(&self) -> Option<Error> {
        let filter_panic = || {
            let panic = self.shared.scope.filter.as_ref()?.panicked()?;
            Some(Error::invalid("filter", panic.to_string()))
        };
        self.shared.failure().or_else(filter_panic)
    }

    /// The cache's events. Any number of subscribers; each first gets a `Created` for every
    /// node cached at the time of the call (and `Initialized` when the initial load is done),
    /// then every event as it is applied. Subscribe before [`start`](Self::start) to get the
    /// initial load as it happens. The stream ends when the cache is closed or dropped.
    ///
    /// A `Stream` because each event matters (a node created then deleted is two events, not
    /// a latest value); for "something changed, read the content", [`version`](Self::version)
    /// is a `watch::Receiver`.
    ///
    /// Each subscriber has a bounded buffer ([`CacheBuilder::event_capacity`]): the cache
    /// never waits for a subscriber. When a buffer overflows, its events are dropped and
    /// replaced by one [`CacheEvent::Resynced`] whose `dropped` counts them: read
    /// [`snapshot`](Self::snapshot) then (the events after it may repeat what the snapshot
    /// shows; their `mzxid` tells). A subscriber that subscribes before `start` and does not
    /// read during the initial load needs a capacity above the number of nodes to get it as
    /// events; one that subscribes after `Initialized` gets the content as a replay, which is
    /// not bounded.
    ///
    /// # Cancel safety
    /// `next()` on the stream is cancel safe.
    #[doc(alias = "listenable")]
    #[doc(alias = "addListener")]
    pub fn events(&self) -> impl Stream<Item = CacheEvent> + Send + 'static {
        self.shared.subscribe()
    }

    /// Stops the cache: its task ends, its watch is removed, its event streams end after
    /// their buffered events. The content stays readable. Resolves once the task has ended
    /// (see [`terminated`](Self::terminated)). Idempotent: a second close is `Ok(())`;
    /// dropping the cache does the same in the background.
    ///
    /// # Errors
    /// None today: the `Result` is the lifecycle's shape, common to every recipe.
    ///
    /// # Cancel safety
    /// Cancel safe: the cache is stopped before the first await; only the wait for its task
    /// is dropped.
    pub async fn close(&self) -> Result<()> {
        self.stop();
        self.terminated().await;
        Ok(())
    }

    /// Stops the cache without waiting (the close of a drop).
    fn stop(&self) {
        let mut task = lock(&self.task);
        let ended = match std::mem::replace(&mut *task, Task::Closed(None)) {
            Task::Running(handle, ended) => {
                handle.abort();
                Some(ended)
            }
            Task::NotStarted => None,
            Task::Closed(ended) => ended,
        };
        *task = Task::Closed(ended);
        drop(task);
        self.shared.close();
    }

    /// Resolves once the cache's task has ended (at once if it never started): after
    /// [`close`](Self::close), a drop, or the framework's close. Take it before dropping the
    /// cache to wait for the end.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub fn terminated(&self) -> impl Future<Output = ()> + Send + 'static {
        let ended = match &*lock(&self.task) {
            Task::Running(_, ended) | Task::Closed(Some(ended)) => Some(ended.clone()),
            _ => None,
        };
        async move {
            if let Some(mut ended) = ended {
                while ended.changed().await.is_ok() {}
            }
        }
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.stop();
    }
}

// Caches and their events are shared between tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Cache>();
    assert_send_sync::<CacheBuilder>();
    assert_send_sync::<CacheEvent>();
    assert_send_sync::<crate::PersistentWatcher>();
};
