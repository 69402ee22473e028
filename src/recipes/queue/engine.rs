//! The one engine of every queue kind: puts (with back-pressure), and takes that list the
//! children once, work through the listing, and wait on a children watch (and on the lock
//! nodes of items another consumer holds) when nothing can be taken. The kinds differ only in
//! their `Layout` (names and order) and framing.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crate::CreateMode;
use crate::ZooKeeperError;
use futures_util::FutureExt;
use tokio::time::Instant;

use super::framing::check_size;
use super::locking::Deleted;
use super::state::{now_ms, Engine, Fired};
use super::taken::Taken;
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::wait::{Wake, WatchSet};
use crate::framework::{paths, IfExists, OneShotWatch, TxnResult};
use crate::observe;

/// How many times one put skips a sequence that a foreign node squats on before it gives up
/// with `NodeExists` (each skip is one round trip and advances the counter by two).
const MAX_SQUATTERS: u32 = 64;

/// The name prefix of the throwaway child that advances a queue's sequence counter (created
/// and deleted in one transaction: never seen, and no item name).
const SKIP_PREFIX: &str = "_skip_";

/// How a consumer takes an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Deleted, then handed over: at most once.
    AtMostOnce,
    /// Locked and handed over; deleted once processed (see `Delivery`): at least once.
    Safe,
}

/// The outcome of trying one listed item.
enum Tried {
    Taken(Box<Taken>),
    /// Gone: another consumer took it.
    Gone,
    /// Another consumer holds its lock; the watch fires when the lock goes.
    Locked(OneShotWatch),
    /// Its lock node vanished before we could watch it: try it again.
    Again,
}

impl Engine {
    /// Creates one item node per entry of `items` (`(name prefix, data)`), all in one
    /// transaction (applied exactly once, also after a lost reply), once the queue has room;
    /// the created paths, in order.
    pub(crate) async fn put(&self, items: Vec<(String, Vec<u8>)>, timeout: Option<Duration>) -> Result<Vec<String>> {
        // a put without a timeout ends by the caller's scope's deadline, if any
        match timeout.or_else(deadline::scope_left) {
            Some(timeout) => {
                let (at, operation) = (deadline::after(timeout), self.fw.operation_timeout());
                deadline::bounded_wait(Some(at), operation, self.put_within(items, Some(timeout))).await
            }
            None => self.put_within(items, None).await,
        }
    }

