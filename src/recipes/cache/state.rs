//! The cache's content and its subscribers, changed under one lock so that every event is
//! delivered in the order it was applied and a new subscriber's replay matches the content.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use futures_core::Stream;
use tokio::sync::watch;

use super::events::Subscriber;
use super::node::{CacheEvent, CachedNode};
use super::scope::Scope;
use super::source::WatchMode;
use crate::error::Error;
use crate::observe::CacheSite;
use crate::sync::lock;

/// How far a cache's first load got: what [`Cache::initialized`](super::Cache::initialized)
/// waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not loaded yet.
    Loading,
    /// The first load is done.
    Loaded,
    /// It stopped (failed or closed) before its first load was done.
    Stopped,
}

/// What the cache's task and its handle share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub scope: Scope,
    pub capacity: usize,
    state: Mutex<State>,
    version: watch::Sender<u64>,
    phase: watch::Sender<Phase>,
    /// The cache's metrics (feature `metrics`).
    site: CacheSite,
}

#[derive(Debug, Default)]
struct State {
    nodes: BTreeMap<String, CachedNode>,
    subscribers: Vec<Weak<Subscriber>>,
    initialized: bool,
    closed: bool,
    failure: Option<Error>,
    watch_mode: Option<WatchMode>,
}

impl Shared {
    pub fn new(scope: Scope, capacity: usize, site: CacheSite) -> Arc<Self> {
        Arc::new(Self {
            scope,
            capacity,
            state: Mutex::default(),
            version: watch::Sender::new(0),
            phase: watch::Sender::new(Phase::Loading),
            site,
        })
    }

    pub fn get(&self, path: &str) -> Option<CachedNode> {
        lock(&self.state).nodes.get(path).cloned()
    }

