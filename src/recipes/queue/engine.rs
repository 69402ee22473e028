//! The one engine of every queue kind: puts (with back-pressure), and takes that list the
//! children once, work through the listing, and wait on a children watch (and on the lock
//! nodes of items another consumer holds) when nothing can be taken. The kinds differ only in
//! their [`Layout`] (names and order) and framing.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::FutureExt;
use tokio::time::Instant;
use zookeeper_client::{Client, CreateMode, Error as ZkError, OneshotWatcher, Stat};

use super::framing::check_size;
use super::naming::Layout;
use crate::error::{Error, Result};
use crate::framework::wait::{Wake, WatchSet};
use crate::framework::{paths, Framework, IfExists, TxnResult};
use crate::recipes::locks::engine::Acquired;
use crate::HeldNode;

/// How a consumer takes an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Deleted, then handed over: at most once.
    AtMostOnce,
    /// Locked and handed over; deleted once processed (see `Delivery`): at least once.
    Safe,
}

/// An item node taken (at most once: already deleted) or held (safe: locked).
#[derive(Debug)]
pub(crate) struct Taken {
    /// The item node's full path.
    pub path: String,
    /// Its data.
    pub data: Vec<u8>,
    /// Its version when read (the delete checks it).
    pub version: i32,
    /// The lock on it (safe mode).
    pub hold: Option<ItemLock>,
}

/// Our lock node on an item (safe mode), and the client of the session that created it.
///
/// Lock nodes are named after their item, so another consumer's lock on the same item has
/// the same path once ours is gone: ours is released through the client of its own session
/// only, whose requests fail once that session is over, and never deletes theirs.
#[derive(Debug)]
pub(crate) struct ItemLock {
    pub hold: HeldNode,
    client: Client,
}

impl ItemLock {
    /// Deletes our lock node in the background (retried while our session lives).
    pub(crate) fn release(&self) {
        let (fw, client, path) = (self.hold.framework().clone(), self.client.clone(), self.hold.path().to_string());
        self.hold.framework().runtime().spawn(async move {
            let outcome = fw
                .retry(|_| {
                    let (client, path) = (client.clone(), path.clone());
                    async move {
                        match client.delete(&path, None).await {
                            // gone, or gone with its session
                            Ok(()) | Err(ZkError::NoNode | ZkError::SessionExpired | ZkError::ClientClosed) => Ok(()),
                            Err(e) => Err(e),
                        }
                    }
                })
                .await;
            if let Err(e) = outcome {
                tracing::debug!(%path, error = %e, "queue lock release: left to the session's end");
            }
        });
    }
}

/// The outcome of trying one listed item.
enum Tried {
    Taken(Box<Taken>),
    /// Gone: another consumer took it.
    Gone,
    /// Another consumer holds its lock; the watch fires when the lock goes.
    Locked(OneshotWatcher),
    /// Its lock node vanished before we could watch it: try it again.
    Again,
}

type Fired = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What a consumer learned from its last listing.
#[derive(Default)]
struct Cursor {
    /// Items of the last listing, in order, not tried yet.
    pending: VecDeque<String>,
    /// The last listing's children watch (layouts whose head can change under us).
    changed: Option<Fired>,
    /// Items found locked since the last listing, with a watch on their lock node.
    locked: Vec<(String, OneshotWatcher)>,
    /// Items in a row found gone (taken by other consumers) since the last one we took.
    misses: u32,
}

/// The byte-level queue at one path.
pub(crate) struct Engine {
    pub fw: Framework,
    pub dir: String,
    /// Where consumers lock the items they take (none for the simple queue).
    pub locks: Option<String>,
    pub layout: Layout,
    pub max_items: Option<usize>,
    dirs_ready: AtomicBool,
    cursor: tokio::sync::Mutex<Cursor>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("dir", &self.dir).field("locks", &self.locks).finish_non_exhaustive()
    }
}

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Cursor {
    /// After losing an item to another consumer: skip a random number of the next items, up
    /// to twice as many after each miss in a row, so that consumers working through the same
    /// listing spread out, and one that runs into a stretch others have taken crosses it in a
    /// few probes, not one per item. Skipped items are not lost: the next listing has those
    /// still there. A single consumer never misses, so its order is the listing's.
    fn missed(&mut self) {
        self.misses = (self.misses + 1).min(16);
        let skip = fastrand::usize(0..1 << self.misses).min(self.pending.len());
        self.pending.drain(..skip);
    }
}

