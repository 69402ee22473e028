//! What a take hands over: the item node taken, and (safe mode) our lock on it. A leaf of the
//! queue's modules, so that the engine's state can keep taken items without importing the
//! engine.

use zookeeper_client::{Client, Error as ZkError};

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
/// only, whose requests fail once that session is over, and never deletes theirs.
#[derive(Debug)]
pub(crate) struct ItemLock {
    pub hold: HeldNode,
    pub(super) client: Client,
}

impl ItemLock {
    /// Deletes our lock node in the background (retried while our session lives).
    pub(crate) fn release(&self) {
        let (fw, client, path) = (self.hold.framework().clone(), self.client.clone(), self.hold.path().to_string());
        self.hold.framework().runtime().spawn(async move {
            let outcome = fw
                .retry_raw(|_| {
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
