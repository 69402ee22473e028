//! What the cache tests share: reading a tree directly, replaying events into a map, waiting
//! for events.

use std::collections::BTreeMap;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use futures_util::{Stream, StreamExt};
use zk_recipes::zk::Acls;
use zk_recipes::CreateMode;
use zk_recipes::{Cache, CacheEvent, CachedNode, Error, Framework};
use zk_recipes_testing::{fixtures, refusing, RefusingProxy};

pub const WAIT: Duration = Duration::from_secs(20);

/// Writes a test taking the cache's `WatchMode` once and runs it twice, as `NAME::persistent`
/// and `NAME::one_shot`: every cache test holds for both watch sources.
macro_rules! both_modes {
    ($(#[$attr:meta])* async fn $name:ident($mode:ident: WatchMode) $body:block) => {
        $(#[$attr])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn persistent() {
                test(zk_recipes::cache::WatchMode::Persistent).await
            }

            #[tokio::test]
            async fn one_shot() {
                test(zk_recipes::cache::WatchMode::OneShot).await
            }

            async fn test($mode: zk_recipes::cache::WatchMode) {
                assert!(matches!($mode, zk_recipes::cache::WatchMode::Persistent | zk_recipes::cache::WatchMode::OneShot));
                $body
            }
        }
    };
}

/// What is compared of a node: data, version, czxid, mzxid.
pub type View = BTreeMap<String, (Option<Vec<u8>>, i32, i64, i64)>;

pub fn view_of(nodes: &BTreeMap<String, CachedNode>) -> View {
    nodes.iter().map(|(p, n)| (p.clone(), (n.data.clone(), n.stat.version, n.stat.czxid, n.stat.mzxid))).collect()
}

/// The subtree at `root` read directly, node by node, down to `max_depth` (`None`: all).
pub async fn read_tree(fw: &Framework, root: &str, max_depth: Option<usize>) -> View {
    let mut out = View::new();
    let mut stack = vec![(root.to_string(), 0usize)];
    while let Some((path, depth)) = stack.pop() {
        let (data, stat) = match fw.get_data(&path).await {
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => continue,
            other => other.unwrap(),
        };
        out.insert(path.clone(), (Some(data), stat.version, stat.czxid, stat.mzxid));
        if max_depth.is_some_and(|m| depth >= m) {
            continue;
        }
        let children = match fw.children(&path).await {
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => continue,
            other => other.unwrap(),
        };
        for c in children {
            stack.push((format!("{}/{c}", path.trim_end_matches('/')), depth + 1));
        }
    }
    out
}

/// Creates `path` (its parent must exist) as a persistent node.
pub async fn mk(fw: &Framework, path: &str, data: &[u8]) {
    fw.create(path, data, CreateMode::Persistent).await.unwrap();
}

/// Creates `count` children `n0..` under `parent` with pipelined requests.
pub async fn mk_many(fw: &Framework, parent: &str, count: usize) {
    let client = fw.client().unwrap();
    let options = zk_recipes::zk::CreateMode::Persistent.with_acls(Acls::anyone_all());
    let paths: Vec<String> = (0..count).map(|i| format!("{parent}/n{i}")).collect();
    let creates: Vec<_> = paths.iter().map(|p| client.create(p, b"v", &options)).collect();
    for created in futures_util::future::join_all(creates).await {
        created.unwrap();
    }
}

/// Deletes `path` and everything below it.
pub async fn rm_rf(fw: &Framework, path: &str) {
    let mut stack = vec![path.to_string()];
    let mut order = Vec::new();
    while let Some(p) = stack.pop() {
        for c in fw.children(&p).await.unwrap_or_default() {
            stack.push(format!("{p}/{c}"));
        }
        order.push(p);
    }
    for p in order.into_iter().rev() {
        fw.delete(&p).await.unwrap();
    }
}

/// A subscriber's events replayed into a map, with every event kept.
pub struct Replay<S> {
    pub events: S,
    pub map: BTreeMap<String, CachedNode>,
    pub seen: Vec<CacheEvent>,
}

impl<S: Stream<Item = CacheEvent> + Unpin> Replay<S> {
    pub fn new(events: S) -> Self {
        Self { events, map: BTreeMap::new(), seen: Vec::new() }
    }

    /// The next event, applied to the map.
    pub async fn next(&mut self) -> CacheEvent {
        let event = fixtures::within(WAIT, self.events.next()).await.expect("the stream is open");
        match &event {
            CacheEvent::Created(n) => {
                assert!(self.map.insert(n.path.clone(), n.clone()).is_none(), "created twice: {n:?}");
            }
            CacheEvent::Changed { old, new } => {
                let prev = self.map.insert(new.path.clone(), new.clone());
                assert_eq!(prev.as_ref(), Some(old), "changed from what was reported");
                assert!(new.stat.mzxid > old.stat.mzxid, "mzxid goes forward: {old:?} -> {new:?}");
            }
            CacheEvent::Deleted(n) => {
                assert_eq!(self.map.remove(&n.path).as_ref(), Some(n), "deleted what was reported");
            }
            _ => {}
        }
        self.seen.push(event.clone());
        event
    }

    /// Events until one matches `stop` (returned).
    pub async fn until(&mut self, stop: impl Fn(&CacheEvent) -> bool) -> CacheEvent {
        loop {
            let event = self.next().await;
            if stop(&event) {
                return event;
            }
        }
    }

    /// Events until the replayed map equals `want`.
    pub async fn until_view(&mut self, want: &View) {
        while view_of(&self.map) != *want {
            self.next().await;
        }
    }

    pub fn view(&self) -> View {
        view_of(&self.map)
    }
}

/// A started cache with its first subscriber, after `Initialized`.
pub async fn started(cache: Cache) -> (Cache, Replay<impl Stream<Item = CacheEvent> + Unpin>) {
    let mut replay = Replay::new(Box::pin(cache.events()));
    cache.start().await.unwrap();
    replay.until(|e| *e == CacheEvent::Initialized).await;
    (cache, replay)
}

/// Waits until the cache equals the tree read directly, and returns that view.
pub async fn converged(cache: &Cache, fw: &Framework, root: &str, max_depth: Option<usize>) -> View {
    let want = std::cell::RefCell::new(View::new());
    fixtures::eventually(WAIT, "the cache equals the tree", || async {
        let tree = read_tree(fw, root, max_depth).await;
        let same = view_of(&cache.snapshot()) == tree;
        *want.borrow_mut() = tree;
        same
    })
    .await;
    want.into_inner()
}

pub fn unique_root() -> String {
    format!("/{}", fixtures::unique("cache"))
}

/// A proxy to `upstream` that makes it look like a ZooKeeper server before 3.6 (see
/// [`RefusingProxy`]): `addWatch` is refused with `Unimplemented`, then the connection closes.
pub async fn server_without_add_watch(upstream: &str) -> RefusingProxy {
    RefusingProxy::start(upstream, &[refusing::ADD_WATCH]).await.unwrap()
}
