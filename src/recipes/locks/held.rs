//! What every guard and lease shares: our node, its fencing token, and the loss signal.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use zookeeper_client::{Error as ZkError, EventType, Stat};

use super::engine::Acquired;
use super::holds::HoldEntry;
use crate::error::{Error, Result};
use crate::framework::{ConnectionState, Framework, SessionStatus};
use crate::sync::lock;

/// Curator's revocation request: these bytes as the holder's node data.
pub(crate) const REVOKE_MESSAGE: &[u8] = crate::recipes::layout::REVOKE_MESSAGE;

/// Why a held lock, lease or leadership can no longer be trusted.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossReason {
    /// The connection was suspended (standard error policy): the session may expire before
    /// we can tell, and then someone else holds the lock.
    Suspended,
    /// The session was lost (expired, or suspended past the session timeout).
    SessionLost,
    /// Our node was deleted by someone else.
    NodeDeleted,
    /// The framework was closed.
    Closed,
}

impl std::fmt::Display for LossReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Suspended => "connection suspended",
            Self::SessionLost => "session lost",
            Self::NodeDeleted => "lock node deleted",
            Self::Closed => "framework closed",
        })
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Watched {
    lost: Option<LossReason>,
    revoke_requested: bool,
}

/// A node we hold: what every guard, lease and leadership exposes (guards deref to it).
///
/// # The loss signal
/// [`lost`](Self::lost) resolves when the hold can no longer be trusted: the connection was
/// suspended (under the standard [`ErrorPolicy`](crate::ErrorPolicy)), the session was lost,
/// our node was deleted by someone else, or the framework closed. Stop touching the protected
/// resource then. [`is_lost`](Self::is_lost) answers at once, without a round trip: it knows
/// session-level losses immediately and a deletion of our node once [`lost`](Self::lost) or
/// [`revoked`](Self::revoked) has been called (the node watch is set up on first use, so that
/// an uncontended acquire/release cycle costs no extra round trip; revocable locks set it up
/// at once).
///
/// # Fencing
/// [`fencing_token`](Self::fencing_token) is our node's creation zxid (`czxid`): it strictly
/// increases across all holders of a path over time, also when the container parent was
/// reaped and sequence numbers restarted. Hand it to the store you write to, and let the store
/// reject writes with a token lower than the highest it has seen.
#[derive(Debug)]
pub struct HeldNode {
    fw: Framework,
    path: String,
    stat: Stat,
    baseline: SessionStatus,
    watched: Mutex<Option<watch::Receiver<Watched>>>,
    /// Tells local waiters behind us that we held (see `locks::holds`).
    _mark: Option<Arc<HoldEntry>>,
}

impl HeldNode {
    pub(crate) fn new(fw: &Framework, acquired: Acquired, eager_watch: bool) -> Self {
        let held = HeldNode {
            fw: fw.clone(),
            path: acquired.path,
            stat: acquired.stat,
            baseline: acquired.status,
            watched: Mutex::new(None),
            _mark: acquired.mark,
        };
        if eager_watch {
            held.watcher();
        }
        held
    }

    /// Our node's full path (relative to the namespace).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The fencing token: our node's creation zxid (see the type's docs).
    pub fn fencing_token(&self) -> i64 {
        self.stat.czxid
    }

    /// The id of the session that owns our node.
    pub fn session_id(&self) -> i64 {
        self.stat.ephemeral_owner
    }

    fn status_loss(&self, now: &SessionStatus) -> Option<LossReason> {
        HeldView { baseline: self.baseline, policy: self.fw.error_policy() }.loss(now)
    }

    /// Why the hold is lost, if it is (as far as known without a round trip).
    pub fn loss(&self) -> Option<LossReason> {
        let watched = lock(&self.watched).as_ref().and_then(|rx| rx.borrow().lost);
        watched.or_else(|| self.status_loss(&self.fw.status()))
    }

    /// Whether the hold is lost (as far as known without a round trip).
    pub fn is_lost(&self) -> bool {
        self.loss().is_some()
    }

    /// Resolves when the hold can no longer be trusted, with the reason.
    ///
    /// # Cancel safety
    /// Cancel safe; call it again (or from several tasks) at will.
    pub async fn lost(&self) -> LossReason {
        let mut rx = self.watcher();
        let lost = rx.wait_for(|w| w.lost.is_some()).await.ok().and_then(|w| w.lost);
        lost.unwrap_or(LossReason::Closed)
    }

