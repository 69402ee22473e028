//! The session manager: one long-lived, cloneable handle over a ZooKeeper session that is
//! re-created after expiry.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;
use zookeeper_client::{Client, SessionState};

use super::backoff::Backoff;
use super::builder::{Config, FrameworkBuilder};
use super::retry::RetryPolicy;
use super::state::{ConnectionState, ErrorPolicy, SessionStatus};
use crate::error::{Error, Result};
// re-exported for holds.rs and listings.rs, which import it from here
use crate::sync::lock;

/// One ZooKeeper session: the plain client (for the namespace itself) and the client rooted
/// at the namespace that everything else uses.
#[derive(Clone)]
pub(crate) struct Session {
    pub raw: Client,
    pub rooted: Client,
}

pub(crate) struct Inner {
    pub cfg: Config,
    session: Mutex<Option<Session>>,
    status: watch::Sender<SessionStatus>,
    events: Mutex<Option<broadcast::Sender<ConnectionState>>>,
    pub runtime: tokio::runtime::Handle,
    pub pending_deletes: std::sync::atomic::AtomicUsize,
    /// What recipes keep per session (emptied when a new session is built).
    pub extensions: super::extensions::Extensions,
}

/// A cloneable handle over one ZooKeeper session, re-created after expiry: Curator's
/// `CuratorFramework`.
///
/// Clones share the session. Every recipe takes a `Framework`. Operations go through the
/// retry policy; connection states are observable as a stream
/// ([`connection_states`](Self::connection_states)) or as a current value
/// ([`status`](Self::status)).
///
/// # Notable behaviors
/// * After the server expires the session — or the connection stays suspended longer than the
///   negotiated session timeout (Curator's simulated expiry) — the state goes `LOST`, a new
///   session is built (retrying until it succeeds or the framework is closed) and the state
///   goes `RECONNECTED`. Everything that asks for [`client`](Self::client) from then on gets the
///   new session. Ephemeral nodes of the old session are gone: recipes tell their holders.
/// * Each operation attempt first waits (up to the connection timeout) for a connection.
#[derive(Clone)]
pub struct Framework {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Framework")
            .field("connect_string", &self.inner.cfg.connect_string)
            .field("namespace", &self.inner.cfg.namespace)
            .field("status", &*self.inner.status.borrow())
            .finish()
    }
}

impl Framework {
    /// A builder; see [`FrameworkBuilder`] for the defaults.
    pub fn builder() -> FrameworkBuilder {
        FrameworkBuilder::default()
    }

    /// Connects with the default settings.
    ///
    /// # Errors
    /// As [`FrameworkBuilder::connect`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn connect(connect_string: &str) -> Result<Framework> {
        Self::builder().connect_string(connect_string).connect().await
    }

    pub(crate) async fn connect_with(cfg: Config) -> Result<Framework> {
        let session = open_session(&cfg).await?;
        let status = SessionStatus {
            state: ConnectionState::Connected,
            session_id: session.raw.session_id().0,
            suspensions: 0,
            losses: 0,
            closed: false,
        };
        let (events, _) = broadcast::channel(256);
        let watcher = session.raw.state_watcher();
        let timeout = session.raw.session_timeout();
        let inner = Arc::new(Inner {
            cfg,
            session: Mutex::new(Some(session)),
            status: watch::Sender::new(status),
            events: Mutex::new(Some(events)),
            runtime: tokio::runtime::Handle::current(),
            pending_deletes: Default::default(),
            extensions: Default::default(),
        });
        tokio::spawn(supervise(Arc::downgrade(&inner), watcher, timeout));
        Ok(Framework { inner })
    }

    /// The current session's client, rooted at the namespace: an escape hatch for operations
    /// the framework does not wrap. It is *not* re-created for you: ask again after a `LOST`.
    ///
    /// # Errors
    /// [`Error::Closed`] after [`close`](Self::close).
    pub fn client(&self) -> Result<Client> {
        self.session().map(|s| s.rooted)
    }

    pub(crate) fn session(&self) -> Result<Session> {
        lock(&self.inner.session).clone().ok_or(Error::Closed)
    }

    /// The current status: state, session id and the suspension/loss counters.
    pub fn status(&self) -> SessionStatus {
        *self.inner.status.borrow()
    }

    /// The current connection state.
    pub fn connection_state(&self) -> ConnectionState {
        self.status().state
    }

    /// A receiver of status changes (only the latest is kept; compare the counters of
    /// [`SessionStatus`] to learn what happened in between).
    pub fn status_watch(&self) -> watch::Receiver<SessionStatus> {
        self.inner.status.subscribe()
    }

    /// Every connection-state change from now on, in order. The stream ends when the framework
    /// is closed or dropped. A subscriber that falls more than 256 changes behind skips the
    /// oldest ones.
    pub fn connection_states(&self) -> impl Stream<Item = ConnectionState> + Send + 'static {
        let rx = lock(&self.inner.events).as_ref().map(|tx| tx.subscribe());
        async_stream::stream! {
            let Some(mut rx) = rx else { return };
            loop {
                match rx.recv().await {
                    Ok(state) => yield state,
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        }
    }

    /// The error policy recipes consult.
    pub fn error_policy(&self) -> ErrorPolicy {
        self.inner.cfg.error_policy
    }

    /// The namespace (`Some("/app")`), if any.
    pub fn namespace(&self) -> Option<&str> {
        self.inner.cfg.namespace.as_deref()
    }

    /// The connect string this framework was built with.
    pub fn connect_string(&self) -> &str {
        &self.inner.cfg.connect_string
    }

    /// The session timeout negotiated with the server for the current session.
    ///
    /// # Errors
    /// [`Error::Closed`] after close.
    pub fn negotiated_session_timeout(&self) -> Result<Duration> {
        Ok(self.session()?.raw.session_timeout())
    }

    /// The data written into recipe nodes that have none of their own.
    pub fn default_data(&self) -> &[u8] {
        &self.inner.cfg.default_data
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.status().closed
    }

    /// Closes the session: ephemeral nodes go, background deletes stop, waits and operations
    /// fail with [`Error::Closed`], the state stream ends. Idempotent.
    pub fn close(&self) {
        let session = lock(&self.inner.session).take();
        self.inner.status.send_modify(|s| s.closed = true);
        lock(&self.inner.events).take();
        // Dropping the last clients of the session closes it on the server.
        drop(session);
    }

    /// Waits until the framework is connected, for at most `timeout`.
    ///
    /// # Errors
    /// [`Error::Timeout`] when not connected in time, [`Error::Closed`] when closed.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_connected(&self, timeout: Duration) -> Result<()> {
        tokio::time::timeout(timeout, self.wait_until_connected()).await.map_err(|_| Error::Timeout(timeout))?
    }

    /// Waits, with no time limit, until the framework is connected (again): through
    /// suspensions and the re-creation of a lost session, until it is closed.
    ///
    /// # Errors
    /// [`Error::Closed`] when closed (or dropped by every other handle) first.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub(crate) async fn wait_until_connected(&self) -> Result<()> {
        let mut rx = self.status_watch();
        let closed = rx.wait_for(|s| s.closed || s.state.is_connected()).await.map(|s| s.closed);
        match closed {
            Ok(false) => Ok(()),
            _ => Err(Error::Closed),
        }
    }

    /// The runtime the framework was built on: background work (deletes, monitors, recipe
    /// tasks) is spawned there, so that it can be started from `Drop` outside a runtime.
    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.inner.runtime
    }

    /// The current session's value of type `T` (made with `T::default()` on first use; a new
    /// session starts with none).
    pub(crate) fn session_extension<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.inner.extensions.get_or_default()
    }

    /// The framework's retry policy (see [`FrameworkBuilder::retry_policy`]).
    pub(crate) fn retry_policy(&self) -> &dyn RetryPolicy {
        &*self.inner.cfg.retry
    }

    /// How long an operation attempt waits for a connection.
    pub(crate) fn connection_timeout(&self) -> Duration {
        self.inner.cfg.connection_timeout
    }

    /// Resolves once the framework is closed (or dropped by every other handle).
    pub(crate) async fn closed(&self) {
        let mut rx = self.status_watch();
        let _ = rx.wait_for(|s| s.closed).await;
    }

    /// The current session's id and password, for tools that act on the session itself (the
    /// testing kit expires it on purpose with them). Whoever has them can take the session
    /// over: keep them out of logs.
    ///
    /// # Errors
    /// [`Error::Closed`] for a closed framework.
    pub fn session_info(&self) -> Result<zookeeper_client::SessionInfo> {
        Ok(self.session()?.raw.session().clone())
    }
}

