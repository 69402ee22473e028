//! What a take hands over: the item node taken, and (safe mode) our lock on it. A leaf of the
//! queue's modules, so that the engine's state can keep taken items without importing the
//! engine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::Error;
use crate::framework::backoff::Backoff;
use crate::framework::{Conn, Framework};
use crate::{HeldNode, ZooKeeperError};

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

/// Our lock node on an item (safe mode), and the way to the server ([`Conn`]) of the session
/// that created it.
///
/// Lock nodes are named after their item, so another consumer's lock on the same item has
/// the same path once ours is gone: ours is released through the `Conn` of its own session
/// only, whose requests fail once that session is over, and never deletes theirs. Released
/// once, by [`release`](Self::release) or when dropped (a take that failed after it locked).
#[derive(Debug)]
pub(crate) struct ItemLock {
    pub hold: HeldNode,
    conn: Conn,
    released: AtomicBool,
}

impl ItemLock {
    /// Our lock `hold`, made through `conn`.
    pub(super) fn new(hold: HeldNode, conn: Conn) -> Self {
        Self { hold, conn, released: AtomicBool::new(false) }
    }

    /// Deletes our lock node in the background (retried while our session lives); once.
    pub(crate) fn release(&self) {
        if !self.released.swap(true, Ordering::SeqCst) {
            let path = self.hold.path().to_string();
            delete_lock(self.hold.framework(), self.conn.clone(), path, Whose::Ours);
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
    /// Ours: created in the session of the `Conn` given.
    Ours,
    /// Ours if a create sent through the `Conn` given (no answer came) landed: deleted only
    /// when that session owns it.
    IfLanded,
}

/// Deletes the lock node `path` in the background through `conn`, the way to the server of the
/// session that made it (or, [`Whose::IfLanded`], that sent a create of it which may have
/// landed) — every attempt of the retry loop sends through it, not through the session of the
/// moment: retried until it is gone, that session is over (the node with it), or the framework
/// closes. A create that lands at all lands before this looks: ZooKeeper applies a session's
/// requests in order, and drops those it reads from a connection that the client has closed.
pub(super) fn delete_lock(fw: &Framework, conn: Conn, path: String, whose: Whose) {
    fw.spawn_counted_delete(move |fw| async move {
        let mut pause = Backoff::new(Duration::from_millis(20), Duration::from_secs(1)).with_jitter();
        // the end of that session: its nodes are gone with it
        let ended =
            |e: &Error| matches!(e, Error::ZooKeeper(ZooKeeperError::SessionExpired | ZooKeeperError::ClientClosed));
        loop {
            let outcome = fw
                .request("delete", &path, |_| {
                    let (conn, path) = (&conn, path.as_str());
                    async move {
                        if whose == Whose::IfLanded {
                            let ours = match conn.exists(path).await {
                                Ok(stat) => stat.is_some_and(|s| s.ephemeral_owner == conn.session_id()),
                                Err(e) if ended(&e) => false,
                                Err(e) => return Err(e),
                            };
                            if !ours {
                                return Ok(());
                            }
                        }
                        match conn.delete(path, None).await {
                            // gone, or gone with its session
                            Ok(()) | Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(()),
                            Err(e) if ended(&e) => Ok(()),
                            Err(e) => Err(e),
                        }
                    }
                })
                .await;
            match outcome {
                Ok(()) | Err(Error::Closed) => break,
                // a stalled server: again, as long as the session lives
                Err(Error::RetriesExhausted { .. } | Error::Timeout { .. })
                    if fw.status().session_id == conn.session_id() =>
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
