//! Operations through the retry loop, and the building blocks every recipe uses: create with
//! container parents, protected ephemeral-sequential create, guaranteed delete.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::framework::Stat;
use tokio::time::Instant;
use zookeeper_client::{Client, Error as ZkError};

use super::CreateMode;

use super::backoff::Backoff;
use super::deadline::{self, Deadline};
use super::missing::IfExists;
use super::paths::{self, validate_path};
use super::request::Conn;
use super::retry::{is_retryable, RetryAttempt, RetryPolicy};
use super::Framework;
use crate::error::{Error, Result, TimeoutStep, ZooKeeperError};

/// A node created by the framework.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::CreateMode;
///
/// let created = fw.create("/jobs/job-", b"payload", CreateMode::PersistentSequential).await?;
/// println!("created {} (czxid {})", created.path, created.stat.czxid);
/// assert!(created.name().starts_with("job-"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedNode {
    /// The node's full path (relative to the namespace).
    pub path: String,
    /// The node's stat as the create returned it.
    pub stat: Stat,
}

impl CreatedNode {
    /// The node's name (last path segment).
    pub fn name(&self) -> &str {
        paths::node_name(&self.path)
    }
}

/// The start of a protected node's name (Curator's `withProtection`): `_c_<uuid>-<name>`.
pub(crate) const PROTECTED_PREFIX: &str = "_c_";

/// The name of a protected node (Curator's `withProtection`): `_c_<uuid>-<name>`. After a
/// connection loss during create, the node is found again by its unique prefix.
#[derive(Debug, Clone)]
pub(crate) struct ProtectedName {
    parent: String,
    prefix: String,
    /// `<parent>/<prefix><name>`, built once: every create attempt sends it.
    path: String,
}

/// An operation and its path, for the retry logs and the operation metrics.
struct Named<'a> {
    op: &'static str,
    path: &'a str,
    /// A write that is not idempotent: sent and not answered by the deadline, its outcome is
    /// unknown ([`Error::OutcomeUnknown`]), not a plain [`Error::Timeout`].
    write: bool,
}

impl Named<'_> {
    /// The error of an operation whose deadline passed in `step`; `sent`: an attempt was sent.
    fn missed(&self, bound: Deadline, step: TimeoutStep, sent: bool) -> Error {
        if self.write && sent {
            return Error::OutcomeUnknown { path: self.path.to_string() };
        }
        Error::timeout(bound.timeout(), step)
    }
}

/// How an attempt failed, as the retry loop sees it.
enum Failed {
    /// A retryable condition (connection loss, session moved...): try again as the policy allows.
    Retry(ZooKeeperError),
    /// The operation's answer: returned as it is.
    Answer(Error),
}

impl Failed {
    /// Retried (a retryable [`Error::ZooKeeper`]), or the operation's answer.
    fn of(error: Error) -> Failed {
        match error {
            Error::ZooKeeper(e) if e.is_retryable() => Failed::Retry(e),
            other => Failed::Answer(other),
        }
    }
}

/// What a background delete removes.
#[derive(Debug)]
enum DeleteTarget {
    Path(String),
    Protected(ProtectedName),
}

impl ProtectedName {
    pub fn new(parent: &str, name: &str) -> Self {
        // (no `format!`: one of these per acquire)
        let mut uuid = uuid::Uuid::encode_buffer();
        let uuid = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut uuid);
        let mut prefix = String::with_capacity(PROTECTED_PREFIX.len() + uuid.len() + 1);
        prefix.push_str(PROTECTED_PREFIX);
        prefix.push_str(uuid);
        prefix.push('-');
        let mut path = String::with_capacity(parent.len() + 1 + prefix.len() + name.len());
        if parent != "/" {
            path.push_str(parent);
        }
        path.push('/');
        path.push_str(&prefix);
        path.push_str(name);
        Self { parent: parent.to_string(), prefix, path }
    }

    /// The path to create: `<parent>/_c_<uuid>-<name>`.
    pub fn path(&self) -> String {
        self.path.clone()
    }

    pub fn parent(&self) -> &str {
        &self.parent
    }

    /// The unique prefix, `_c_<uuid>-`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The protection prefix a child name starts with (`_c_<uuid>-`), if it has one.
    pub fn prefix_of(child: &str) -> Option<&str> {
        // `_c_`, a hyphenated UUID (36 characters), `-`
        child.get(..40).filter(|p| p.starts_with(PROTECTED_PREFIX) && p.ends_with('-'))
    }

    /// Whether `child` (a child name of the parent) is ours.
    pub fn matches(&self, child: &str) -> bool {
        child.starts_with(&self.prefix)
    }
}

