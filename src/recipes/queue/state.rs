//! The engine's state: the queue's paths, its kind, its bound, and what a consumer learned
//! from its last listing; and the queue's nodes made on first use.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::framework::{CreateMode, OneShotWatch};

use super::naming::Layout;
use super::taken::Taken;
use crate::error::{Error, Result};
use crate::framework::{paths, Framework};
use crate::ZooKeeperError;

pub(super) type Fired = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What a consumer learned from its last listing.
#[derive(Default)]
pub(super) struct Cursor {
    /// Items of the last listing, in order, not tried yet.
    pub(super) pending: VecDeque<String>,
    /// The last listing's children watch (layouts whose head can change under us).
    pub(super) changed: Option<Fired>,
    /// Items found locked since the last listing, with a watch on their lock node.
    pub(super) locked: Vec<(String, OneShotWatch)>,
    /// Items in a row found gone (taken by other consumers) since the last one we took.
    pub(super) misses: u32,
    /// Items an at-most-once take claimed (deleted) after its caller was gone (its deadline
    /// passed while the claim was in flight): the next take returns them, so that a timeout
    /// does not lose an item.
    pub(super) claimed: VecDeque<Taken>,
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
    pub(super) cursor: tokio::sync::Mutex<Cursor>,
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
    pub(super) fn missed(&mut self) {
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
                return Err(Error::invalid(
                    "lock_path",
                    format!("the lock path {locks:?} must not be inside the queue"),
                ));
            }
        }
        if max_items == Some(0) {
            return Err(Error::invalid("max_items", "max_items must be at least 1"));
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
    pub(super) async fn ensure_dirs(&self, force: bool) -> Result<()> {
        if !force && self.dirs_ready.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mode = if self.layout == Layout::Simple { CreateMode::Container } else { CreateMode::Persistent };
        for dir in std::iter::once(&self.dir).chain(self.locks.as_ref()) {
            match self.fw.create_if_absent(dir, &[], mode).await {
                Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => {}
                Err(e) => return Err(e),
            }
        }
        self.dirs_ready.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// The item names, in order (none when the queue's node is missing).
    pub(crate) async fn items(&self) -> Result<Vec<String>> {
        let mut names = self.fw.children_or_empty(&self.dir).await?;
        names.retain(|n| self.layout.is_item(n));
        self.layout.sort(&mut names);
        Ok(names)
    }
}