    /// [`put`](Self::put), inside the deadline of its timeout.
    async fn put_within(&self, items: Vec<(String, Vec<u8>)>, timeout: Option<Duration>) -> Result<Vec<String>> {
        // each node's data within a queue's limit (a transaction of several creates is
        // measured as a whole by the framework: its request limit)
        for (_, data) in &items {
            check_size(&self.dir, data.len())?;
        }
        if let Some((_, _)) = items.iter().find(|(_, data)| data.is_empty()) {
            return Err(Error::invalid("item", "an empty queue item"));
        }
        if items.is_empty() {
            return Ok(Vec::new());
        }
        self.wait_for_room(timeout).await?;
        self.ensure_dirs(false).await?;
        let mut forced = false;
        let mut squatted = 0;
        loop {
            let txn = items.iter().fold(self.fw.transaction(), |txn, (name, data)| {
                txn.create(&paths::join(&self.dir, name), data, CreateMode::PersistentSequential)
            });
            match txn.commit().await {
                Ok(results) => {
                    let created: Vec<String> = results
                        .into_iter()
                        .filter_map(|r| match r {
                            TxnResult::Create { path, .. } => Some(path),
                            _ => None,
                        })
                        .collect();
                    let label = self.fw.path_label(&self.dir);
                    for _ in &created {
                        observe::queue_put(self.layout.label(), &label);
                    }
                    return Ok(created);
                }
                // the queue's node vanished (a container reaped, a delete): make it again
                Err(Error::Transaction { source: ZooKeeperError::NoNode, .. }) if !forced => {
                    forced = true;
                    self.ensure_dirs(true).await?;
                }
                // A node squats on the name of the sequence we were given: no compliant client
                // made it (a sequence not reached yet), and a failed create does not advance
                // the counter, so every put would fail on it. Advance it past the squatter.
                Err(Error::Transaction { source: ZooKeeperError::NodeExists, .. }) if squatted < MAX_SQUATTERS => {
                    squatted += 1;
                    if squatted == 1 {
                        tracing::warn!(dir = %self.dir, "a foreign node holds the next item name: skipping its sequence");
                    }
                    self.skip_sequence().await?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Advances the queue node's sequence counter (its child version) without leaving a node:
    /// creates a throwaway child and deletes it in one transaction, which no listing sees.
    async fn skip_sequence(&self) -> Result<()> {
        let throwaway = paths::join(&self.dir, &format!("{SKIP_PREFIX}{}", uuid::Uuid::new_v4()));
        let txn =
            self.fw.transaction().plain().create(&throwaway, &[], CreateMode::Persistent).delete(&throwaway, None);
        txn.commit().await.map(drop)
    }

    /// Waits until the queue holds fewer than `max_items` item nodes (at once without a bound).
    /// Several producers may pass together: the bound is soft, as Curator's.
    async fn wait_for_room(&self, timeout: Option<Duration>) -> Result<()> {
        let Some(max) = self.max_items else { return Ok(()) };
        let deadline = timeout.map(deadline::after);
        loop {
            let session = self.fw.status().session_id;
            let dir = self.dir.as_str();
            let full = self
                .fw
                .request("list", dir, |conn| async move {
                    // the stat's child count is cheap; list (with a watch) only when full
                    match conn.exists(dir).await? {
                        Some(stat) if (stat.num_children as usize) < max => return Ok(None),
                        None => return Ok(None),
                        Some(_) => {}
                    }
                    let (children, watcher) = conn.watch_children(dir).await?;
                    let items = children.iter().filter(|c| self.layout.is_item(c)).count();
                    Ok((items >= max).then_some(watcher))
                })
                .await;
            let watcher = match full.if_exists()? {
                Some(Some(watcher)) => watcher,
                _ => return Ok(()),
            };
            if WatchSet::new([watcher]).wait(&self.fw, deadline, session).await.0 == Wake::Deadline {
                return Err(Error::timeout(timeout.unwrap_or_default(), crate::TimeoutStep::Waiting));
            }
        }
    }

    /// The item names in order and a watch on the children; the queue's node is made when
    /// missing.
    async fn list_watched(&self) -> Result<(Vec<String>, OneShotWatch)> {
        loop {
            let dir = self.dir.as_str();
            let listed = self.fw.request("watch", dir, |conn| async move { conn.watch_children(dir).await }).await;
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
    ///
    /// Observed: a `queue_take` span (debug) with the queue's path, kind and mode, and the
    /// item taken; the taken counter and the depth gauge.
    pub(crate) async fn take(self: &Arc<Self>, mode: Mode, deadline: Option<Instant>) -> Result<Option<Taken>> {
        use tracing::Instrument;
        let span = tracing::debug_span!(
            "queue_take", path = %self.dir, kind = self.layout.label(), ?mode, item = tracing::field::Empty,
        );
        let bounded = deadline::bounded_wait(deadline, self.fw.operation_timeout(), self.take_in_span(mode, deadline));
        let taken = bounded.instrument(span.clone()).await;
        if let Ok(Some(taken)) = &taken {
            span.record("item", taken.path.as_str());
            observe::queue_taken(self.layout.label(), &self.fw.path_label(&self.dir));
        }
        taken
    }

    async fn take_in_span(self: &Arc<Self>, mode: Mode, deadline: Option<Instant>) -> Result<Option<Taken>> {
        if mode == Mode::Safe && self.locks.is_none() {
            return Err(Error::Unsupported("this queue has no lock path: safe takes need one"));
        }
        if mode == Mode::AtMostOnce {
            if let Some(taken) = self.cursor.lock().await.claimed.pop_front() {
                return Ok(Some(taken));
            }
        }
        self.ensure_dirs(false).await?;
        loop {
            let next = self.next_pending().await;
            if let Some(name) = next {
                let tried = self.take_detached(&name, mode).await?;
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
            observe::queue_depth(self.layout.label(), &self.fw.path_label(&self.dir), names.len());
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
            let visible = visible_from.map(|at| deadline::after(Duration::from_millis(at.saturating_sub(now_ms()))));
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

    /// [`try_take`](Self::try_take), run to its end in a task of its own (not cut by the
    /// caller's deadline or drop). When the caller is gone by then, nothing taken is lost or
    /// left behind: a safe take's lock is released; an at-most-once take's item, whose delete
    /// was sent, is kept for this handle's next take. Its own requests have the operation
    /// timeout: a lock create that a stalled server did not answer by then is deleted in the
    /// background if it lands later (`lock_item`), so that no other consumer waits for our
    /// session's end.
    async fn take_detached(self: &Arc<Self>, name: &str, mode: Mode) -> Result<Tried> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (engine, name) = (self.clone(), name.to_string());
        self.fw.runtime().spawn(async move {
            let tried = engine.try_take(&name, mode).await;
            if let Err(Ok(Tried::Taken(taken))) = tx.send(tried) {
                match &taken.hold {
                    Some(lock) => lock.release(),
                    None => engine.cursor.lock().await.claimed.push_back(*taken),
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
                    Deleted::Locked => self.locked(name).await,
                }
            }
            Mode::Safe => {
                let Some(hold) = self.lock_item(name).await? else { return self.locked(name).await };
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

    /// An item another consumer holds: watched until its lock goes (tried again at once when
    /// it is gone already; gone itself when the queue has no locks).
    async fn locked(&self, name: &str) -> Result<Tried> {
        Ok(match (self.watch_lock(name).await?, &self.locks) {
            (Some(watcher), _) => Tried::Locked(watcher),
            (None, Some(_)) => Tried::Again,
            (None, None) => Tried::Gone,
        })
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