impl Framework {
    /// Runs `op` with the current client until it succeeds, fails with a non-retryable error,
    /// the retry policy gives up, or the deadline passes. Before each attempt it waits (up to
    /// the connection timeout) for a connection; after a session loss the next attempt uses
    /// the new session.
    ///
    /// The deadline is the [`with_deadline`](crate::with_deadline) scope's this runs in, or
    /// else the [`operation_timeout`](crate::FrameworkBuilder::operation_timeout) from now. It
    /// bounds every step: the wait for a connection, each attempt (cut when it passes: a server
    /// that stops answering with the connection open holds nobody), and the policy's pauses
    /// (one that would end past it is not taken; the policy sees the time left in
    /// [`RetryAttempt::remaining`](crate::RetryAttempt::remaining)).
    ///
    /// # Errors
    /// The operation's own non-retryable error as [`Error::ZooKeeper`];
    /// [`Error::RetriesExhausted`] when the policy gives up; [`Error::Timeout`] when the
    /// deadline passes (its [`step`](crate::TimeoutStep) says where); [`Error::Closed`].
    ///
    /// # Cancel safety
    /// Cancelling abandons the current attempt; a request already sent may still be applied by
    /// the server.
    #[cfg(feature = "raw-client")]
    #[cfg_attr(docsrs, doc(cfg(feature = "raw-client")))]
    pub async fn retry<T, F, Fut>(&self, op: F) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, ZkError>>,
    {
        self.retry_with(self.retry_policy(), op).await
    }

    /// [`retry`](Self::retry) with another policy than the framework's.
    ///
    /// # Errors
    /// As [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// As [`retry`](Self::retry).
    #[cfg(feature = "raw-client")]
    #[cfg_attr(docsrs, doc(cfg(feature = "raw-client")))]
    pub async fn retry_with<T, F, Fut>(&self, policy: &dyn RetryPolicy, mut op: F) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, ZkError>>,
    {
        use futures_util::TryFutureExt;
        let named = Named { op: "custom", path: "", write: false };
        self.retries(named, policy, |client| op(client).map_err(Error::from_client)).await
    }

    /// The retry loop of the operation `op` on `path`, whose attempts send their requests
    /// through the [`Conn`] they are given: the one way to the server (see `request.rs`).
    pub(crate) async fn request<T, F, Fut>(&self, op: &'static str, path: &str, mut f: F) -> Result<T>
    where
        F: FnMut(Conn) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let named = Named { op, path, write: false };
        self.retries(named, self.retry_policy(), |client| f(Conn::new(self, client))).await
    }

    /// [`request`](Self::request) of a write that is not idempotent: when its deadline
    /// passes after an attempt was sent, the error is [`Error::OutcomeUnknown`] for `path`.
    pub(crate) async fn request_write<T, F, Fut>(&self, op: &'static str, path: &str, mut f: F) -> Result<T>
    where
        F: FnMut(Conn) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let named = Named { op, path, write: true };
        self.retries(named, self.retry_policy(), |client| f(Conn::new(self, client))).await
    }

    /// The retry loop (the one of the framework: [`request`](Self::request)'s, and the raw
    /// client's [`retry`](Self::retry)), its latency and retries recorded under `named.op`.
    async fn retries<T, F, Fut>(&self, named: Named<'_>, policy: &dyn RetryPolicy, op: F) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let start = Instant::now();
        let result = self.retry_loop(&named, policy, op, start).await;
        crate::observe::operation(named.op, result.is_ok(), start);
        result
    }

