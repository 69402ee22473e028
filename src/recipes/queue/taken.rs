//! What a take hands over: the item node taken, and (safe mode) our lock on it. A leaf of the
//! queue's modules, so that the engine's state can keep taken items without importing the
//! engine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use zookeeper_client::{Client, Error as ZkError};

use crate::error::Error;
use crate::framework::backoff::Backoff;
use crate::framework::Framework;
use crate::HeldNode;

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
/// only, whose requests fail once that session is over, and never deletes theirs. Released
/// once, by [`release`](Self::release) or when dropped (a take that failed after it locked).
#[derive(Debug)]
pub(crate) struct ItemLock {
    pub hold: HeldNode,
    client: Client,
    released: AtomicBool,
}

impl ItemLock {
    /// Our lock `hold`, made through `client`.
    pub(super) fn new(hold: HeldNode, client: Client) -> Self {
        Self { hold, client, released: AtomicBool::new(false) }
    }

    /// Deletes our lock node in the background (retried while our session lives); once.
    pub(crate) fn release(&self) {
        if !self.released.swap(true, Ordering::SeqCst) {
            let path = self.hold.path().to_string();
            delete_lock(self.hold.framework(), self.client.clone(), path, Whose::Ours);
        }
    }
}

impl Drop for ItemLock {
    fn drop(&mut self) {
        self.release();
    }
}

/// Whose a lock node is, as far as its deleter knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Whose {
    /// Ours: created in the session of the client given.
    Ours,
    /// Ours if a create sent through the client given (no answer came) landed: deleted only
    /// when that session owns it.
    IfLanded,
}

/// Deletes the lock node `path` in the background through `client`, the client of the session
/// that made it (or, [`Whose::IfLanded`], that sent a create of it which may have landed):
/// retried until it is gone, that session is over (the node with it), or the framework closes.
/// A create that lands at all lands before this looks: ZooKeeper applies a session's requests
/// in order, and drops those it reads from a connection that the client has closed.
pub(super) fn delete_lock(fw: &Framework, client: Client, path: String, whose: Whose) {
    fw.spawn_counted_delete(move |fw| async move {
        let mut pause = Backoff::new(Duration::from_millis(20), Duration::from_secs(1)).with_jitter();
        loop {
            let outcome = fw
                .retry_raw(|_| {
                    let (client, path) = (client.clone(), path.clone());
                    async move {
                        if whose == Whose::IfLanded {
                            let ours = match client.check_stat(&path).await {
                                Ok(stat) => stat.is_some_and(|s| s.ephemeral_owner == client.session_id().0),
                                Err(ZkError::SessionExpired | ZkError::ClientClosed) => false,
                                Err(e) => return Err(e),
                            };
                            if !ours {
                                return Ok(());
                            }
                        }
                        match client.delete(&path, None).await {
                            // gone, or gone with its session
                            Ok(()) | Err(ZkError::NoNode | ZkError::SessionExpired | ZkError::ClientClosed) => Ok(()),
                            Err(e) => Err(e),
                        }
                    }
                })
                .await;
            match outcome {
                Ok(()) | Err(Error::Closed) => break,
                // a stalled server: again, as long as the session lives
                Err(Error::RetriesExhausted { .. } | Error::Timeout { .. })
                    if fw.status().session_id == client.session_id().0 =>
                {
                    pause.sleep().await
                }
                Err(e) => {
                    tracing::debug!(%path, error = %e, "queue lock release: left to the session's end");
                    break;
                }
            }
        }
    });
}
