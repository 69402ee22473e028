//! What the membership tests share: following a node's status, and the invariant every fault
//! must leave behind — exactly one node, ours, owned by the current session.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use zk_recipes::{Framework, NodeMode, NodeStatus, PersistentNode};
use zk_recipes_testing::fixtures::{self, eventually, within};

/// How long a node may take to be there again once a fault is over: a lost session is noticed
/// within the session timeout (4 s), a new one is built within the connection timeout (5 s)
/// plus the framework's backoff (≤ 2 s), then one create. 20 s leaves room for a busy machine.
pub const LIVENESS: Duration = Duration::from_secs(20);

pub fn unique_root() -> String {
    format!("/{}", fixtures::unique("membership"))
}

/// A node's status changes, as they come, and the ones seen so far.
pub struct Events {
    stream: Pin<Box<dyn Stream<Item = NodeStatus> + Send>>,
    pub seen: Vec<NodeStatus>,
}

impl Events {
    pub fn of(node: &PersistentNode) -> Self {
        Self { stream: Box::pin(node.events()), seen: Vec::new() }
    }

    /// Reads changes until one satisfies `pred` (within [`LIVENESS`]) and returns it.
    #[track_caller]
    pub fn until<'a>(
        &'a mut self,
        pred: impl Fn(&NodeStatus) -> bool + 'a,
    ) -> impl std::future::Future<Output = NodeStatus> + 'a {
        within(LIVENESS, async move {
            loop {
                let status = self.stream.next().await.expect("the status stream ended");
                self.seen.push(status.clone());
                if pred(&status) {
                    return status;
                }
            }
        })
    }

    /// Until the node exists (again); its path and czxid.
    pub async fn until_there(&mut self) -> (String, i64) {
        let status = self.until(|s| s.node().is_some()).await;
        let (path, czxid) = status.node().unwrap();
        (path.to_string(), czxid)
    }
}

/// The `_c_<uuid>-` prefix of a protected node's path.
pub fn protection_prefix(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap();
    name[..40].to_string()
}

/// The invariant at quiescence: the node reports that it exists, exactly one node is there for
/// it (one child with its prefix in the protected mode), with the reported czxid, and an
/// ephemeral one is owned by the framework's current session. Waits (within [`LIVENESS`]) for
/// it to hold; returns the node's path.
pub async fn exactly_one_ours(observer: &Framework, fw: &Framework, node: &PersistentNode) -> String {
    let found = Arc::new(std::sync::Mutex::new(String::new()));
    eventually(LIVENESS, format!("exactly one node for {}, ours", node.path()), || {
        let found = found.clone();
        async move {
            let Some((path, czxid)) = node.status().node().map(|(p, c)| (p.to_string(), c)) else { return false };
            let Ok(Some(stat)) = observer.exists(&path).await else { return false };
            let owner_ok = !node.mode().is_ephemeral() || stat.ephemeral_owner == fw.status().session_id;
            let unique = match node.mode() {
                NodeMode::ProtectedEphemeralSequential => {
                    let prefix = protection_prefix(&path);
                    let parent = &path[..path.rfind('/').unwrap()];
                    let children = observer.children(parent).await.unwrap_or_default();
                    children.iter().filter(|c| c.starts_with(&prefix)).count() == 1
                }
                _ => true,
            };
            *found.lock().unwrap() = path.clone();
            stat.czxid == czxid && owner_ok && unique && node.actual_path().as_deref() == Some(path.as_str())
        }
    })
    .await;
    let path = found.lock().unwrap().clone();
    path
}

/// Counts, until dropped, the most nodes with `prefix` seen at once under `parent` (listing it
/// every 20 ms): a protected node must never have two registrations.
pub struct Sampler {
    pub max: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    pub fn start(observer: &Framework, parent: &str, prefix: &str) -> Self {
        let (fw, parent, prefix) = (observer.clone(), parent.to_string(), prefix.to_string());
        let max = Arc::new(AtomicUsize::new(0));
        let seen = max.clone();
        let task = tokio::spawn(async move {
            loop {
                if let Ok(children) = fw.children(&parent).await {
                    seen.fetch_max(children.iter().filter(|c| c.starts_with(&prefix)).count(), Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        Self { max, task }
    }

    /// Checks that the registration, there now, was never seen twice (waiting for a sample
    /// that sees it, so that the check cannot pass without one).
    pub async fn never_two(&self) {
        eventually(LIVENESS, "a sample saw the registration", || async { self.max.load(Ordering::SeqCst) >= 1 }).await;
        assert_eq!(self.max.load(Ordering::SeqCst), 1, "never two registrations");
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A started node, created.
pub async fn started(fw: &Framework, path: &str, mode: NodeMode, data: &[u8]) -> PersistentNode {
    let node = PersistentNode::new(fw, path, mode, data.to_vec()).unwrap();
    node.start().await.unwrap();
    node.wait_for_initial_create(LIVENESS).await.unwrap();
    node
}
