//! The ONE lock engine: create our node (protected), list, sort, ask the driver, watch,
//! wait, repeat. Every lock, the semaphore, the leader latch and the atomic values' queue use
//! it.
//!
//! Performance points:
//! * The first create and the first listing go out together (one round trip): zookeeper-client
//!   orders requests when the future is created, so the listing sees our node.
//! * A release wakes the waiter right behind it (and at most a few near the head): no herd.
//! * Close to the head (fewer than `HAND_OFF_DEPTH` places), a sole-holder waiter watches every
//!   node before it; when they are all deleted it holds — no listing between a release and the
//!   next hold. Further back it watches its predecessor and a node `HAND_OFF_DEPTH` places
//!   ahead, and lists again when that one goes, while the nodes before it still hold: off the
//!   hand-off's path. Not behind a writer of the read-write lock: it may have downgraded,
//!   leaving a read node in its place.
//! * Behind a local holder, the hand-off needs no listing at all (`framework::holds`).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::{Client, CreateMode, Error as ZkError, EventType, OneshotWatcher, Stat};

use super::driver::{sort_children, Decision, Driver};
use crate::error::{Error, Result};
use crate::framework::holds::HoldEntry;
use crate::framework::listings::Listing;
use crate::framework::wait::{Wake, WatchSet};
use crate::framework::{paths, Framework, ProtectedName, SessionStatus};

/// What to contend for.
pub(crate) struct Request<'a> {
    /// The parent of the contender nodes.
    pub dir: &'a str,
    /// The node name after the protection prefix (`lock-`, `__READ__`, `lease-`, `latch-`).
    pub name: &'a str,
    /// Our node's data.
    pub data: &'a [u8],
    /// Who holds and what to watch.
    pub driver: &'a dyn Driver,
    /// Give up at this instant (`None`: wait as long as it takes).
    pub deadline: Option<Instant>,
    /// A node to read together with every listing (pipelined behind it): when that listing
    /// says we hold, the read shows every write our predecessors made before they let go, so
    /// the holder has it without another round trip ([`Acquired::prefetched`]). Such a
    /// contender lists on its own instead of sharing listings.
    pub prefetch: Option<&'a str>,
}

/// A node read pipelined behind the listing that made us the holder: its data and version, or
/// `None` when it does not exist.
pub(crate) type Prefetched = Option<(Vec<u8>, i32)>;

/// Our node, once it holds.
#[derive(Debug, Clone)]
pub(crate) struct Acquired {
    /// Full path of our node.
    pub path: String,
    /// Its stat at creation (`czxid` is the fencing token).
    pub stat: Stat,
    /// The framework's status when we started holding.
    pub status: SessionStatus,
    /// Our node marked as held by the queue's sole head, for local waiters (see
    /// `framework::holds`), while the hold lives.
    pub mark: Option<Arc<HoldEntry>>,
    /// The [`Request::prefetch`] read, when a listing decided that we hold.
    pub prefetched: Option<Prefetched>,
    /// Whether we waited for anyone (false: we held at our first listing).
    pub waited: bool,
}

/// Deletes our node if the acquire is abandoned (cancelled, timed out, failed) before it is
/// handed to a guard: by path when we know it, else by the protection prefix.
struct Pending<'a> {
    fw: &'a Framework,
    name: &'a ProtectedName,
    node: Option<(String, i64)>,
    armed: bool,
}

impl Pending<'_> {
    fn forget_node(&mut self) {
        self.node = None;
        self.armed = false;
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match self.node.take() {
            Some((path, owner)) => self.fw.delete_in_background(path, Some(owner)),
            None => self.fw.delete_protected_in_background(self.name.clone()),
        }
    }
}

