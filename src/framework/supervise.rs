//! The session supervisor: follows the client's session states, translates them into Curator's
//! connection states, applies the simulated expiry, re-creates the session after a loss, and
//! stops at a refusal until [`Framework::reload`](super::Framework::reload).

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use zookeeper_client::{Client, EventType, SessionState};

use super::backoff::Backoff;
use super::builder::Config;
use super::ensemble::{client_addresses, next_connect_string, tracks};
use super::session::{open_session, Inner, Session};
use super::state::{ConnectionState, SessionStatus};
use super::Framework;
use crate::error::{Error, Result};
use crate::sync::lock;

impl Framework {
    /// Opens the first session and starts the framework's supervisor (and ensemble tracker).
    pub(crate) async fn connect_with(cfg: Config) -> Result<Framework> {
        let session = open_session(&cfg).await?;
        let watcher = session.raw.state_watcher();
        let timeout = session.raw.session_timeout();
        let raw = session.raw.clone();
        let inner = Inner::new(cfg, session);
        start_tracker(&inner, &raw).await;
        tokio::spawn(supervise(Arc::downgrade(&inner), watcher, timeout));
        Ok(Framework { inner, compress: None, acl: None })
    }
}

/// Runs for as long as the framework: one task per framework.
async fn supervise(inner: Weak<Inner>, mut watcher: zookeeper_client::StateWatcher, mut timeout: Duration) {
    let mut suspended_since: Option<Instant> = None;
    loop {
        let Some(closed) = inner.upgrade().map(|i| i.status.subscribe()) else { return };
        let deadline = suspended_since.map(|t| super::deadline::later(t, timeout));
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
                let session = crate::observe::session_hex(this.status.borrow().session_id);
                match event {
                    None => {
                        tracing::warn!(%session, ?timeout, "suspended longer than the session timeout: session considered lost")
                    }
                    Some(cause) => tracing::warn!(%session, ?cause, "the session ended"),
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
        let (namespace, ensemble) = (this.cfg.namespace.as_deref().unwrap_or(""), this.cfg.connect_string.as_str());
        tracing::error!(%error, namespace, ensemble, "the ensemble refuses a new session: not trying again until Framework::reload");
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
    let mut failures = 0u32;
    loop {
        let Some(this) = inner.upgrade() else { return Reconnect::Gone };
        if this.status.borrow().closed {
            return Reconnect::Gone;
        }
        let mut cfg = this.cfg.clone();
        if tracks(&cfg) {
            cfg.connect_string = next_connect_string(&this.ensemble, &cfg.connect_string);
        }
        let reloads = *this.reloads.borrow();
        drop(this);
        match open_session(&cfg).await {
            Ok(session) => {
                let Some(this) = inner.upgrade() else { return Reconnect::Gone };
                {
                    let mut slot = lock(&this.session);
                    if slot.is_none() {
                        return Reconnect::Gone; // closed meanwhile
                    }
                    *slot = Some(session.clone());
                }
                this.extensions.clear();
                if failures > 0 {
                    tracing::info!(failures, "a new session was built after failed attempts");
                }
                this.set_state(ConnectionState::Reconnected, Some(session.raw.session_id().0));
                start_tracker(&this, &session.raw).await;
                return Reconnect::Session(session);
            }
            Err(error @ (Error::Tls { .. } | Error::AuthFailed { .. })) => {
                return Reconnect::Refused { error, reloads }
            }
            Err(e) => {
                // once with its context; the retries that follow are debug
                match failures {
                    0 => {
                        tracing::warn!(error = %e, ensemble = %cfg.connect_string, namespace = cfg.namespace.as_deref().unwrap_or(""), "could not build a new session; retrying until it works (further failures at debug)")
                    }
                    _ => tracing::debug!(error = %e, failures, "could not build a new session; retrying"),
                }
                failures += 1;
                pause.sleep().await;
            }
        }
    }
}

/// When the framework [`tracks`] the ensemble: reads `/zookeeper/config` once (within the
/// connection timeout) and, when it names client addresses, follows it on a task of its own
/// for as long as `client`'s session lives. A configuration without client addresses (a
/// standalone server, a static ensemble) costs one read: no watch, no task.
async fn start_tracker(inner: &Arc<Inner>, client: &Client) {
    if !tracks(&inner.cfg) {
        return;
    }
    let config = match tokio::time::timeout(inner.cfg.connection_timeout, client.get_config()).await {
        Ok(Ok((data, _))) => String::from_utf8_lossy(&data).into_owned(),
        Ok(Err(e)) => return tracing::debug!(error = %e, "cannot read /zookeeper/config"),
        Err(_) => return tracing::debug!("no answer for /zookeeper/config"),
    };
    lock(&inner.ensemble).update(&config);
    if client_addresses(&config).is_some() {
        tokio::spawn(track(Arc::downgrade(inner), client.clone()));
    }
}

/// Follows `/zookeeper/config` on `client`'s session until that session ends, or the framework
/// closes or moves to another session: then it drops `client` at once. The session closes on
/// the server only when its last `Client` is dropped, so a tracker that kept its clone while
/// waiting for a configuration change (which may never come) kept a closed framework's
/// session, and every ephemeral node of it, alive.
async fn track(inner: Weak<Inner>, client: Client) {
    let session = client.session_id().0;
    let Some(mut status) = inner.upgrade().map(|this| this.status.subscribe()) else { return };
    // while this session is set up, the status may still name the one before it
    let before = status.borrow().session_id;
    let ended = move |s: &SessionStatus| s.closed || (s.session_id != session && s.session_id != before);
    loop {
        let read = client.get_and_watch_config().await;
        let Some(this) = inner.upgrade() else { return };
        let watcher = match read {
            Ok((data, _, watcher)) => {
                let mut view = lock(&this.ensemble);
                if view.update(&String::from_utf8_lossy(&data)) {
                    tracing::info!(servers = ?view.servers, "the ensemble was reconfigured");
                }
                watcher
            }
            // the session is gone (its successor tracks), or the server cannot tell
            Err(e) => return tracing::debug!(error = %e, "not following /zookeeper/config on this session"),
        };
        drop(this);
        tokio::select! {
            event = watcher.changed() => {
                if event.event_type == EventType::Session {
                    return;
                }
            }
            _ = status.wait_for(ended) => return,
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