    /// Whether someone asked this holder to release (Curator's revocation protocol; only
    /// known once the node is watched: revocable locks, or after [`lost`](Self::lost)).
    pub fn revocation_requested(&self) -> bool {
        lock(&self.watched).as_ref().is_some_and(|rx| rx.borrow().revoke_requested)
    }

    /// Resolves when someone asks us to release (Curator's revocation protocol: our node's
    /// data set to `__REVOKE__`). Asking is not forcing: release when convenient.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn revoked(&self) {
        let mut rx = self.watcher();
        let _ = rx.wait_for(|w| w.revoke_requested).await;
    }

    fn watcher(&self) -> watch::Receiver<Watched> {
        let mut slot = lock(&self.watched);
        if let Some(rx) = slot.as_ref() {
            return rx.clone();
        }
        let (tx, rx) = watch::channel(Watched::default());
        let monitor = Monitor { fw: self.fw.clone(), path: self.path.clone(), baseline: self.baseline, tx };
        self.fw.inner.runtime.spawn(monitor.run());
        *slot = Some(rx.clone());
        rx
    }

    /// Deletes our node (guaranteed: a failure continues in the background).
    ///
    /// Returns [`Error::LockLost`] when the hold had been lost before the release (the node is
    /// cleaned up all the same).
    pub(crate) async fn release(&self) -> Result<()> {
        let loss = self.loss();
        self.fw.delete_guaranteed(&self.path).await?;
        match loss {
            Some(reason) => Err(Error::LockLost { path: self.path.clone(), reason }),
            None => Ok(()),
        }
    }

    /// Deletes our node in the background (for `Drop`).
    pub(crate) fn release_in_background(&self) {
        self.fw.delete_now_in_background(self.path.clone(), Some(self.stat.ephemeral_owner));
    }
}

/// Watches our node and the session for as long as anyone holds a receiver.
struct Monitor {
    fw: Framework,
    path: String,
    baseline: SessionStatus,
    tx: watch::Sender<Watched>,
}

impl Monitor {
    async fn run(self) {
        let mut status = self.fw.status_watch();
        loop {
            if let Some(reason) = self.session_loss() {
                self.tx.send_modify(|w| w.lost = Some(reason));
                return;
            }
            let watch = match self.fw.client() {
                Ok(client) => client.get_and_watch_data(&self.path).await,
                Err(_) => Err(ZkError::ClientClosed),
            };
            match watch {
                Ok((data, _, watcher)) => {
                    if data == REVOKE_MESSAGE {
                        self.tx.send_modify(|w| w.revoke_requested = true);
                    }
                    tokio::select! {
                        event = watcher.changed() => {
                            if event.event_type == EventType::NodeDeleted && self.session_loss().is_none() {
                                self.tx.send_modify(|w| w.lost = Some(LossReason::NodeDeleted));
                                return;
                            }
                        },
                        _ = status.changed() => {},
                        _ = self.tx.closed() => return,
                    }
                }
                Err(ZkError::NoNode) => {
                    let reason = self.session_loss().unwrap_or(LossReason::NodeDeleted);
                    self.tx.send_modify(|w| w.lost = Some(reason));
                    return;
                }
                Err(_) => {
                    // connection trouble: the status tells us when it matters
                    tokio::select! {
                        changed = status.changed() => if changed.is_err() {
                            self.tx.send_modify(|w| w.lost = Some(LossReason::Closed));
                            return;
                        },
                        _ = self.tx.closed() => return,
                    }
                }
            }
        }
    }

    fn session_loss(&self) -> Option<LossReason> {
        let now = self.fw.status();
        let holder = HeldView { baseline: self.baseline, policy: self.fw.error_policy() };
        holder.loss(&now)
    }
}

struct HeldView {
    baseline: SessionStatus,
    policy: crate::framework::ErrorPolicy,
}

impl HeldView {
    fn loss(&self, now: &SessionStatus) -> Option<LossReason> {
        if !now.invalidates(&self.baseline, self.policy) {
            return None;
        }
        Some(if now.closed {
            LossReason::Closed
        } else if now.losses != self.baseline.losses
            || now.session_id != self.baseline.session_id
            || now.state == ConnectionState::Lost
        {
            LossReason::SessionLost
        } else {
            LossReason::Suspended
        })
    }
}

/// Compile-time check that guards built on `Held` can cross tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<HeldNode>();
    assert_send_sync::<Arc<HeldNode>>();
};