    /// The retry loop under the operation's deadline (its scope's, or the operation timeout
    /// from now), honoured at every step: the wait for a connection is capped at the time
    /// left, each attempt is cut at the deadline, a pause that would end past it is not taken
    /// (the policy sees the time left), and no attempt starts once it has passed.
    async fn retry_loop<T, F, Fut>(
        &self,
        named: &Named<'_>,
        policy: &dyn RetryPolicy,
        mut op: F,
        start: Instant,
    ) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let bound = deadline::of_operation(self.operation_timeout());
        let mut retries = 0u32;
        // whether an attempt was sent: a write's outcome is unknown from then on
        let mut sent = false;
        loop {
            let remaining = bound.remaining();
            if remaining.is_zero() {
                return Err(named.missed(bound, TimeoutStep::Connecting, sent));
            }
            let outcome = match self.wait_connected(self.connection_timeout().min(remaining)).await {
                Err(Error::Closed) => return Err(Error::Closed),
                Err(refused @ (Error::Tls { .. } | Error::AuthFailed { .. })) => return Err(refused),
                Err(_) if bound.remaining().is_zero() => {
                    return Err(named.missed(bound, TimeoutStep::Connecting, sent))
                }
                Err(_) => Err(Failed::Retry(ZooKeeperError::ConnectionLoss)),
                Ok(()) => {
                    let attempt = op(self.raw_client()?);
                    sent = true;
                    match tokio::time::timeout_at(bound.instant(), attempt).await {
                        Ok(outcome) => outcome.map_err(Failed::of),
                        Err(_) => {
                            tracing::debug!(op = named.op, path = named.path, retries, "no reply by the deadline");
                            return Err(named.missed(bound, TimeoutStep::Reply, sent));
                        }
                    }
                }
            };
            let error = match outcome {
                Ok(value) => return Ok(value),
                Err(Failed::Answer(e)) => return Err(e),
                Err(Failed::Retry(e)) => e,
            };
            // a shutdown draining the background deletes refuses new attempts in `client()`
            if self.status().closed {
                return Err(Error::Closed);
            }
            let remaining = bound.remaining();
            let attempt = RetryAttempt::new(retries, start.elapsed(), &error).with_remaining(remaining);
            match policy.allow_retry(&attempt) {
                None => {
                    tracing::debug!(op = named.op, path = named.path, %error, retries, "retries exhausted");
                    return Err(Error::RetriesExhausted {
                        attempts: retries + 1,
                        elapsed: start.elapsed(),
                        last: error,
                    });
                }
                Some(pause) if pause >= remaining => {
                    tracing::debug!(op = named.op, path = named.path, %error, retries, ?pause, "no time left to retry");
                    return Err(named.missed(bound, TimeoutStep::RetryPause, sent));
                }
                Some(pause) => {
                    tracing::debug!(op = named.op, path = named.path, %error, retries, ?pause, "retrying");
                    crate::observe::retried(named.op);
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {},
                        _ = self.closed() => return Err(Error::Closed),
                    }
                    retries += 1;
                }
            }
        }
    }

    /// Creates `path` with `data`, creating missing parents as containers, through the retry
    /// loop. A sequential mode appends the sequence; the returned path is the created one.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; [`Error::ZooKeeper`] with `NodeExists`, `NoAuth`,
    /// `NoChildrenForEphemerals`...; the retry loop's errors (see [`retry`](crate::retry)). A retried
    /// non-sequential create that finds the node already there reports `NodeExists`; use
    /// [`create_protected`](Self::create_protected) for sequential nodes that must not be
    /// duplicated by a retry. [`Error::OutcomeUnknown`] when the deadline passed after the
    /// create was sent and before it was answered: the node may exist. On a
    /// [`compressed`](Self::compressed) handle, the provider's error when it cannot compress
    /// `data` (nothing is sent).
    ///
    /// # Cancel safety
    /// Not cancel safe: the node may have been created.
    pub async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<CreatedNode> {
        validate_path(path)?;
        let data = &*self.encode(path, data)?;
        self.request_write("create", path, |conn| async move { conn.create_with_parents(path, data, mode, None).await })
            .await
    }

    /// [`create`](Self::create) for a recipe that tolerates a node already there (it creates
    /// a node if absent, or adopts it): past the deadline, a plain [`Error::Timeout`] rather
    /// than [`Error::OutcomeUnknown`].
    pub(crate) async fn create_if_absent(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<CreatedNode> {
        validate_path(path)?;
        self.request("create", path, |conn| async move { conn.create_with_parents(path, data, mode, None).await }).await
    }

    /// Creates `dir` and its ancestors as containers (`mkdir -p`); re-creates a namespace node
    /// that vanished.
    pub(crate) async fn make_parents(&self, client: &Client, dir: &str) -> std::result::Result<(), ZkError> {
        if dir == "/" {
            return self.ensure_namespace().await;
        }
        match self.mkdirs(client, dir, zookeeper_client::CreateMode::Container, false).await {
            Err(ZkError::NoNode) if self.namespace().is_some() => {
                self.ensure_namespace().await?;
                self.mkdirs(client, dir, zookeeper_client::CreateMode::Container, false).await
            }
            other => other,
        }
    }

    async fn ensure_namespace(&self) -> std::result::Result<(), ZkError> {
        let (Some(ns), Ok(session)) = (self.namespace(), self.session()) else { return Ok(()) };
        self.mkdirs(&session.raw, ns, zookeeper_client::CreateMode::Persistent, true).await
    }

    /// Creates a protected node `<parent>/_c_<uuid>-<name>[seq]` in `mode` (Curator's
    /// `withProtection`): if the create is interrupted by a connection loss, the parent is
    /// listed and a node with our unique prefix is adopted — for an ephemeral mode only if its
    /// `ephemeralOwner` is the current session; a node left by an older session is deleted and
    /// a new one created.
    ///
    /// # Errors
    /// As [`create`](Self::create).
    ///
    /// # Cancel safety
    /// Not cancel safe by itself: a node may be left behind (recipes wrap it so that they are).
    pub async fn create_protected(
        &self,
        parent: &str,
        name: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<CreatedNode> {
        validate_path(parent)?;
        if name.contains('/') {
            return Err(Error::invalid("name", format!("node name {name:?} must not contain '/'")));
        }
        let protected = ProtectedName::new(parent, name);
        let data = self.encode(&protected.path(), data)?;
        self.create_protected_name(&protected, &data, mode, None).await
    }

    /// Creates the protected node `name` through the retry loop: the one protected create of
    /// the framework and its recipes. An attempt after one that may have made the node (a lost
    /// reply) first looks for it by its prefix ([`find_protected`]): adopted if it is ours, an
    /// ephemeral leftover of an older session deleted.
    pub(crate) async fn create_protected_name(
        &self,
        name: &ProtectedName,
        data: &[u8],
        mode: CreateMode,
        ttl: Option<Duration>,
    ) -> Result<CreatedNode> {
        let nothing = |_| std::future::ready(Ok(()));
        Ok(self.create_protected_then(name, data, mode, ttl, nothing).await?.0)
    }

    /// [`create_protected_name`](Self::create_protected_name) with a request sent right
    /// behind the create on the same connection, in the same round trip: `behind`, which sees
    /// the node (a listing of its parent) — it is polled once the create is sent, so what it
    /// sends goes out after it. Its answer comes with the node: `None` when the node was found
    /// rather than created, or `behind` failed (the caller asks again).
    pub(crate) async fn create_protected_then<T, F, Fut>(
        &self,
        name: &ProtectedName,
        data: &[u8],
        mode: CreateMode,
        ttl: Option<Duration>,
        behind: F,
    ) -> Result<(CreatedNode, Option<T>)>
    where
        F: Fn(Conn) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let attempted = std::sync::atomic::AtomicBool::new(false);
        let path = name.path();
        self.request("create", &name.parent, |conn| {
            let (path, attempted, behind) = (&path, &attempted, &behind);
            async move {
                if attempted.swap(true, Ordering::SeqCst) {
                    if let Some(found) = find_protected(&conn, name, mode).await? {
                        return Ok((found, None));
                    }
                }
                // requests go out in the order they are made: `behind` after the create
                let (created, answer) = tokio::join!(conn.create(path, data, mode, ttl), behind(conn.clone()));
                match created {
                    Ok(node) => Ok((node, answer.ok())),
                    Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => {
                        conn.make_parents(name.parent()).await?;
                        let (created, answer) = tokio::join!(conn.create(path, data, mode, ttl), behind(conn.clone()));
                        Ok((created?, answer.ok()))
                    }
                    Err(e) => Err(e),
                }
            }
        })
        .await
    }

    /// Deletes `path` (a missing node counts as deleted) through the retry loop; if that fails
    /// with a retryable error, the delete continues in the background — retried until it
    /// succeeds, or the node turns out to be an ephemeral node of a session that is gone (the
    /// server removes it), or the framework closes; a persistent node is deleted in whatever
    /// session comes next — and the error is returned. The node is never silently forgotten.
    ///
    /// # Errors
    /// The error of the foreground attempt ([`Error::RetriesExhausted`], [`Error::ZooKeeper`]
    /// for `NoAuth`/`NotEmpty`, which are not retried in the background either).
    ///
    /// # Cancel safety
    /// Cancelling stops the foreground attempt without a background one.
    pub async fn delete_guaranteed(&self, path: &str) -> Result<()> {
        validate_path(path)?;
        let owner = self.status().session_id;
        match self.delete_if_exists(path).await {
            Err(e @ (Error::RetriesExhausted { .. } | Error::Timeout { .. })) => {
                self.delete_in_background(path.to_string(), Some(owner));
                Err(e)
            }
            other => other,
        }
    }

    /// Deletes `path` (any version) through the retry loop; a missing node counts as deleted.
    pub(crate) async fn delete_if_exists(&self, path: &str) -> Result<()> {
        self.request("delete", path, |conn| async move { conn.delete(path, None).await.if_exists().map(drop) }).await
    }

    /// Deletes `path` in the background, retrying with backoff until it is gone, the session
    /// `ephemeral_owner` (if given) is no longer the current one (its ephemeral nodes are gone
    /// with it), or the framework closes. Never blocks; usable outside a runtime (e.g. from
    /// `Drop`).
    ///
    /// Not part of the public API (the recipes' own release path; a service deletes with
    /// [`delete_guaranteed`](Self::delete_guaranteed)): public only for this crate's shutdown
    /// tests, which need background deletes of persistent nodes in flight.
    #[doc(hidden)]
    pub fn delete_in_background(&self, path: String, ephemeral_owner: Option<i64>) {
        self.spawn_delete(DeleteTarget::Path(path), ephemeral_owner);
    }

    /// Sends the delete of `path` right now — so that it is ordered before any request made
    /// after this call, as a release must be — and finishes it in the background: a failure
    /// falls back to [`delete_in_background`](Self::delete_in_background)'s retries. Never blocks;
    /// usable from `Drop`.
    pub(crate) fn delete_now_in_background(&self, path: String, ephemeral_owner: Option<i64>) {
        let same_session = ephemeral_owner.is_none_or(|owner| owner == self.status().session_id);
        let client = match self.raw_client() {
            Ok(client) if same_session && self.status().state.is_connected() => client,
            _ => return self.delete_in_background(path, ephemeral_owner),
        };
        let sent = client.delete(&path, None);
        self.spawn_counted_delete(|fw| async move {
            match sent.await {
                Ok(()) | Err(ZkError::NoNode) => {}
                Err(e) if is_retryable(&e) => fw.delete_in_background(path, ephemeral_owner),
                Err(e) => tracing::warn!(%path, error = %e, "release: the server refused the delete; the node stays"),
            }
        });
    }

    /// Deletes, in the background, whatever node carries the protection prefix of `name`
    /// (an abandoned create whose reply we never saw): retried as
    /// [`delete_in_background`](Self::delete_in_background)'s, until no such node is left, or
    /// the session changed and the only ones left are ephemeral (they go with the old session);
    /// a persistent one (a TTL contender, an expiring permit) is deleted in the next session.
    pub(crate) fn delete_protected_in_background(&self, name: ProtectedName) {
        let owner = self.status().session_id;
        self.spawn_delete(DeleteTarget::Protected(name), Some(owner));
    }

    /// Spawns `delete` (given a handle of this framework) on the framework's runtime, counted
    /// in [`pending_background_deletes`](Self::pending_background_deletes) until it ends (or is
    /// dropped with the runtime).
    pub(crate) fn spawn_counted_delete<F, Fut>(&self, delete: F)
    where
        F: FnOnce(Framework) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        struct Pending(Framework);
        impl Drop for Pending {
            fn drop(&mut self) {
                crate::observe::deletes_pending(false);
                if self.0.inner.pending_deletes.fetch_sub(1, Ordering::SeqCst) == 1 {
                    self.0.inner.deletes_idle.notify_waiters();
                }
            }
        }
        self.inner.pending_deletes.fetch_add(1, Ordering::SeqCst);
        crate::observe::deletes_pending(true);
        let pending = Pending(self.clone());
        let work = delete(self.clone());
        // a shutdown lets it finish: its operations pass while new work is refused
        self.runtime().spawn(super::session::BACKGROUND_DELETE.scope((), async move {
            work.await;
            drop(pending);
        }));
    }

    fn spawn_delete(&self, target: DeleteTarget, ephemeral_owner: Option<i64>) {
        self.spawn_counted_delete(|fw| async move {
            let mut pause = Backoff::new(Duration::from_millis(20), Duration::from_secs(1)).with_jitter();
            let mut owner = ephemeral_owner;
            let mut failures = 0u32;
            loop {
                // not `is_closed`: a shutdown that is draining lets it finish
                if fw.status().closed {
                    break;
                }
                if owner.is_some_and(|owner| owner != fw.status().session_id) {
                    // The session the node may belong to is gone, and its ephemeral nodes with
                    // it; a persistent node there is still ours to delete, in any session.
                    match fw.still_to_delete_after_session_change(&target).await {
                        Ok(true) => owner = None,
                        Ok(false) => break,
                        Err(Error::RetriesExhausted { .. } | Error::Timeout { .. }) => {
                            pause.sleep().await;
                            continue;
                        }
                        Err(_) => break,
                    }
                }
                let outcome = match &target {
                    DeleteTarget::Path(path) => fw.delete_if_exists(path).await,
                    DeleteTarget::Protected(name) => fw.delete_protected_once(name).await,
                };
                match outcome {
                    Ok(()) | Err(Error::Closed) => break,
                    Err(e @ (Error::RetriesExhausted { .. } | Error::Timeout { .. })) => {
                        // once with its context; the retries that follow are debug
                        let session = crate::observe::session_hex(fw.status().session_id);
                        match failures {
                            0 => tracing::warn!(?target, %session, error = %e, "background delete failed; retrying until it succeeds or the session ends (further failures at debug)"),
                            _ => tracing::debug!(?target, error = %e, failures, "background delete failed; retrying"),
                        }
                        failures += 1;
                    }
                    Err(e) => {
                        let session = crate::observe::session_hex(fw.status().session_id);
                        tracing::warn!(?target, %session, error = %e, "background delete gave up: not retryable");
                        break;
                    }
                }
                pause.sleep().await;
            }
        });
    }

    /// Whether a background delete whose node may have been an ephemeral of a session now
    /// gone still has work: only when a persistent node is at its path, or carries its
    /// protection prefix (an ephemeral one is the old session's, which the server removes, or
    /// someone else's). A protected create is not always ephemeral: a TTL contender, an
    /// expiring permit are persistent, and one whose reply was lost may have landed in the
    /// old session; nobody else would delete it before its TTL or expiry.
    async fn still_to_delete_after_session_change(&self, target: &DeleteTarget) -> Result<bool> {
        match target {
            DeleteTarget::Path(path) => Ok(self.exists(path).await?.is_some_and(|stat| stat.ephemeral_owner == 0)),
            DeleteTarget::Protected(name) => {
                for child in self.children_or_empty(name.parent()).await?.iter().filter(|c| name.matches(c)) {
                    let path = paths::join(name.parent(), child);
                    if self.exists(&path).await?.is_some_and(|stat| stat.ephemeral_owner == 0) {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    async fn delete_protected_once(&self, name: &ProtectedName) -> Result<()> {
        let children = self.children_or_empty(name.parent()).await?;
        for child in children.iter().filter(|c| name.matches(c)) {
            self.delete_if_exists(&paths::join(name.parent(), child)).await?;
        }
        Ok(())
    }

    /// How many background deletes are still running.
    pub fn pending_background_deletes(&self) -> usize {
        self.inner.pending_deletes.load(Ordering::SeqCst)
    }

    /// Reads a node's data, through the retry loop.
    ///
    /// # Errors
    /// `NoNode` as [`Error::ZooKeeper`]; the retry loop's errors (see [`retry`](crate::retry)).
    /// On a [`compressed`](Self::compressed) handle, the provider's error for data it cannot
    /// decompress: [`Error::CorruptData`] for data that is not gzip (also data written
    /// uncompressed, as in Curator).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let (data, stat) = self.get_data_plain(path).await?;
        Ok((self.decode(path, data)?, stat))
    }

    /// [`get_data`](Self::get_data) without decompression, whatever the handle: for the
    /// recipes whose data is not compressed.
    pub(crate) async fn get_data_plain(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        validate_path(path)?;
        self.request("get_data", path, |conn| async move { conn.get_data(path).await }).await
    }

    /// Writes a node's data (optionally only at `expected_version`), through the retry loop.
    ///
    /// # Errors
    /// `NoNode`, `BadVersion` as [`Error::ZooKeeper`]; the retry loop's errors (see [`retry`](crate::retry)).
    /// With `expected_version`, [`Error::OutcomeUnknown`] when the deadline passed after the
    /// write was sent and before it was answered (sent again, an applied write would be
    /// refused as `BadVersion`); without, a plain [`Error::Timeout`] (sending it again is
    /// harmless). On a [`compressed`](Self::compressed) handle, the provider's error when it
    /// cannot compress `data` (nothing is sent).
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    pub async fn set_data(&self, path: &str, data: &[u8], expected_version: Option<i32>) -> Result<Stat> {
        validate_path(path)?;
        self.set_data_plain(path, &self.encode(path, data)?, expected_version).await
    }

    /// [`set_data`](Self::set_data) without compression, whatever the handle: for the
    /// recipes whose data is not compressed.
    pub(crate) async fn set_data_plain(&self, path: &str, data: &[u8], expected_version: Option<i32>) -> Result<Stat> {
        validate_path(path)?;
        match expected_version {
            // a versioned write applied but not answered would be refused when sent again
            Some(_) => {
                self.request_write(
                    "set_data",
                    path,
                    |conn| async move { conn.set_data(path, data, expected_version).await },
                )
                .await
            }
            None => self.request("set_data", path, |conn| async move { conn.set_data(path, data, None).await }).await,
        }
    }

    /// The node's stat, or `None` if it does not exist, through the retry loop.
    ///
    /// # Errors
    /// The retry loop's errors (see [`retry`](crate::retry)).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        validate_path(path)?;
        self.request("exists", path, |conn| async move { conn.exists(path).await }).await
    }

    /// The names of a node's children (unsorted), through the retry loop.
    ///
    /// # Errors
    /// `NoNode` as [`Error::ZooKeeper`]; the retry loop's errors (see [`retry`](crate::retry)).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn children(&self, path: &str) -> Result<Vec<String>> {
        validate_path(path)?;
        self.request("children", path, |conn| async move { conn.children(path).await }).await
    }

    /// Deletes a node (any version), through the retry loop. Unlike
    /// [`delete_guaranteed`](Self::delete_guaranteed) a missing node is an error.
    ///
    /// # Errors
    /// `NoNode`, `NotEmpty`, `NoAuth` as [`Error::ZooKeeper`]; the retry loop's
    /// errors (see [`retry`](crate::retry)); [`Error::OutcomeUnknown`] when the deadline passed after the
    /// delete was sent and before it was answered.
    ///
    /// # Cancel safety
    /// Not cancel safe: the delete may have been applied.
    pub async fn delete(&self, path: &str) -> Result<()> {
        validate_path(path)?;
        self.request_write("delete", path, |conn| async move { conn.delete(path, None).await }).await
    }
}

/// Looks for our protected node after an interrupted create; adopts it if it belongs to the
/// current session (or is persistent), deletes it if it is an ephemeral node of an older one.
pub(crate) async fn find_protected(conn: &Conn, name: &ProtectedName, mode: CreateMode) -> Result<Option<CreatedNode>> {
    conn.caught_up(name.parent()).await?;
    let Some(children) = conn.children(name.parent()).await.if_exists()? else { return Ok(None) };
    for child in children.into_iter().filter(|c| name.matches(c)) {
        let path = paths::join(name.parent(), &child);
        let Some(stat) = conn.exists(&path).await? else { continue };
        if !mode.is_ephemeral() || stat.ephemeral_owner == conn.session_id() {
            return Ok(Some(CreatedNode { path, stat }));
        }
        // A leftover of an older session: it will vanish with that session; do not wait.
        conn.delete(&path, None).await.if_exists()?;
    }
    Ok(None)
}