impl Engine {
    pub(crate) fn new(
        fw: &Framework,
        dir: &str,
        locks: Option<String>,
        layout: Layout,
        max_items: Option<usize>,
    ) -> Result<Self> {
        paths::validate_recipe_path(dir)?;
        if let Some(locks) = &locks {
            paths::validate_recipe_path(locks)?;
            if locks == dir || locks.starts_with(&format!("{dir}/")) {
                return Err(Error::InvalidArgument(format!("the lock path {locks:?} must not be inside the queue")));
            }
        }
        if max_items == Some(0) {
            return Err(Error::InvalidArgument("max_items must be at least 1".into()));
        }
        Ok(Self {
            fw: fw.clone(),
            dir: dir.to_string(),
            locks,
            layout,
            max_items,
            dirs_ready: AtomicBool::new(false),
            cursor: tokio::sync::Mutex::new(Cursor::default()),
        })
    }

    /// Creates the queue's node (persistent, as Curator's `DistributedQueue.start()`; a
    /// container for the simple queue, as Curator's `SimpleDistributedQueue`) and the lock
    /// path, once per handle or again when `force` (found missing).
    async fn ensure_dirs(&self, force: bool) -> Result<()> {
        if !force && self.dirs_ready.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mode = if self.layout == Layout::Simple { CreateMode::Container } else { CreateMode::Persistent };
        for dir in std::iter::once(&self.dir).chain(self.locks.as_ref()) {
            match self.fw.create(dir, &[], mode).await {
                Ok(_) | Err(Error::ZooKeeper(ZkError::NodeExists)) => {}
                Err(e) => return Err(e),
            }
        }
        self.dirs_ready.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Creates one item node per entry of `items` (`(name prefix, data)`), all in one
    /// transaction (applied exactly once, also after a lost reply), once the queue has room;
    /// the created paths, in order.
    pub(crate) async fn put(&self, items: Vec<(String, Vec<u8>)>, timeout: Option<Duration>) -> Result<Vec<String>> {
        // each node's data, and a transaction of several creates as a whole (names and
        // per-operation overhead included), must stay below the request limit
        for (_, data) in &items {
            check_size(data.len())?;
        }
        if items.len() > 1 {
            check_size(items.iter().map(|(name, data)| name.len() + data.len() + 16).sum())?;
        }
        if let Some((_, _)) = items.iter().find(|(_, data)| data.is_empty()) {
            return Err(Error::InvalidArgument("an empty queue item".into()));
        }
        if items.is_empty() {
            return Ok(Vec::new());
        }
        self.wait_for_room(timeout).await?;
        self.ensure_dirs(false).await?;
        let mut forced = false;
        loop {
            let txn = items.iter().fold(self.fw.transaction(), |txn, (name, data)| {
                txn.create(&paths::join(&self.dir, name), data, CreateMode::PersistentSequential)
            });
            match txn.commit().await {
                Ok(results) => {
                    let created = results.into_iter().filter_map(|r| match r {
                        TxnResult::Create { path, .. } => Some(path),
                        _ => None,
                    });
                    return Ok(created.collect());
                }
                // the queue's node vanished (a container reaped, a delete): make it again
                Err(Error::Transaction { source: ZkError::NoNode, .. }) if !forced => {
                    forced = true;
                    self.ensure_dirs(true).await?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits until the queue holds fewer than `max_items` item nodes (at once without a bound).
    /// Several producers may pass together: the bound is soft, as Curator's.
    async fn wait_for_room(&self, timeout: Option<Duration>) -> Result<()> {
        let Some(max) = self.max_items else { return Ok(()) };
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let session = self.fw.status().session_id;
            let dir = self.dir.as_str();
            let full = self
                .fw
                .retry(|client| async move {
                    // the stat's child count is cheap; list (with a watch) only when full
                    match client.check_stat(dir).await? {
                        Some(stat) if (stat.num_children as usize) < max => return Ok(None),
                        None => return Ok(None),
                        Some(_) => {}
                    }
                    let (children, watcher) = client.list_and_watch_children(dir).await?;
                    let items = children.iter().filter(|c| self.layout.is_item(c)).count();
                    Ok((items >= max).then_some(watcher))
                })
                .await;
            let watcher = match full.if_exists()? {
                Some(Some(watcher)) => watcher,
                _ => return Ok(()),
            };
            if WatchSet::new([watcher]).wait(&self.fw, deadline, session).await.0 == Wake::Deadline {
                return Err(Error::Timeout(timeout.unwrap_or_default()));
            }
        }
    }

    /// The item names, in order (none when the queue's node is missing).
    pub(crate) async fn items(&self) -> Result<Vec<String>> {
        let mut names = self.fw.children_or_empty(&self.dir).await?;
        names.retain(|n| self.layout.is_item(n));
        self.layout.sort(&mut names);
        Ok(names)
    }

    /// The item names in order and a watch on the children; the queue's node is made when
    /// missing.
    async fn list_watched(&self) -> Result<(Vec<String>, OneshotWatcher)> {
        loop {
            let dir = self.dir.as_str();
            let listed = self.fw.retry(|client| async move { client.list_and_watch_children(dir).await }).await;
            match listed.if_exists()? {
                Some((mut names, watcher)) => {
                    names.retain(|n| self.layout.is_item(n));
                    self.layout.sort(&mut names);
                    return Ok((names, watcher));
                }
                None => self.ensure_dirs(true).await?,
            }
        }
    }

    /// Takes the next item in `mode`, waiting until one can be taken or `deadline` passes
    /// (`None` then).
    pub(crate) async fn take(self: &Arc<Self>, mode: Mode, deadline: Option<Instant>) -> Result<Option<Taken>> {
        if mode == Mode::Safe && self.locks.is_none() {
            return Err(Error::Unsupported("this queue has no lock path: safe takes need one"));
        }
        self.ensure_dirs(false).await?;
        loop {
            let next = self.next_pending().await;
            if let Some(name) = next {
                let tried = match mode {
                    Mode::AtMostOnce => self.try_take(&name, mode).await?,
                    Mode::Safe => self.try_take_detached(&name).await?,
                };
                match tried {
                    Tried::Taken(taken) => {
                        self.cursor.lock().await.misses = 0;
                        return Ok(Some(*taken));
                    }
                    Tried::Gone => self.cursor.lock().await.missed(),
                    Tried::Again => self.cursor.lock().await.pending.push_front(name),
                    Tried::Locked(watcher) => self.cursor.lock().await.locked.push((name, watcher)),
                }
                continue;
            }
            let session = self.fw.status().session_id;
            let (names, watcher) = self.list_watched().await?;
            let mut cursor = self.cursor.lock().await;
            let locked: HashSet<String> = cursor.locked.iter().map(|(n, _)| n.clone()).collect();
            let now = now_ms();
            let mut visible_from = None;
            let mut pending = VecDeque::new();
            for name in names.into_iter().filter(|n| !locked.contains(n)) {
                match self.layout.visible_at(&name) {
                    Some(at) if at > now => visible_from = Some(visible_from.map_or(at, |v: u64| v.min(at))),
                    _ => pending.push_back(name),
                }
            }
            if !pending.is_empty() {
                cursor.pending = pending;
                cursor.changed =
                    self.layout.refresh_on_change().then(|| Box::pin(watcher.changed().map(drop)) as Fired);
                continue;
            }
            // nothing to take: wait for a change, a lock to go, an item's time, or the deadline
            let lock_watches = std::mem::take(&mut cursor.locked).into_iter().map(|(_, w)| w);
            drop(cursor);
            let visible = visible_from.map(|at| Instant::now() + Duration::from_millis(at.saturating_sub(now_ms())));
            let wake_at = match (deadline, visible) {
                (Some(d), Some(v)) => Some(d.min(v)),
                (d, v) => d.or(v),
            };
            let mut watches = WatchSet::new(std::iter::once(watcher).chain(lock_watches));
            let (wake, _) = watches.wait(&self.fw, wake_at, session).await;
            if wake == Wake::Deadline && deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
        }
    }

    /// The next item of the last listing to try, if it is still worth trying.
    async fn next_pending(&self) -> Option<String> {
        let mut cursor = self.cursor.lock().await;
        if let Some(changed) = cursor.changed.as_mut() {
            if changed.now_or_never().is_some() {
                // the head may have changed: list again
                cursor.changed = None;
                cursor.pending.clear();
            }
        }
        cursor.pending.pop_front()
    }

    /// [`try_take`](Self::try_take) in safe mode, run to its end in a task of its own: when
    /// the caller is gone by then, a lock it took is released, never left behind.
    async fn try_take_detached(self: &Arc<Self>, name: &str) -> Result<Tried> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (engine, name) = (self.clone(), name.to_string());
        self.fw.runtime().spawn(async move {
            let tried = engine.try_take(&name, Mode::Safe).await;
            if let Err(Ok(Tried::Taken(taken))) = tx.send(tried) {
                if let Some(lock) = &taken.hold {
                    lock.release();
                }
            }
        });
        rx.await.unwrap_or(Err(Error::Closed))
    }

    /// Tries to take the item `name`.
    async fn try_take(&self, name: &str, mode: Mode) -> Result<Tried> {
        let path = paths::join(&self.dir, name);
        match mode {
            Mode::AtMostOnce => {
                let Some((data, stat)) = self.fw.get_data(&path).await.if_exists()? else { return Ok(Tried::Gone) };
                match self.delete_item(name, Some(stat.version)).await? {
                    Deleted::Yes => Ok(Tried::Taken(Box::new(Taken { path, data, version: stat.version, hold: None }))),
                    Deleted::Gone => Ok(Tried::Gone),
                    Deleted::Locked => self.watch_lock(name).await,
                }
            }
            Mode::Safe => {
                let Some(hold) = self.lock_item(name).await? else { return self.watch_lock(name).await };
                match self.fw.get_data(&path).await.if_exists()? {
                    Some((data, stat)) => {
                        Ok(Tried::Taken(Box::new(Taken { path, data, version: stat.version, hold: Some(hold) })))
                    }
                    None => {
                        hold.release();
                        Ok(Tried::Gone)
                    }
                }
            }
        }
    }

    /// An exists watch on the lock of `name` (held by another consumer).
    async fn watch_lock(&self, name: &str) -> Result<Tried> {
        let Some(locks) = &self.locks else { return Ok(Tried::Gone) };
        let lock = paths::join(locks, name);
        let lock = lock.as_str();
        let (stat, watcher) = self.fw.retry(|client| async move { client.check_and_watch_stat(lock).await }).await?;
        Ok(if stat.is_some() { Tried::Locked(watcher) } else { Tried::Again })
    }

    /// Deletes the item `name` (at `version`) unless another consumer holds its lock: one
    /// transaction that creates our lock node, deletes it again and deletes the item — so
    /// that a consumer holding the lock (ours in safe mode, Curator's lock-safe consumers)
    /// keeps it. Applied exactly once, also after a lost reply.
    pub(crate) async fn delete_item(&self, name: &str, version: Option<i32>) -> Result<Deleted> {
        let path = paths::join(&self.dir, name);
        let mut forced = false;
        loop {
            let mut txn = self.fw.transaction();
            let lock = self.locks.as_ref().map(|locks| paths::join(locks, name));
            if let Some(lock) = &lock {
                txn = txn.create(lock, self.fw.default_data(), CreateMode::Ephemeral).delete(lock, None);
            }
            let guarded = usize::from(lock.is_some()) * 2;
            match txn.delete(&path, version).commit().await {
                Ok(_) => return Ok(Deleted::Yes),
                Err(Error::Transaction { index, source, .. }) => match (index < guarded, source) {
                    (true, ZkError::NodeExists) => return Ok(Deleted::Locked),
                    (true, ZkError::NoNode) if !forced => {
                        // the lock path is missing: make it, and try again
                        forced = true;
                        self.ensure_dirs(true).await?;
                    }
                    (false, ZkError::NoNode | ZkError::BadVersion) => return Ok(Deleted::Gone),
                    (_, source) => return Err(Error::ZooKeeper(source)),
                },
                Err(e) => return Err(e),
            }
        }
    }

    /// Creates our lock node on the item `name` (`None`: another consumer holds it).
    async fn lock_item(&self, name: &str) -> Result<Option<ItemLock>> {
        let Some(locks) = &self.locks else { return Ok(None) };
        let lock = paths::join(locks, name);
        let data = self.fw.default_data();
        let mut forced = false;
        loop {
            let status = self.fw.status();
            let lock = lock.as_str();
            let created = self
                .fw
                .retry(|client| async move {
                    let options = self.fw.create_options(CreateMode::Ephemeral);
                    let stat = match client.create(lock, data, &options).await {
                        Ok((stat, _)) => Some(stat),
                        // ours when a lost reply made us send the create again
                        Err(ZkError::NodeExists) => {
                            client.check_stat(lock).await?.filter(|stat| stat.ephemeral_owner == client.session_id().0)
                        }
                        Err(e) => return Err(e),
                    };
                    Ok(stat.map(|stat| (stat, client)))
                })
                .await;
            let (stat, client): (Stat, Client) = match created {
                Ok(Some(created)) => created,
                Ok(None) => return Ok(None),
                Err(Error::ZooKeeper(ZkError::NoNode)) if !forced => {
                    forced = true;
                    self.ensure_dirs(true).await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let acquired =
                Acquired { path: lock.to_string(), stat, status, mark: None, prefetched: None, waited: false };
            let held = ItemLock { hold: HeldNode::new(&self.fw, acquired, false), client };
            if stat.ephemeral_owner != status.session_id {
                // created in a newer session than the status we would hold it under: start over
                held.release();
                continue;
            }
            return Ok(Some(held));
        }
    }

    /// The first item that can be read, without taking it.
    pub(crate) async fn peek(&self) -> Result<Option<(String, Vec<u8>)>> {
        let now = now_ms();
        for name in self.items().await? {
            if self.layout.visible_at(&name).is_some_and(|at| at > now) {
                continue;
            }
            let path = paths::join(&self.dir, &name);
            if let Some((data, _)) = self.fw.get_data(&path).await.if_exists()? {
                return Ok(Some((path, data)));
            }
        }
        Ok(None)
    }
}

/// What [`Engine::delete_item`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deleted {
    Yes,
    Gone,
    Locked,
}