    pub fn child_names(&self, path: &str) -> Vec<String> {
        let prefix = if path == "/" { "/".to_string() } else { format!("{path}/") };
        let state = lock(&self.state);
        state
            .nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, _)| Some(&p[prefix.len()..]).filter(|rest| !rest.is_empty() && !rest.contains('/')))
            .map(str::to_string)
            .collect()
    }

    pub fn snapshot(&self) -> BTreeMap<String, CachedNode> {
        lock(&self.state).nodes.clone()
    }

    pub fn len(&self) -> usize {
        lock(&self.state).nodes.len()
    }

    pub fn is_initialized(&self) -> bool {
        lock(&self.state).initialized
    }

    pub fn failure(&self) -> Option<Error> {
        lock(&self.state).failure.as_ref().map(Error::duplicate)
    }

    pub fn watch_mode(&self) -> Option<WatchMode> {
        lock(&self.state).watch_mode
    }

    /// Records the kind of watch followed now.
    pub fn set_watch_mode(&self, mode: WatchMode) {
        lock(&self.state).watch_mode = Some(mode);
    }

    pub fn version(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// How far the first load got, as it changes.
    pub fn phase(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// Leaves [`Phase::Loading`] for `to` (a later change of phase is not one of the first load).
    fn first_load(&self, to: Phase) {
        self.phase.send_if_modified(|phase| {
            let first = *phase == Phase::Loading;
            if first {
                *phase = to;
            }
            first
        });
    }

    /// A new subscriber: a `Created` for every node cached now (and `Initialized` if the
    /// initial load is done), then every event applied from now on.
    pub fn subscribe(&self) -> impl Stream<Item = CacheEvent> + Send + 'static {
        let subscriber = Subscriber::new(self.capacity, &self.scope.root);
        let mut state = lock(&self.state);
        let mut replay: Vec<CacheEvent> = state.nodes.values().cloned().map(CacheEvent::Created).collect();
        if state.initialized {
            replay.push(CacheEvent::Initialized);
        }
        if state.closed {
            subscriber.close();
        } else {
            state.subscribers.retain(|s| s.strong_count() > 0);
            state.subscribers.push(Arc::downgrade(&subscriber));
        }
        drop(state);
        subscriber.stream(replay)
    }

    /// Applies a fresh read of `path` (`None`: it does not exist): only forward — a node
    /// whose `mzxid` is not newer than the cached one's changes nothing; a different `czxid`
    /// is another node at the same path (deleted, then created).
    pub fn apply_read(&self, path: &str, read: Option<CachedNode>) {
        let mut state = lock(&self.state);
        let mut out = Vec::new();
        match (state.nodes.get(path), read) {
            (None, Some(new)) => out.push(CacheEvent::Created(new)),
            (Some(old), Some(new)) if new.stat.czxid > old.stat.czxid => {
                out.push(CacheEvent::Deleted(old.clone()));
                out.push(CacheEvent::Created(new));
            }
            (Some(old), Some(new)) if new.stat.czxid == old.stat.czxid && new.stat.mzxid > old.stat.mzxid => {
                out.push(CacheEvent::Changed { old: old.clone(), new })
            }
            (Some(old), None) => out.push(CacheEvent::Deleted(old.clone())),
            _ => {}
        }
        Self::emit(&mut state, &self.version, &self.site, out);
    }

    /// Applies a fresh read of the whole subtree: reports exactly the differences (deletions
    /// deepest first, then creations and changes parents first), then `Initialized` the first
    /// time and `Resynced` after.
    pub fn apply_tree(&self, tree: BTreeMap<String, CachedNode>) {
        let mut state = lock(&self.state);
        let mut gone = Vec::new();
        let mut arrived = Vec::new();
        for (path, old) in &state.nodes {
            match tree.get(path) {
                None => gone.push(CacheEvent::Deleted(old.clone())),
                Some(new) if new.stat.czxid > old.stat.czxid => gone.push(CacheEvent::Deleted(old.clone())),
                _ => {}
            }
        }
        gone.reverse();
        for (path, new) in tree {
            match state.nodes.get(&path) {
                None => arrived.push(CacheEvent::Created(new)),
                Some(old) if new.stat.czxid > old.stat.czxid => arrived.push(CacheEvent::Created(new)),
                Some(old) if new.stat.czxid == old.stat.czxid && new.stat.mzxid > old.stat.mzxid => {
                    arrived.push(CacheEvent::Changed { old: old.clone(), new })
                }
                // unchanged, or (never from one server session's reads) older than cached
                Some(_) => {}
            }
        }
        gone.append(&mut arrived);
        let done = if state.initialized { CacheEvent::Resynced { dropped: 0 } } else { CacheEvent::Initialized };
        if state.initialized {
            self.site.resync();
        }
        state.initialized = true;
        gone.push(done);
        Self::emit(&mut state, &self.version, &self.site, gone);
        drop(state);
        self.first_load(Phase::Loaded);
    }

    /// Records why the cache stopped.
    pub fn fail(&self, error: Error) {
        lock(&self.state).failure = Some(error);
        self.first_load(Phase::Stopped);
    }

    /// Ends every subscriber's stream (after its queued events); later subscribers get only
    /// the replay.
    pub fn close(&self) {
        let mut state = lock(&self.state);
        state.closed = true;
        for subscriber in state.subscribers.drain(..).filter_map(|s| s.upgrade()) {
            subscriber.close();
        }
        drop(state);
        self.first_load(Phase::Stopped);
    }

    fn emit(state: &mut State, version: &watch::Sender<u64>, site: &CacheSite, events: Vec<CacheEvent>) {
        for event in events {
            match &event {
                CacheEvent::Created(node) | CacheEvent::Changed { new: node, .. } => {
                    site.event(if matches!(event, CacheEvent::Created(_)) { "created" } else { "changed" });
                    state.nodes.insert(node.path.clone(), node.clone());
                }
                CacheEvent::Deleted(node) => {
                    site.event("deleted");
                    // a replaced node is deleted, then created: only drop the old one
                    if state.nodes.get(&node.path).is_some_and(|n| n.stat.czxid == node.stat.czxid) {
                        state.nodes.remove(&node.path);
                    }
                }
                CacheEvent::Initialized | CacheEvent::Resynced { .. } => {}
            }
            if event.node().is_some() {
                version.send_modify(|v| *v += 1);
            }
            state.subscribers.retain(|s| match s.upgrade() {
                Some(subscriber) => {
                    subscriber.push(event.clone());
                    true
                }
                None => false,
            });
        }
        site.nodes(state.nodes.len());
    }
}

#[cfg(test)]
mod tests {
    use crate::framework::Stat;
    use futures_util::{FutureExt, StreamExt};

