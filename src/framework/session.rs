//! The session manager: one long-lived, cloneable handle over a ZooKeeper session that is
//! re-created after expiry.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::{broadcast, watch};
use zookeeper_client::Client;

use super::builder::{Config, FrameworkBuilder};
use super::retry::RetryPolicy;
use super::state::{ConnectionState, ErrorPolicy, SessionStatus};
use crate::error::{Error, Result};
use crate::observe;
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
    pub(super) session: Mutex<Option<Session>>,
    pub(super) status: watch::Sender<SessionStatus>,
    events: Mutex<Option<broadcast::Sender<ConnectionState>>>,
    /// Why the ensemble refuses a new session, while the state is `REFUSED`.
    pub(super) refusal: Mutex<Option<Error>>,
    /// How many times [`Framework::reload`] was called: a refused framework tries again after.
    pub(super) reloads: watch::Sender<u64>,
    pub runtime: tokio::runtime::Handle,
    pub pending_deletes: std::sync::atomic::AtomicUsize,
    /// Signalled when [`pending_deletes`](Self::pending_deletes) drops to zero.
    pub(super) deletes_idle: tokio::sync::Notify,
    /// Set by [`Framework::shutdown`]: operations fail with [`Error::Closed`], except those of
    /// the background deletes, which may finish.
    pub(super) draining: AtomicBool,
    /// The state of the session closed by [`Framework::close`], to learn when the server
    /// acknowledged the close.
    ended: Mutex<Option<zookeeper_client::StateWatcher>>,
    /// The answer of the first [`Framework::shutdown`] to finish.
    shutdown: tokio::sync::OnceCell<Result<()>>,
    /// What recipes keep per session (emptied when a new session is built).
    pub extensions: super::extensions::Extensions,
    /// The ensemble's configuration as last read (for sessions re-created after a reconfig).
    pub(super) ensemble: super::ensemble::SharedView,
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
///   goes `RECONNECTED`. Every operation from then on (and every client the `raw-client` feature's
///   `client()` hands out) uses the new session. Ephemeral nodes of the old session are gone: recipes tell their holders.
/// * When the ensemble *refuses* the new session — its TLS handshake fails for a reason that
///   retrying cannot fix (unknown CA, expired certificate...) or the server refuses the SASL
///   login — the framework stops trying: the state goes
///   [`REFUSED`](ConnectionState::Refused), operations fail at once with the refusal
///   ([`Error::Tls`] or [`Error::AuthFailed`], also from [`refusal`](Self::refusal)), and
///   recipes wait. [`reload`](Self::reload) (after the certificates were renewed) tries again.
/// * Each operation attempt first waits (up to the connection timeout) for a connection.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::{Framework, InterProcessMutex};
///
/// let fw = Framework::connect("127.0.0.1:2181").await?;   // or Framework::builder()
/// let lock = InterProcessMutex::new(&fw, "/locks/orders")?; // recipes take `&fw`
/// let guard = lock.acquire().await?;
/// guard.release().await?;
/// fw.shutdown(Duration::from_secs(5)).await?;             // what the session held is freed now
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Framework {
    pub(crate) inner: Arc<Inner>,
    /// This handle's compression: `None` follows the builder's `enable_compression`.
    pub(crate) compress: Option<bool>,
    /// This handle's ACL for the nodes it creates ([`Framework::with_acl`]); `None` asks the
    /// framework's [`AclProvider`](crate::AclProvider).
    pub(crate) acl: Option<Arc<[zookeeper_client::Acl]>>,
}