impl Inner {
    fn set_state(&self, state: ConnectionState, session_id: Option<i64>) {
        let mut changed = false;
        self.status.send_if_modified(|s| {
            if s.closed {
                return false;
            }
            if state == ConnectionState::Suspended && s.state != ConnectionState::Suspended {
                s.suspensions += 1;
            }
            if state == ConnectionState::Lost && s.state != ConnectionState::Lost {
                s.losses += 1;
            }
            if let Some(id) = session_id {
                s.session_id = id;
            }
            changed = s.state != state || session_id.is_some();
            s.state = state;
            changed
        });
        if changed {
            tracing::info!(%state, "connection state");
            if let Some(tx) = lock(&self.events).as_ref() {
                let _ = tx.send(state);
            }
        }
    }
}

/// Opens a new session within the connection timeout.
pub(crate) async fn open_session(cfg: &Config) -> Result<Session> {
    let raw = super::connect::open_client(cfg).await?;
    let rooted = match &cfg.namespace {
        None => raw.clone(),
        Some(ns) => raw
            .clone()
            .chroot(ns.clone())
            .map_err(|_| Error::InvalidPath { path: ns.clone(), reason: "namespace is not a valid chroot" })?,
    };
    super::nodelay::apply(&cfg.connect_string).await;
    Ok(Session { raw, rooted })
}

/// Follows the client's session states, translates them into Curator's connection states,
/// applies the simulated expiry and re-creates the session after a loss.
async fn supervise(inner: Weak<Inner>, mut watcher: zookeeper_client::StateWatcher, mut timeout: Duration) {
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
                let Some(session) = reconnect(&inner).await else { return };
                watcher = session.raw.state_watcher();
                timeout = session.raw.session_timeout();
            }
        }
    }
}

/// Builds new sessions until one works (or the framework goes away) and installs it.
async fn reconnect(inner: &Weak<Inner>) -> Option<Session> {
    let mut pause = Backoff::new(Duration::from_millis(50), Duration::from_secs(2)).with_jitter();
    loop {
        let this = inner.upgrade()?;
        if this.status.borrow().closed {
            return None;
        }
        let cfg = this.cfg.clone();
        drop(this);
        match open_session(&cfg).await {
            Ok(session) => {
                let this = inner.upgrade()?;
                let mut slot = lock(&this.session);
                if slot.is_none() {
                    return None; // closed meanwhile
                }
                *slot = Some(session.clone());
                drop(slot);
                this.extensions.clear();
                this.set_state(ConnectionState::Reconnected, Some(session.raw.session_id().0));
                return Some(session);
            }
            Err(e @ (Error::Tls { .. } | Error::AuthFailed { .. })) => {
                tracing::error!(error = %e, "the ensemble refuses the new session; retrying");
                pause.sleep().await;
            }
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
