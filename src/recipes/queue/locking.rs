//! Item locks: `<lock path>/<item name>`, ephemeral, Curator's lock-safe layout. A safe take
//! holds one while the item is processed; an at-most-once take creates and deletes one in the
//! transaction that deletes the item, so it never takes an item another consumer holds.

use crate::ZooKeeperError;

use super::state::Engine;
use super::taken::{delete_lock, ItemLock, Whose};
use crate::error::{Error, Result};
use crate::framework::{paths, Conn, CreateMode, OneShotWatch, Stat};
use crate::observe::Kind;
use crate::recipes::locks::Acquired;
use crate::sync::lock as lock_of;
use crate::HeldNode;

impl Engine {
    /// An exists watch on the lock of `name` (held by another consumer).
    /// `None` when the lock is gone already (or the queue has no locks).
    pub(super) async fn watch_lock(&self, name: &str) -> Result<Option<OneShotWatch>> {
        let Some(locks) = &self.locks else { return Ok(None) };
        let lock = paths::join(locks, name);
        let lock = lock.as_str();
        let (stat, watcher) =
            self.fw.request("watch", lock, |conn| async move { conn.watch_exists(lock).await }).await?;
        Ok(stat.map(|_| watcher))
    }

    /// Deletes the item `name` (at `version`) unless another consumer holds its lock: one
    /// transaction that creates our lock node, deletes it again and deletes the item — so
    /// that a consumer holding the lock (ours in safe mode, Curator's lock-safe consumers)
    /// keeps it. Applied exactly once, also after a lost reply.
    pub(crate) async fn delete_item(&self, name: &str, version: Option<i32>) -> Result<Deleted> {
        let path = paths::join(&self.dir, name);
        let mut forced = false;
        loop {
            let mut txn = self.fw.transaction().plain();
            let lock = self.locks.as_ref().map(|locks| paths::join(locks, name));
            if let Some(lock) = &lock {
                txn = txn.create(lock, self.fw.default_data(), CreateMode::Ephemeral).delete(lock, None);
            }
            let guarded = usize::from(lock.is_some()) * 2;
            match txn.delete(&path, version).commit().await {
                Ok(_) => return Ok(Deleted::Yes),
                Err(Error::Transaction { index, source, .. }) => match (index < guarded, source) {
                    (true, ZooKeeperError::NodeExists) => return Ok(Deleted::Locked),
                    (true, ZooKeeperError::NoNode) if !forced => {
                        // the lock path is missing: make it, and try again
                        forced = true;
                        self.ensure_dirs(true).await?;
                    }
                    (false, ZooKeeperError::NoNode | ZooKeeperError::BadVersion) => return Ok(Deleted::Gone),
                    (_, source) => return Err(Error::ZooKeeper(source)),
                },
                Err(e) => return Err(e),
            }
        }
    }

    /// Creates our lock node on the item `name` (`None`: another consumer holds it).
    pub(super) async fn lock_item(&self, name: &str) -> Result<Option<ItemLock>> {
        let Some(locks) = &self.locks else { return Ok(None) };
        let lock = paths::join(locks, name);
        let data = self.fw.default_data();
        let mut forced = false;
        loop {
            let status = self.fw.status();
            let lock = lock.as_str();
            // the way to the server (its session) of the last create sent
            let sent = &std::sync::Mutex::new(None);
            let created = self
                .fw
                .request("create", lock, |conn| async move {
                    let creating = conn.create(lock, data, CreateMode::Ephemeral, None);
                    *lock_of(sent) = Some(conn.clone());
                    let stat = match creating.await {
                        Ok(node) => Some(node.stat),
                        // ours when a lost reply made us send the create again
                        Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => {
                            conn.exists(lock).await?.filter(|stat| stat.ephemeral_owner == conn.session_id())
                        }
                        Err(e) => return Err(e),
                    };
                    Ok(stat.map(|stat| (stat, conn)))
                })
                .await;
            let (stat, conn): (Stat, Conn) = match created {
                Ok(Some(created)) => created,
                Ok(None) => return Ok(None),
                Err(Error::ZooKeeper(ZooKeeperError::NoNode)) if !forced => {
                    forced = true;
                    self.ensure_dirs(true).await?;
                    continue;
                }
                Err(e) => {
                    // a create sent and not answered (the deadline passed, the retries ran
                    // out) may land later and hold the item until our session ends: ours to
                    // delete if it does (the caller may be gone: this runs detached)
                    let sent = lock_of(sent).take();
                    // (answered, refused before it was sent, or closed: nothing in flight)
                    let settled = matches!(e, Error::ZooKeeper(_) | Error::Closed | Error::TooLarge { .. });
                    if let (Some(conn), false) = (sent, settled) {
                        delete_lock(&self.fw, conn, lock.to_string(), Whose::IfLanded);
                    }
                    return Err(e);
                }
            };
            let acquired = Acquired::created(lock.to_string(), stat, status, Kind::QueueItem);
            let held = ItemLock::new(HeldNode::unwatched(&self.fw, acquired), conn);
            if stat.ephemeral_owner != status.session_id {
                // created in a newer session than the status we would hold it under: start over
                held.release();
                continue;
            }
            return Ok(Some(held));
        }
    }
}

/// What [`Engine::delete_item`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deleted {
    Yes,
    Gone,
    Locked,
}
