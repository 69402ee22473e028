//! The session supervisor: follows the client's session states, translates them into Curator's
//! connection states, applies the simulated expiry, re-creates the session after a loss, and
//! stops at a refusal until [`Framework::reload`](super::Framework::reload).

use std::sync::Weak;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use zookeeper_client::SessionState;

use super::backoff::Backoff;
use super::session::{open_session, Inner, Session};
use crate::sync::lock;
use super::state::{ConnectionState, SessionStatus};
use crate::error::Error;

/// Runs for as long as the framework: one task per framework.
pub(super) async fn supervise(inner: Weak<Inner>, mut watcher: zookeeper_client::StateWatcher, mut timeout: Duration) {
    let mut suspended_since: Option<Instant> = None;
    loop {
        let Some(closed) = inner.upgrade().map(|i| i.status.subscribe()) else { return };
        let deadline = suspended_since.map(|t| t + timeout);
        let event = tokio::select! {
            _ = wait_closed(closed) => return,
            state = watcher.changed() => Some(state),
            _ = sleep_until_opt(deadline) => None,
        };
        let Some(this) = inner.upgrade() else { return };
        match event {
            Some(SessionState::Disconnected) => {
                suspended_since.get_or_insert_with(Instant::now);
                this.set_state(ConnectionState::Suspended, None);
            }
            Some(SessionState::SyncConnected) => {
                suspended_since = None;
                this.set_state(ConnectionState::Reconnected, None);
                super::nodelay::apply(&this.cfg.connect_string).await;
            }
            Some(SessionState::ConnectedReadOnly) => {
                suspended_since = None;
                this.set_state(ConnectionState::ReadOnly, None);
                super::nodelay::apply(&this.cfg.connect_string).await;
            }
            Some(SessionState::Closed) if this.status.borrow().closed => return,
            // Expired, auth failure, closed under us, or suspended past the session timeout.
            _ => {
                if event.is_none() {
                    tracing::warn!(?timeout, "suspended longer than the session timeout: session considered lost");
                }
                this.set_state(ConnectionState::Lost, None);
                drop(this);
                suspended_since = None;
                let Some(session) = recreate(&inner).await else { return };
                watcher = session.raw.state_watcher();
                timeout = session.raw.session_timeout();
            }
        }
    }
}

/// What one round of [`reconnect`] came to.
enum Reconnect {
    /// A new session, installed.
    Session(Session),
    /// The framework was closed or dropped.
    Gone,
    /// The ensemble refuses new sessions; `reloads` is the reload count when the attempt began.
    Refused { error: Error, reloads: u64 },
}

/// Builds a new session, going `REFUSED` (and waiting for a reload) each time the ensemble
/// refuses it; `None` once the framework is gone.
async fn recreate(inner: &Weak<Inner>) -> Option<Session> {
    loop {
        let (error, reloads) = match reconnect(inner).await {
            Reconnect::Session(session) => return Some(session),
            Reconnect::Gone => return None,
            Reconnect::Refused { error, reloads } => (error, reloads),
        };
        let this = inner.upgrade()?;
        tracing::error!(%error, "the ensemble refuses a new session: not trying again until Framework::reload");
        *lock(&this.refusal) = Some(error);
        this.set_state(ConnectionState::Refused, None);
        let closed = this.status.subscribe();
        let mut reloaded = this.reloads.subscribe();
        drop(this);
        tokio::select! {
            _ = wait_closed(closed) => return None,
            changed = reloaded.wait_for(|n| *n > reloads) => changed.ok()?,
        };
        tracing::info!("reloaded: trying to build a session again");
    }
}

/// Builds new sessions until one works, the ensemble refuses, or the framework goes away, and
/// installs it.
async fn reconnect(inner: &Weak<Inner>) -> Reconnect {
    let mut pause = Backoff::new(Duration::from_millis(50), Duration::from_secs(2)).with_jitter();
    loop {
        let Some(this) = inner.upgrade() else { return Reconnect::Gone };
        if this.status.borrow().closed {
            return Reconnect::Gone;
        }
        let mut cfg = this.cfg.clone();
        if super::ensemble::tracks(&cfg) {
            cfg.connect_string = super::ensemble::next_connect_string(&this.ensemble, &cfg.connect_string);
        }
        let reloads = *this.reloads.borrow();
        drop(this);
        match open_session(&cfg).await {
            Ok(session) => {
                let Some(this) = inner.upgrade() else { return Reconnect::Gone };
                let mut slot = lock(&this.session);
                if slot.is_none() {
                    return Reconnect::Gone; // closed meanwhile
                }
                *slot = Some(session.clone());
                drop(slot);
                this.extensions.clear();
                lock(&this.refusal).take();
                super::ensemble::spawn_tracker(&this, &session.raw);
                this.set_state(ConnectionState::Reconnected, Some(session.raw.session_id().0));
                return Reconnect::Session(session);
            }
            Err(error @ (Error::Tls { .. } | Error::AuthFailed { .. })) => return Reconnect::Refused { error, reloads },
            Err(e) => {
                tracing::warn!(error = %e, "could not re-create the session; retrying");
                pause.sleep().await;
            }
        }
    }
}

async fn wait_closed(mut rx: watch::Receiver<SessionStatus>) {
    let _ = rx.wait_for(|s| s.closed).await;
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