    use super::*;

    fn node(path: &str, czxid: i64, mzxid: i64) -> CachedNode {
        let stat = Stat {
            czxid,
            mzxid,
            pzxid: 0,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 0,
            num_children: 0,
        };
        CachedNode { path: path.into(), data: Some(vec![]), stat }
    }

    fn tree(nodes: &[CachedNode]) -> BTreeMap<String, CachedNode> {
        nodes.iter().map(|n| (n.path.clone(), n.clone())).collect()
    }

    fn shared() -> Arc<Shared> {
        Shared::new(
            Scope { root: "/r".into(), max_depth: None, with_data: true, filter: None },
            100,
            Default::default(),
        )
    }

    fn drain(events: &mut (impl Stream<Item = CacheEvent> + Unpin)) -> Vec<CacheEvent> {
        std::iter::from_fn(|| events.next().now_or_never().flatten()).collect()
    }

    #[test]
    fn a_resync_reports_exactly_the_differences() {
        let shared = shared();
        let mut events = Box::pin(shared.subscribe());
        let (r, a, a1, b, c) =
            (node("/r", 1, 1), node("/r/a", 2, 2), node("/r/a/1", 3, 3), node("/r/b", 4, 4), node("/r/c", 5, 5));
        shared.apply_tree(tree(&[r.clone(), a.clone(), a1.clone(), b.clone(), c.clone()]));
        let initial = drain(&mut events);
        assert_eq!(initial.len(), 6);
        assert_eq!(initial.last(), Some(&CacheEvent::Initialized));
        // a/1 and a gone; b re-created with the same mzxid pattern; c written; d new
        let b2 = node("/r/b", 10, 10);
        let c2 = node("/r/c", 5, 11);
        let d = node("/r/d", 12, 12);
        shared.apply_tree(tree(&[r.clone(), b2.clone(), c2.clone(), d.clone()]));
        assert_eq!(
            drain(&mut events),
            vec![
                CacheEvent::Deleted(b.clone()),
                CacheEvent::Deleted(a1),
                CacheEvent::Deleted(a),
                CacheEvent::Created(b2.clone()),
                CacheEvent::Changed { old: c, new: c2.clone() },
                CacheEvent::Created(d.clone()),
                CacheEvent::Resynced { dropped: 0 },
            ]
        );
        assert_eq!(shared.snapshot(), tree(&[r, b2, c2, d]));
        assert_eq!(*shared.version().borrow(), 5 + 6);
    }

    #[test]
    fn reads_only_go_forward() {
        let shared = shared();
        let mut events = Box::pin(shared.subscribe());
        shared.apply_read("/r", Some(node("/r", 5, 7)));
        shared.apply_read("/r", Some(node("/r", 5, 6))); // older: ignored
        shared.apply_read("/r", Some(node("/r", 5, 7))); // same: ignored
        shared.apply_read("/r", Some(node("/r", 3, 3))); // an older incarnation: ignored
        shared.apply_read("/r", Some(node("/r", 9, 9))); // a newer one: deleted, created
        shared.apply_read("/r", None);
        assert_eq!(
            drain(&mut events),
            vec![
                CacheEvent::Created(node("/r", 5, 7)),
                CacheEvent::Deleted(node("/r", 5, 7)),
                CacheEvent::Created(node("/r", 9, 9)),
                CacheEvent::Deleted(node("/r", 9, 9)),
            ]
        );
        assert!(shared.snapshot().is_empty());
    }

    /// A cached node costs its struct, its path twice (the map's key and the node's) and its
    /// data.
    #[test]
    fn a_cached_node_is_small() {
        assert_eq!(std::mem::size_of::<CachedNode>(), 120);
    }

    #[test]
    fn child_names_are_direct_children_only() {
        let shared = shared();
        shared.apply_tree(tree(&[
            node("/r", 1, 1),
            node("/r/a", 2, 2),
            node("/r/a/x", 3, 3),
            node("/r/b", 4, 4),
            node("/ra", 5, 5),
        ]));
        assert_eq!(shared.child_names("/r"), vec!["a".to_string(), "b".to_string()]);
        assert_eq!(shared.child_names("/r/a"), vec!["x".to_string()]);
        assert!(shared.child_names("/r/b").is_empty());
    }
}