/// Contends until we hold (`Some`), the deadline passes (`None`, our node deleted), or an
/// error. Cancel safe: dropping the future at any await point leaves no node behind.
pub(crate) async fn acquire(fw: &Framework, req: &Request<'_>) -> Result<Option<Acquired>> {
    let name = ProtectedName::new(req.dir, req.name);
    // known as local from before its create until it holds; its mark takes over then (`take`)
    let _contender = fw.inner.holds.contender(name.prefix());
    let mut pending = Pending { fw, name: &name, node: None, armed: false };
    let started = Instant::now();
    let mut recreations = 0u32;
    let mut first = true;
    let mut waited = false;
    'create: loop {
        let (node, mut listing) = create_node(fw, req, &name, &mut pending, std::mem::take(&mut first)).await?;
        let our_name = paths::node_name(&node.path).to_string();
        let owner = node.stat.ephemeral_owner;
        loop {
            let Some((current, prefetched)) = listing.take() else {
                // lost sync with the list: list again
                listing = Some(relist(fw, req).await?);
                continue;
            };
            let sorted = current.sorted(req.driver.lock_names(), sort_children);
            drop(current);
            let status = fw.status();
            let decision =
                if status.session_id != owner { Decision::Missing } else { req.driver.decide(&sorted, &our_name) };
            // the listing is not kept while waiting: with N waiters that would be O(N²) memory
            // (a listing shared with other local waiters goes when the last one is done with it)
            drop(sorted);
            // the watchers (the watched nodes first, then the node ahead), and how many of the
            // watched nodes are still there
            let (mut watchers, then_acquired, after_holder, live) = match decision {
                Decision::Acquired => {
                    let mut acquired = take(fw, req, &mut pending, node, status, waited);
                    acquired.prefetched = prefetched;
                    return Ok(Some(acquired));
                }
                Decision::Missing => {
                    if status.session_id != owner {
                        // a node of an older session may linger until the server expires it
                        let old = pending.node.take();
                        if let Some((path, _)) = old {
                            fw.delete_in_background(path, None);
                        }
                    }
                    pending.forget_node();
                    let lost = ZkError::NoNode;
                    if fw.inner.cfg.retry.allow_retry(recreations, started.elapsed(), &lost).is_none() {
                        return Err(Error::LockLost(format!("our node {} vanished while waiting", node.path)));
                    }
                    recreations += 1;
                    tracing::debug!(path = %node.path, "our contender node vanished: creating it again");
                    continue 'create;
                }
                Decision::Watch { nodes, then_acquired, ahead } => {
                    waited = true;
                    let watched: Vec<String> = nodes.iter().map(|n| paths::join(req.dir, n)).collect();
                    // registered before the watch: a local holder marks it before it deletes it
                    let after_holder = match &nodes[..] {
                        [only] if req.driver.holds_after_holder(only) => Some(fw.inner.holds.watch(&watched[0])),
                        _ => None,
                    };
                    // behind a local node no early listing is needed: it marks itself as it holds
                    let local = after_holder.is_some() && fw.inner.holds.is_local(&watched[0]);
                    let ahead = ahead.filter(|_| !local).map(|a| paths::join(req.dir, &a));
                    let (live, early) = watch_nodes(fw, &watched, ahead.as_deref()).await?;
                    let handed_over = then_acquired || after_holder.as_ref().is_some_and(|a| a.was_held());
                    match (live.len(), early) {
                        (0, _) if handed_over => {
                            return Ok(Some(take(fw, req, &mut pending, node, fw.status(), waited)))
                        }
                        // what we watch is gone, or the node ahead: list again now
                        (0, _) | (_, Some(None)) => continue,
                        (n, early) => {
                            (WatchSet::new(live.into_iter().chain(early.flatten())), then_acquired, after_holder, n)
                        }
                    }
                }
                Decision::WatchChildren => {
                    waited = true;
                    let (list, watcher) = list_and_watch_children(fw, req.dir).await?;
                    let list = Arc::new(Listing::new(list));
                    let check = list.sorted(req.driver.lock_names(), sort_children);
                    if req.driver.decide(&check, &our_name) != Decision::WatchChildren {
                        listing = Some((list, None));
                        continue;
                    }
                    match watcher {
                        Some(w) => (WatchSet::new([w]), false, None, 1),
                        None => continue,
                    }
                }
            };
            let mut remaining = live;
            loop {
                match watchers.wait(fw, req.deadline, owner).await {
                    // a watched node is gone; when they all are and they were everything before
                    // us (known from our listing, or the one marked by its local holder), we
                    // are the head now
                    (Wake::Event(EventType::NodeDeleted), Some(i))
                        if i < live && (then_acquired || after_holder.as_ref().is_some_and(|a| a.was_held())) =>
                    {
                        remaining -= 1;
                        if remaining > 0 {
                            continue;
                        }
                        let status = fw.status();
                        if status.session_id == owner {
                            return Ok(Some(take(fw, req, &mut pending, node, status, waited)));
                        }
                    }
                    (Wake::Deadline, _) => {
                        let path = node.path.clone();
                        pending.forget_node();
                        if let Err(e) = fw.delete_guaranteed(&path).await {
                            tracing::debug!(%path, error = %e, "delete after timeout continues in the background");
                        }
                        return Ok(None);
                    }
                    // any other change (the node ahead went: those before us likely hold now)
                    _ => {}
                }
                break;
            }
            listing = Some(relist(fw, req).await?);
        }
    }
}

/// Creates one protected node (any mode) cancel-safely: if the future is dropped, whatever
/// was created is deleted in the background.
pub(crate) async fn create_owned(
    fw: &Framework,
    dir: &str,
    name: &str,
    data: &[u8],
    mode: CreateMode,
) -> Result<crate::framework::CreatedNode> {
    let protected = ProtectedName::new(dir, name);
    let mut pending = Pending { fw, name: &protected, node: None, armed: true };
    let node = fw.create_protected_name(&protected, data, mode, false).await?;
    pending.forget_node();
    Ok(node)
}

fn take(
    fw: &Framework,
    req: &Request<'_>,
    pending: &mut Pending<'_>,
    node: crate::framework::CreatedNode,
    status: SessionStatus,
    waited: bool,
) -> Acquired {
    pending.forget_node();
    let mark = req.driver.sole_holder().then(|| Arc::new(fw.inner.holds.mark_held(&node.path)));
    Acquired { path: node.path, stat: node.stat, status, mark, prefetched: None, waited }
}