impl std::fmt::Debug for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Framework")
            .field("connect_string", &self.inner.cfg.connect_string)
            .field("namespace", &self.inner.cfg.namespace)
            .field("compressed", &self.compression_enabled())
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

    /// The current session's client, rooted at the namespace: an escape hatch for operations
    /// the framework does not wrap. It is *not* re-created for you: ask again after a `LOST`.
    ///
    /// A `Client` taken here keeps the server session open for as long as it lives, also
    /// after [`close`](Self::close): drop it before [`shutdown`](Self::shutdown), which
    /// otherwise waits for it until its timeout.
    ///
    /// # Errors
    /// [`Error::Closed`] once [`close`](Self::close) or [`shutdown`](Self::shutdown) was called.
    #[cfg(feature = "raw-client")]
    #[cfg_attr(docsrs, doc(cfg(feature = "raw-client")))]
    pub fn client(&self) -> Result<Client> {
        self.raw_client()
    }

    /// The current session's client, rooted at the namespace (what [`client`](Self::client)
    /// hands out with the `raw-client` feature).
    pub(crate) fn raw_client(&self) -> Result<Client> {
        // (only the rooted client cloned: the lock engine asks for it several times an acquire)
        self.with_session(|s| s.rooted.clone())
    }

    /// The current session's way to the server ([`Conn`](super::Conn)) for requests sent
    /// outside the retry loop: pipelined behind requests of their own, or a hold's watch. The
    /// size limit and the ACL apply as in the loop; the deadline and the retries are the
    /// caller's ([`Framework::answered`] bounds the wait for the answers).
    ///
    /// # Errors
    /// As [`session`](Self::session).
    pub(crate) fn conn(&self) -> Result<super::Conn> {
        Ok(super::Conn::new(self, self.raw_client()?))
    }

    /// The current session; [`Error::Closed`] once closed, and while a shutdown drains the
    /// background deletes for everything but those deletes.
    pub(crate) fn session(&self) -> Result<Session> {
        self.with_session(Session::clone)
    }

    /// `f` of the current session, under the same conditions as [`session`](Self::session).
    fn with_session<T>(&self, f: impl FnOnce(&Session) -> T) -> Result<T> {
        if self.inner.draining.load(Ordering::SeqCst) && !in_background_delete() {
            return Err(Error::Closed);
        }
        lock(&self.inner.session).as_ref().map(f).ok_or(Error::Closed)
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
        let (namespace, ensemble) = (self.namespace().unwrap_or("").to_string(), self.connect_string().to_string());
        async_stream::stream! {
            let Some(mut rx) = rx else { return };
            loop {
                match rx.recv().await {
                    Ok(state) => yield state,
                    Err(broadcast::error::RecvError::Lagged(skipped)) => {
                        tracing::warn!(skipped, %namespace, %ensemble, "connection states: a subscriber fell behind; the oldest changes were skipped");
                        continue
                    }
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

    /// The connect string the next session the framework creates (after a loss) will use: the
    /// one it was built with, or, once the ensemble was reconfigured, the client addresses of
    /// the servers in `/zookeeper/config` (see [`FrameworkBuilder::ensemble_tracker`]).
    pub fn ensemble_connect_string(&self) -> String {
        match super::ensemble::tracks(&self.inner.cfg) {
            true => super::ensemble::next_connect_string(&self.inner.ensemble, &self.inner.cfg.connect_string),
            false => self.inner.cfg.connect_string.clone(),
        }
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

    /// Whether [`close`](Self::close) or [`shutdown`](Self::shutdown) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.draining.load(Ordering::SeqCst) || self.status().closed
    }

    /// Closes the session without waiting: ephemeral nodes go, background deletes stop,
    /// waits and operations fail with [`Error::Closed`], the state stream ends. Idempotent.
    ///
    /// The server learns of the close once the last `Client` of the session is dropped (the
    /// recipes' tasks drop theirs as they stop, which they do on their own once they see the
    /// close) and a close request reaches it; until then, and if it never does (the process
    /// exits first, the server is unreachable), the session and its ephemeral nodes — locks,
    /// leaderships, registrations — stay until the session timeout. A service that ends should
    /// call [`shutdown`](Self::shutdown), which waits for the server's answer.
    pub fn close(&self) {
        let session = lock(&self.inner.session).take();
        if let Some(session) = &session {
            *lock(&self.inner.ended) = Some(session.raw.state_watcher());
        }
        let mut was = None;
        self.inner.status.send_modify(|s| {
            was = (!s.closed).then_some(s.state);
            s.closed = true;
        });
        if let Some(state) = was {
            crate::observe::session_state(Some(state.as_str()), None);
            tracing::info!(session = %observe::session_hex(self.status().session_id), namespace = self.namespace().unwrap_or(""), "framework closed");
        }
        lock(&self.inner.events).take();
        // Dropping the last clients of the session closes it on the server.
        drop(session);
    }

    /// Ends the framework gracefully and waits until what it held on the server is gone: the
    /// way a service ends (before returning from `main`, in a rolling deploy), so that its
    /// locks, leaderships and registrations go at once rather than after the session timeout.
    ///
    /// In order, all within `timeout`:
    /// 1. New work stops: operations and waits fail with [`Error::Closed`] from now on, and
    ///    [`is_closed`](Self::is_closed) is true.
    /// 2. The guaranteed deletes still pending in the background (releases of dropped guards and
    ///    closed handles, a [`delete_guaranteed`](Self::delete_guaranteed) whose foreground
    ///    attempt failed) may finish; see
    ///    [`pending_background_deletes`](Self::pending_background_deletes).
    /// 3. The session is closed ([`close`](Self::close)): the recipes' tasks stop and drop
    ///    their clients, and a close request goes to the server.
    /// 4. It waits until the server has acknowledged the close — by then the server has
    ///    deleted the session's ephemeral nodes, and other sessions' watches on them fired —
    ///    or has ended the session already (it expired).
    ///
    /// Drop (or release) guards and close recipe handles first: what is still held is
    /// released by the session's end all the same, but a release in flight is a delete the
    /// server must first answer.
    ///
    /// # Idempotence
    /// The first call to finish decides the answer: every later call returns that answer at
    /// once, and a call made while another one runs waits for it. [`close`](Self::close) may
    /// be called before; a shutdown after it still waits for the server's acknowledgement.
    ///
    /// # Why `Result<()>`
    /// As for every wait with a timeout of this crate: `Ok(())` means it happened, and
    /// [`Error::Timeout`] (test it with [`Error::is_timeout`]) that it did not within the time
    /// given — here, that the server may keep the session (and its ephemeral nodes) until the
    /// session timeout. There is nothing left to do with the framework either way (it is
    /// closed), so no richer answer is returned: a caller logs the error and exits. A warning
    /// is logged with the background deletes still pending at the deadline (persistent nodes
    /// they were to delete stay; ephemeral ones go with the session).
    ///
    /// `timeout` bounds all the steps, or the deadline of the caller's
    /// [`with_deadline`](crate::with_deadline) scope when that is earlier. A `timeout` of zero
    /// is a try, as the recipes' `try_*` forms: the steps get one operation's time (the
    /// [`operation_timeout`](crate::FrameworkBuilder::operation_timeout)) — enough for a
    /// connected server to acknowledge the close. `Duration::MAX` is no bound: the steps take
    /// what they take (the acknowledgement is not waited for when the connection is down, as
    /// below).
    ///
    /// # Errors
    /// [`Error::Timeout`] (in [`TimeoutStep::Closing`](crate::TimeoutStep::Closing)) when the
    /// server did not acknowledge the close within `timeout` — unreachable, stopped answering,
    /// or a client taken by the caller (the `raw-client` feature's `client()`) is still alive and keeps the session
    /// open — and at once when the connection was down when the close was asked for (no
    /// server can acknowledge it then). The session's ephemeral nodes then stay until the
    /// server expires the session (its timeout after it last heard from us). `Ok` only when
    /// the server ended the session: what the service held is gone.
    ///
    /// # Cancel safety
    /// Cancel safe in that nothing is lost: what was done stays done — new work stays refused
    /// from step 1, the framework stays closed from step 3 — and a later `shutdown` (or
    /// [`close`](Self::close)) picks up where it stopped. Only an answer that was given is
    /// kept for later calls.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// use zk_recipes::{Framework, InterProcessMutex};
    ///
    /// let fw = Framework::connect("127.0.0.1:2181").await?;
    /// let guard = InterProcessMutex::new(&fw, "/locks/job")?.acquire().await?;
    /// // ... the work ...
    /// drop(guard);
    /// if let Err(e) = fw.shutdown(Duration::from_secs(5)).await {
    ///     eprintln!("shutdown: {e} (the session ends with its timeout)");
    /// }
    /// # Ok(()) }
    /// ```
    #[doc(alias = "close_and_wait")]
    pub async fn shutdown(&self, timeout: Duration) -> Result<()> {
        self.inner.shutdown.get_or_init(|| self.shut_down(timeout)).await.as_ref().map_err(Error::duplicate).copied()
    }

    /// The steps of [`shutdown`](Self::shutdown).
    async fn shut_down(&self, timeout: Duration) -> Result<()> {
        // a zero timeout (or one passed already) is a try: one operation's time
        let deadline = match super::deadline::after(timeout) {
            at if at > tokio::time::Instant::now() => at,
            _ => super::deadline::after(self.operation_timeout()),
        };
        let deadline = super::deadline::in_scope(deadline);
        let session = observe::session_hex(self.status().session_id);
        let (namespace, ensemble) = (self.namespace().unwrap_or(""), self.connect_string());
        self.inner.draining.store(true, Ordering::SeqCst);
        if tokio::time::timeout_at(deadline, self.background_deletes_done()).await.is_err() {
            let pending = self.pending_background_deletes();
            tracing::warn!(pending, %session, namespace, ensemble, "shutdown: background deletes still pending at the deadline");
        }
        // a close sent while disconnected reaches no server: the client ends the session
        // locally, and the server keeps it (and its ephemeral nodes) until it expires
        let connected = self.status().state.is_connected();
        self.close();
        let ended = lock(&self.inner.ended).clone();
        let acknowledged = match ended {
            // closed before its first session was stored: nothing on the server
            None => true,
            Some(watcher) => {
                tokio::time::timeout_at(deadline, session_ended(watcher, connected)).await.unwrap_or(false)
            }
        };
        if acknowledged {
            tracing::info!("shutdown: the session is closed");
            Ok(())
        } else {
            tracing::warn!(?timeout, %session, namespace, ensemble, "shutdown: the server did not acknowledge the session's close in time");
            Err(Error::timeout(timeout, crate::TimeoutStep::Closing))
        }
    }

    /// Resolves once no background delete is pending.
    async fn background_deletes_done(&self) {
        loop {
            let idle = self.inner.deletes_idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.pending_background_deletes() == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Waits until the framework is connected, for at most `timeout` (or until the deadline
    /// of the caller's [`with_deadline`](crate::with_deadline) scope, when that is earlier).
    /// A `timeout` of zero does not wait: `Ok` when connected now; `Duration::MAX` waits
    /// without bound.
    ///
    /// # Errors
    /// [`Error::Timeout`] when not connected in time, [`Error::Closed`] when closed, the
    /// refusal ([`Error::Tls`], [`Error::AuthFailed`]) when the state is (or becomes)
    /// [`REFUSED`](ConnectionState::Refused).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_connected(&self, timeout: Duration) -> Result<()> {
        let mut rx = self.status_watch();
        let waiting = rx.wait_for(|s| s.closed || s.state.is_connected() || s.state == ConnectionState::Refused);
        let until = super::deadline::in_scope(super::deadline::after(timeout));
        let status = match tokio::time::timeout_at(until, waiting).await {
            Err(_) => return Err(Error::timeout(timeout, crate::TimeoutStep::Connecting)),
            Ok(Err(_)) => return Err(Error::Closed),
            Ok(Ok(status)) => *status,
        };
        match status {
            s if s.closed => Err(Error::Closed),
            // the refusal is stored before the state goes REFUSED (and kept after)
            s if s.state == ConnectionState::Refused => {
                Err(lock(&self.inner.refusal).as_ref().map_or(Error::Closed, Error::duplicate))
            }
            _ => Ok(()),
        }
    }

    /// Why the ensemble refuses to open a session for this framework ([`Error::Tls`] or
    /// [`Error::AuthFailed`]), while the state is [`REFUSED`](ConnectionState::Refused);
    /// `None` otherwise.
    pub fn refusal(&self) -> Option<Error> {
        if self.connection_state() != ConnectionState::Refused {
            return None;
        }
        lock(&self.inner.refusal).as_ref().map(Error::duplicate)
    }

    /// Reads the TLS certificate files again (feature `tls`: those of
    /// `TlsConfig::from_ca_file` and `TlsConfig::with_client_identity_files`), for
    /// certificate rotation: every connection made from now on — a reconnect of the current
    /// session, every session created later — uses them; connections that are up stay as they
    /// are. A framework in the [`REFUSED`](ConnectionState::Refused) state then tries again to
    /// build a session (also without TLS settings: after a SASL refusal was fixed on the
    /// server).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a file cannot be read or holds no valid certificate or
    /// key: the certificates in use stay, and a refused framework does not try again.
    /// [`Error::Closed`] after [`close`](Self::close).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: &zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// // the files given to TlsConfig were replaced by renewed certificates
    /// fw.reload()?;
    /// # Ok(()) }
    /// ```
    pub fn reload(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.inner.cfg.tls {
            tls.reload()?;
            tracing::info!("TLS certificates reloaded");
        }
        self.inner.reloads.send_modify(|n| *n += 1);
        Ok(())
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

    /// The `path` label of a recipe's metrics at `path`: set only when the framework was
    /// built with [`FrameworkBuilder::metrics_path_labels`].
    pub(crate) fn path_label(&self, path: &str) -> observe::PathLabel {
        observe::PathLabel::new(self.inner.cfg.metrics_path_labels, path)
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

    /// How long an operation outside a deadline scope may take (and a `try_*` form).
    pub(crate) fn operation_timeout(&self) -> Duration {
        self.inner.cfg.operation_timeout
    }

    /// The largest request sent to the server ([`FrameworkBuilder::max_request_size`]).
    pub(crate) fn max_request_size(&self) -> usize {
        self.inner.cfg.max_request_size
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
    #[cfg(feature = "raw-client")]
    #[cfg_attr(docsrs, doc(cfg(feature = "raw-client")))]
    pub fn session_info(&self) -> Result<zookeeper_client::SessionInfo> {
        Ok(self.session()?.raw.session().clone())
    }
}

impl Inner {
    /// The shared state of a framework whose first session is `session`.
    pub(super) fn new(cfg: Config, session: Session) -> Arc<Inner> {
        let status = SessionStatus {
            state: ConnectionState::Connected,
            session_id: session.raw.session_id().0,
            suspensions: 0,
            losses: 0,
            closed: false,
        };
        let (events, _) = broadcast::channel(256);
        observe::session_state(None, Some(ConnectionState::Connected.as_str()));
        tracing::info!(
            session = %observe::session_hex(status.session_id),
            namespace = cfg.namespace.as_deref().unwrap_or(""),
            ensemble = %cfg.connect_string,
            "connected",
        );
        Arc::new(Inner {
            cfg,
            session: Mutex::new(Some(session)),
            status: watch::Sender::new(status),
            events: Mutex::new(Some(events)),
            refusal: Mutex::new(None),
            reloads: watch::Sender::new(0),
            runtime: tokio::runtime::Handle::current(),
            pending_deletes: Default::default(),
            deletes_idle: Default::default(),
            draining: AtomicBool::new(false),
            ended: Mutex::new(None),
            shutdown: Default::default(),
            extensions: Default::default(),
            ensemble: Default::default(),
        })
    }

    pub(super) fn set_state(&self, state: ConnectionState, session_id: Option<i64>) {
        let mut changed = None;
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
            let old = (s.state, s.session_id);
            if let Some(id) = session_id {
                s.session_id = id;
            }
            let modified = s.state != state || session_id.is_some();
            changed = modified.then_some(old);
            s.state = state;
            modified
        });
        let Some((from, old_session)) = changed else { return };
        self.observe_transition(from, state, old_session, session_id);
        if let Some(tx) = lock(&self.events).as_ref() {
            let _ = tx.send(state);
        }
    }

    /// Logs and counts a change of connection state `from` -> `to` of the session
    /// `old_session` (`new_session`: the one built after a loss, if any).
    fn observe_transition(
        &self,
        from: ConnectionState,
        to: ConnectionState,
        old_session: i64,
        new_session: Option<i64>,
    ) {
        use observe::SessionEvent;
        if from != to {
            observe::session_state(Some(from.as_str()), Some(to.as_str()));
        }
        let session = observe::session_hex(new_session.unwrap_or(old_session));
        let namespace = self.cfg.namespace.as_deref().unwrap_or("");
        let ensemble = self.cfg.connect_string.as_str();
        match to {
            ConnectionState::Suspended => {
                observe::session_event(SessionEvent::Suspension);
                tracing::warn!(%session, namespace, ensemble, "connection SUSPENDED: the session may expire; holders stop trusting their locks");
            }
            ConnectionState::Lost => {
                observe::session_event(SessionEvent::Expiry);
                tracing::error!(%session, namespace, ensemble, "session LOST: its locks, leaderships and ephemeral nodes are gone; building a new session");
            }
            ConnectionState::Refused => {
                observe::session_event(SessionEvent::Refusal);
                tracing::error!(%session, namespace, ensemble, "new session REFUSED by the ensemble");
            }
            ConnectionState::Reconnected if new_session.is_some() => {
                observe::session_event(SessionEvent::Recreation);
                let old = observe::session_hex(old_session);
                tracing::warn!(%session, old_session = %old, namespace, ensemble, "new session built after the loss (RECONNECTED)");
            }
            ConnectionState::Reconnected => {
                observe::session_event(SessionEvent::Reconnect);
                tracing::info!(%session, namespace, ensemble, "connection RECONNECTED to the same session");
            }
            _ => tracing::info!(%session, namespace, ensemble, state = %to, "connection state"),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // a framework dropped without a close leaves the session-state gauge
        let status = *self.status.borrow();
        if !status.closed {
            observe::session_state(Some(status.state.as_str()), None);
        }
    }
}

/// Resolves once the session `watcher` follows has ended: `true` when it expired, or was
/// closed while connected throughout (the server answered our close request), `false` when
/// it was closed with the connection down at some point since the close (`connected`: it was
/// up when the close was asked for) — the client then ends it locally and the server keeps it
/// until it expires — or failed otherwise (its authentication refused on a reconnect).
async fn session_ended(mut watcher: zookeeper_client::StateWatcher, mut connected: bool) -> bool {
    use zookeeper_client::SessionState;
    loop {
        match watcher.state() {
            SessionState::Expired => return true,
            SessionState::Closed => return connected,
            state if state.is_terminated() => return false,
            SessionState::Disconnected => connected = false,
            _ => {}
        }
        watcher.changed().await;
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

tokio::task_local! {
    /// Set in the tasks of the background deletes.
    pub(crate) static BACKGROUND_DELETE: ();
}

/// Whether this runs in a background delete's task (which a draining shutdown lets finish).
pub(crate) fn in_background_delete() -> bool {
    BACKGROUND_DELETE.try_with(|_| ()).is_ok()
}