/// A listing and what comes with it: the [`Request::prefetch`] read, when asked for.
type Listed = (Arc<Listing>, Option<Prefetched>);

/// Creates our node; on the first attempt together with the listing (one round trip).
async fn create_node(
    fw: &Framework,
    req: &Request<'_>,
    name: &ProtectedName,
    pending: &mut Pending<'_>,
    pipelined: bool,
) -> Result<(crate::framework::CreatedNode, Option<Listed>)> {
    const MODE: CreateMode = CreateMode::EphemeralSequential;
    let mut maybe_created = false;
    if pipelined && fw.wait_connected(Duration::ZERO).await.is_ok() {
        let client: Client = fw.client()?;
        let options = fw.create_options(MODE);
        let path = name.path();
        pending.armed = true;
        let create = || client.create(&path, req.data, &options);
        let (created, listed) = match req.prefetch {
            // our own listing and read, pipelined behind our create
            Some(read) => {
                let create = create();
                let (created, listed) = tokio::join!(create, list_and_read(&client, req.dir, read));
                (created, listed.map(|(l, p)| (l, Some(p))))
            }
            // a listing sent after our create: ours, pipelined behind it, or one shared with
            // the local contenders that asked while another listing was in flight
            None => {
                let (create, list) = fw.inner.listings.after(&client, req.dir, create);
                let (created, listed) = tokio::join!(create, list);
                (created, listed.map(|l| (l, None)))
            }
        };
        match created {
            Ok((stat, sequence)) => {
                let node = crate::framework::CreatedNode { path: format!("{path}{sequence}"), stat };
                pending.node = Some((node.path.clone(), stat.ephemeral_owner));
                return Ok((node, listed.ok()));
            }
            Err(ZkError::NoNode) => {}
            Err(e) if crate::framework::is_retryable(&e) => maybe_created = true,
            Err(e) => return Err(e.into()),
        }
    }
    pending.armed = true;
    let node = fw.create_protected_name(name, req.data, MODE, maybe_created).await?;
    pending.node = Some((node.path.clone(), node.stat.ephemeral_owner));
    Ok((node, None))
}

/// A listing of the request's directory sent after this call: shared with the other local
/// contenders, or our own with the prefetch read pipelined behind it.
async fn relist(fw: &Framework, req: &Request<'_>) -> Result<Listed> {
    let (dir, listings) = (req.dir, &fw.inner.listings);
    match req.prefetch {
        Some(read) => {
            let (listing, data) = fw.retry(|client| async move { list_and_read(&client, dir, read).await }).await?;
            Ok((listing, Some(data)))
        }
        None => fw.retry(|client| async move { listings.list(&client, dir).await }).await.map(|l| (l, None)),
    }
}

/// Lists `dir` and reads `read` behind it, in one round trip.
async fn list_and_read(
    client: &Client,
    dir: &str,
    read: &str,
) -> std::result::Result<(Arc<Listing>, Prefetched), ZkError> {
    // requests go out in the order their futures are made: the read after the listing
    let (listed, data) = tokio::join!(client.list_children(dir), client.get_data(read));
    let children = unless_gone(listed)?.unwrap_or_default();
    let data = unless_gone(data)?.map(|(data, stat)| (data, stat.version));
    Ok((Arc::new(Listing::new(children)), data))
}

/// Our own listing of `dir` with a children watch (the semaphore's wait).
async fn list_and_watch_children(fw: &Framework, dir: &str) -> Result<(Vec<String>, Option<OneshotWatcher>)> {
    fw.retry(|client| async move {
        let listed = unless_gone(client.list_and_watch_children(dir).await)?;
        Ok(listed.map_or((Vec::new(), None), |(list, watcher)| (list, Some(watcher))))
    })
    .await
}

/// `NoNode` as `None`: the node is gone, or was never there.
fn unless_gone<T>(result: std::result::Result<T, ZkError>) -> std::result::Result<Option<T>, ZkError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(ZkError::NoNode) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Data watches on `paths` (Curator uses `getData` so that no watch is left on a missing
/// node), and on `ahead` when given, all in one round trip: the watchers of the nodes still
/// there, and `ahead`'s (`Some(None)`: it is gone).
async fn watch_nodes(
    fw: &Framework,
    paths: &[String],
    ahead: Option<&str>,
) -> Result<(Vec<OneshotWatcher>, Option<Option<OneshotWatcher>>)> {
    let watcher = |r| unless_gone(r).map(|w: Option<(Vec<u8>, Stat, OneshotWatcher)>| w.map(|(_, _, w)| w));
    fw.retry(|client| async move {
        // every request goes out before any answer is awaited
        let watched: Vec<_> = paths.iter().map(|p| client.get_and_watch_data(p)).collect();
        let early = ahead.map(|a| client.get_and_watch_data(a));
        let mut live = Vec::with_capacity(watched.len());
        for w in watched {
            live.extend(watcher(w.await)?);
        }
        let early = match early {
            Some(early) => Some(watcher(early.await)?),
            None => None,
        };
        Ok((live, early))
    })
    .await
}
