//! The crate's one error type, its [`ErrorKind`], and what its variants carry.

use std::time::Duration;

mod copy;
mod details;
mod kind;
mod zookeeper;

pub use details::{ServerFeature, TimeoutStep, TlsFailure};
pub use kind::ErrorKind;
pub use zookeeper::ZooKeeperError;

/// Every error this crate returns.
///
/// # Acting on an error
/// [`kind()`](Self::kind) puts an error in one [`ErrorKind`], for a `match` that keeps
/// compiling as variants are added; the `is_*` methods ask the common questions of a retry
/// loop or an HTTP handler:
///
/// | method | true for | typical action |
/// |---|---|---|
/// | [`is_retryable`](Self::is_retryable) | transient connection/server conditions | try again later |
/// | [`is_timeout`](Self::is_timeout) | [`Timeout`](Self::Timeout), [`ConnectTimeout`](Self::ConnectTimeout) | 504 / try again |
/// | [`is_connection`](Self::is_connection) | connection loss, suspension, unreachable ensemble | 503 |
/// | [`is_lost`](Self::is_lost) | [`LockLost`](Self::LockLost), [`SessionLost`](Self::SessionLost) | stop the guarded work, acquire again |
/// | [`is_closed`](Self::is_closed) | [`Closed`](Self::Closed) | shut down |
/// | [`is_not_found`](Self::is_not_found) | `NoNode` and the recipes' "no such ..." | 404 |
/// | [`is_conflict`](Self::is_conflict) | `NodeExists`, `BadVersion`, `NotEmpty`, a node held by another session | 409, read again |
/// | [`is_invalid_input`](Self::is_invalid_input) | [`InvalidPath`](Self::InvalidPath), [`InvalidArgument`](Self::InvalidArgument) | 400, a bug of the caller |
/// | [`is_unsupported`](Self::is_unsupported) | [`ServerUnsupported`](Self::ServerUnsupported), [`Unsupported`](Self::Unsupported), the server's `Unimplemented` | 501, do not repeat |
///
/// Each `is_*` is `kind() == ErrorKind::…` of its name, but `is_retryable`, a property that
/// spans kinds (a timeout, a connection failure, a contended update...), and `is_timeout`,
/// also true for a [`ConnectTimeout`](Self::ConnectTimeout).
///
/// # Growing
/// `Error` and [`ErrorKind`] are `#[non_exhaustive]`, and so is every struct variant: match
/// its fields with `..` (`Error::LockLost { path, .. }`), so that a later release can add a
/// variant, a kind or a field without breaking you. Errors are not `Clone` or `PartialEq`
/// (so that a variant can carry an `io::Error` or a boxed source later): compare
/// [`kind()`](Self::kind)s or match, and share one error between tasks in an `Arc`.
///
/// # Sources
/// One rule for every variant: an error of another layer that a variant wraps (the
/// `zookeeper_client::Error` of [`RetriesExhausted`](Self::RetriesExhausted) and
/// [`Transaction`](Self::Transaction)) is its [`source()`](std::error::Error::source) and is
/// *not* repeated in its `Display`, so a chain printer (`anyhow`'s `{:#}`, `tracing`'s error
/// chains) prints each message once. [`ZooKeeper`](Self::ZooKeeper) is the server's error
/// itself (`#[error(transparent)]`): it displays as the server's error and has that error's
/// source. Print the whole chain (`{:#}` with `anyhow`, or walk `source()`) to see the cause
/// of a wrapped error.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) {
/// use zk_recipes::{Error, ErrorKind};
///
/// match fw.get_data("/config/feature-flags").await {
///     Ok((data, _stat)) => println!("{} bytes", data.len()),
///     Err(e) => match e.kind() {
///         ErrorKind::NotFound => println!("no flags: the defaults apply"),
///         _ if e.is_retryable() => eprintln!("try again later: {e}"),
///         _ => eprintln!("giving up: {e}"),
///     },
/// }
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path given to the API is not a valid absolute ZooKeeper path.
    #[error("invalid path {path:?}: {reason}")]
    #[non_exhaustive]
    InvalidPath {
        /// The offending path, as given.
        path: String,
        /// Why it was refused.
        reason: &'static str,
    },

    /// An argument is out of its allowed range (zero leases, zero timeout, empty set, ...).
    ///
    /// `argument` names the parameter (or builder setting) that was refused, as the API spells
    /// it, so a caller can tell which input to fix without parsing the message:
    ///
    /// ```
    /// use zk_recipes::Error;
    /// # fn check(e: Error) {
    /// match e {
    ///     Error::InvalidArgument { argument: "max_leases", .. } => { /* ask for at least 1 */ }
    ///     Error::InvalidArgument { argument, reason, .. } => eprintln!("bad {argument}: {reason}"),
    ///     _ => {}
    /// }
    /// # }
    /// ```
    #[error("invalid argument `{argument}`: {reason}")]
    #[non_exhaustive]
    InvalidArgument {
        /// The parameter or setting refused, e.g. `"max_leases"`, `"ttl"`, `"connect_string"`.
        argument: &'static str,
        /// Why it was refused.
        reason: String,
    },

    /// No session could be established within the connection timeout.
    #[error("could not connect to ZooKeeper at {connect_string:?} within {timeout:?}")]
    #[non_exhaustive]
    ConnectTimeout {
        /// The connect string that was tried.
        connect_string: String,
        /// The connection timeout that elapsed.
        timeout: Duration,
    },

    /// A TLS connection to a server of the ensemble failed its handshake: the server is
    /// reachable, but the connection can never succeed as configured (wrong CA, bad or expired
    /// certificate, a client certificate the server refuses, a plaintext port). Told apart from
    /// [`ConnectTimeout`](Self::ConnectTimeout) ("unreachable") by a probe handshake when a
    /// connection attempt fails (feature `tls`).
    #[error("TLS handshake with {server} failed: {failure}")]
    #[non_exhaustive]
    Tls {
        /// The server, `host:port`.
        server: String,
        /// What went wrong.
        failure: TlsFailure,
    },

    /// The ensemble refused our authentication (SASL: wrong user or password, or a mechanism it
    /// does not accept), when a session was being established.
    #[error("authentication refused by ZooKeeper at {connect_string:?}")]
    #[non_exhaustive]
    AuthFailed {
        /// The connect string that was tried.
        connect_string: String,
    },

    /// A ZooKeeper operation failed with a non-retryable error, or the error policy forbade a
    /// retry. The inner error tells which (`NoNode`, `NodeExists`, `NoAuth`, `BadVersion`, ...).
    #[error(transparent)]
    ZooKeeper(ZooKeeperError),

    /// A retryable error (connection loss, timeout, session moved or expired) kept happening
    /// until the retry policy gave up.
    /// `last` is the error's [`source()`](std::error::Error::source).
    #[error("gave up after {attempts} attempt(s) over {elapsed:?}")]
    #[non_exhaustive]
    RetriesExhausted {
        /// How many times the operation was tried.
        attempts: u32,
        /// Time from the first attempt until giving up.
        elapsed: Duration,
        /// The error of the last attempt.
        #[source]
        last: ZooKeeperError,
    },

    /// The framework was closed; no further operations are possible.
    #[error("the framework is closed")]
    Closed,

    /// A deadline passed: a wait with a timeout (`acquire_timeout`, `take_timeout`...), an
    /// operation under a [`with_deadline`](crate::with_deadline) scope, or one bounded by the
    /// framework's [`operation_timeout`](crate::FrameworkBuilder::operation_timeout). `step`
    /// says where the time ran out (connecting, awaiting a reply, the retry policy's pause,
    /// the recipe's own wait...).
    ///
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) {
    /// use std::time::Duration;
    /// use zk_recipes::{Error, InterProcessMutex, TimeoutStep};
    ///
    /// let lock = InterProcessMutex::new(&fw, "/locks/report").unwrap();
    /// match lock.acquire_timeout(Duration::from_secs(1)).await {
    ///     Ok(guard) => drop(guard),
    ///     Err(Error::Timeout { step: TimeoutStep::Waiting, .. }) => eprintln!("held by another"),
    ///     Err(e) if e.is_timeout() => eprintln!("the ensemble did not answer in time: {e}"),
    ///     Err(e) => eprintln!("{e}"),
    /// }
    /// # }
    /// ```
    #[error("timed out after {timeout:?} while {step}")]
    #[non_exhaustive]
    Timeout {
        /// The time the caller gave (the timeout, or the scope's or the framework's bound).
        timeout: Duration,
        /// Where the time ran out.
        step: TimeoutStep,
    },

    /// The session that a recipe's state depended on was lost (expired, or suspended longer
    /// than the session timeout), so that state can no longer be trusted.
    #[error("the ZooKeeper session was lost")]
    SessionLost,

    /// The connection was suspended and the error policy treats that as fatal for the recipe.
    #[error("the connection to ZooKeeper is suspended")]
    Suspended,

    /// A lock, lease or leadership that was held is no longer held: found when releasing,
    /// re-entering, or while waiting (our contender node vanished).
    #[error("lock lost: {path}: {reason}")]
    #[non_exhaustive]
    LockLost {
        /// The full path of the node that held (or was waiting).
        path: String,
        /// Why it can no longer be trusted.
        reason: crate::LossReason,
    },

    /// A guard, lease or recipe handle was released or closed already.
    #[error("already released")]
    AlreadyReleased,

    /// The handle never supports this call (for example re-entering a semaphore [`Lease`](crate::Lease),
    /// which is not re-entrant, or a safe take from a queue built without a lock path).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),

    /// The call does not fit the handle's current state: starting a recipe that was started
    /// already, waiting on one that was never started. A bug of the caller, not of the data.
    #[error("invalid state: {0}")]
    InvalidState(&'static str),

    /// The ensemble lacks what the call needs: an older ZooKeeper version, or a feature the
    /// server was configured without (see [`ServerFeature`] for what each needs).
    #[error("the server does not support {0}")]
    ServerUnsupported(ServerFeature),

    /// A node's data is not in the format the recipe expects.
    #[error("corrupt data at {path:?}: {reason}")]
    #[non_exhaustive]
    CorruptData {
        /// The node whose data could not be decoded.
        path: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A conditional write's reply was lost (connection loss, session expiry) and the node
    /// changed meanwhile in a way that does not tell whether our write was applied; or a
    /// write that is not idempotent (a create, a versioned `set_data`, a delete, a
    /// transaction) was sent and its deadline passed before the server answered. Read the
    /// node again and decide.
    #[error("the outcome of a write to {path:?} is unknown: its reply was lost and the node changed since")]
    #[non_exhaustive]
    OutcomeUnknown {
        /// The node that was written.
        path: String,
    },

    /// A node that a recipe keeps (a [`PersistentNode`](crate::PersistentNode), a group
    /// member) is there already as an ephemeral node of another live session: it is not taken
    /// over. The recipe goes on watching it and creates its own once it is gone.
    #[error("{path:?} is held by another session (0x{owner:x})")]
    #[non_exhaustive]
    NodeHeldByOther {
        /// The node's path.
        path: String,
        /// The session that owns it (its `ephemeralOwner`).
        owner: i64,
    },

    /// A semaphore permit id names no permit of that semaphore: it was released already, or
    /// reclaimed after it expired, or never taken
    /// ([`InterProcessSemaphoreV2::release_permit`](crate::InterProcessSemaphoreV2::release_permit)).
    #[error("no permit {permit_id:?} in the semaphore at {semaphore:?} (released, reclaimed after its expiry, or never taken)")]
    #[non_exhaustive]
    UnknownPermit {
        /// The semaphore's path.
        semaphore: String,
        /// The permit id as given.
        permit_id: String,
    },

    /// Data larger than where it goes accepts, refused before anything was sent (and never
    /// retried): a request over the framework's
    /// [`max_request_size`](crate::FrameworkBuilder::max_request_size) — what the servers accept,
    /// their `jute.maxbuffer`; a server closes the connection of a client that sends more — or
    /// a queue item over [`MAX_ITEM_BYTES`](crate::queue::MAX_ITEM_BYTES).
    #[error("{size} bytes for {path:?} are more than the {limit}-byte limit")]
    #[non_exhaustive]
    TooLarge {
        /// The node written (for a transaction, its first operation's; for a queue item, the
        /// queue).
        path: String,
        /// The size refused: the whole request as the server would read it, or the item's node data.
        size: usize,
        /// The limit it exceeds.
        limit: usize,
    },

    /// A queue has no such item: `element()` of an empty queue, `remove(id)` of an id that is
    /// not queued.
    #[error("no such item in the queue {path}")]
    #[non_exhaustive]
    NoSuchItem {
        /// The queue's path (and the id asked for).
        path: String,
    },

    /// An operation of a [`Transaction`](crate::Transaction) was refused (a failed check,
    /// `BadVersion`, `NodeExists`, `NoNode`...), so none of them was applied. What the server
    /// answered is the error's [`source()`](std::error::Error::source).
    #[error("transaction refused at operation {index} ({path:?})")]
    #[non_exhaustive]
    Transaction {
        /// The refused operation, counted from 0 in the order they were added.
        index: usize,
        /// Its path.
        path: String,
        /// What the server answered.
        source: ZooKeeperError,
    },

    /// An atomic update ([`DistributedAtomicLong`](crate::DistributedAtomicLong),
    /// [`DistributedAtomicValue`](crate::DistributedAtomicValue)...) gave up: every one of its
    /// versioned writes was refused because another writer changed the value first, until its
    /// tries ([`AtomicOptions`](crate::AtomicOptions)) ran out. The value was not changed by
    /// it; trying again later (or with more tries, or a promotion lock) may succeed.
    #[error("the atomic update of {path:?} gave up after {attempts} attempts refused by concurrent writers; it was not applied")]
    #[non_exhaustive]
    Contended {
        /// The value's path.
        path: String,
        /// The write attempts made (optimistic and promoted).
        attempts: u32,
    },
}

impl Error {
    /// Whether the same call may succeed when made again later, unchanged: the failure was a
    /// transient condition of the connection or the ensemble, not an answer about the data.
    ///
    /// True for [`RetriesExhausted`](Self::RetriesExhausted) (the framework's retry policy
    /// gave up on a retryable error), [`ConnectTimeout`](Self::ConnectTimeout),
    /// [`Timeout`](Self::Timeout) (a wait's deadline passed), [`Suspended`](Self::Suspended),
    /// [`Contended`](Self::Contended) (optimistic tries ran out: try again later),
    /// and [`ZooKeeper`](Self::ZooKeeper) with a retryable client error: `ConnectionLoss`,
    /// `Timeout`, `SessionMoved`, `SessionExpired` or a custom (connection) error.
    ///
    /// False for everything else, in particular: [`is_lost`](Self::is_lost) errors (what was
    /// held is gone: acquire again rather than repeat the call on the lost hold),
    /// [`OutcomeUnknown`](Self::OutcomeUnknown) (read the node first: repeating the write
    /// could apply it twice), [`Closed`](Self::Closed), refusals ([`Tls`](Self::Tls),
    /// [`AuthFailed`](Self::AuthFailed)), and the server's answers (`NoNode`, `BadVersion`...).
    #[doc(alias = "is_transient")]
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::RetriesExhausted { .. }
            | Error::ConnectTimeout { .. }
            | Error::Timeout { .. }
            | Error::Suspended
            | Error::Contended { .. } => true,
            Error::ZooKeeper(e) => e.is_retryable(),
            _ => false,
        }
    }

    /// Whether a deadline passed: [`Timeout`](Self::Timeout) ([`ErrorKind::Timeout`]: a
    /// wait with a timeout, such as `acquire_timeout`) or
    /// [`ConnectTimeout`](Self::ConnectTimeout) (no session within the connection timeout;
    /// its kind is [`ErrorKind::Connection`]).
    pub fn is_timeout(&self) -> bool {
        self.kind() == ErrorKind::Timeout || matches!(self, Error::ConnectTimeout { .. })
    }

    /// Whether something that was held can no longer be trusted ([`ErrorKind::Lost`]):
    /// [`LockLost`](Self::LockLost) (a lock, lease or leadership) or
    /// [`SessionLost`](Self::SessionLost). Stop the work the hold protected; taking it again
    /// is a new hold.
    pub fn is_lost(&self) -> bool {
        self.kind() == ErrorKind::Lost
    }

    /// Whether the connection to the ensemble failed ([`ErrorKind::Connection`]):
    /// [`Suspended`](Self::Suspended), and [`ZooKeeper`](Self::ZooKeeper) or
    /// [`RetriesExhausted`](Self::RetriesExhausted) whose (last) error is `ConnectionLoss`, a
    /// request `Timeout` or a custom (connection) error of the client, and
    /// [`ConnectTimeout`](Self::ConnectTimeout). Session expiry is not a connection error (see
    /// [`is_lost`](Self::is_lost) and [`is_retryable`](Self::is_retryable)).
    pub fn is_connection(&self) -> bool {
        self.kind() == ErrorKind::Connection
    }

    /// Whether the framework was closed ([`Closed`](Self::Closed)): nothing more will work
    /// through it.
    pub fn is_closed(&self) -> bool {
        self.kind() == ErrorKind::Closed
    }

    /// Whether something asked for does not exist ([`ErrorKind::NotFound`]): `NoNode`
    /// ([`ZooKeeper`](Self::ZooKeeper), or the refused operation of a
    /// [`Transaction`](Self::Transaction)), [`NoSuchItem`](Self::NoSuchItem),
    /// [`UnknownPermit`](Self::UnknownPermit).
    pub fn is_not_found(&self) -> bool {
        self.kind() == ErrorKind::NotFound
    }

    /// Whether a write conflicted with the state on the server ([`ErrorKind::Conflict`]):
    /// `NodeExists`, `BadVersion`, `NotEmpty` ([`ZooKeeper`](Self::ZooKeeper), or the refused
    /// operation of a [`Transaction`](Self::Transaction)), or
    /// [`NodeHeldByOther`](Self::NodeHeldByOther). Read again and decide.
    pub fn is_conflict(&self) -> bool {
        self.kind() == ErrorKind::Conflict
    }

    /// Whether the caller passed something invalid ([`ErrorKind::InvalidInput`]):
    /// [`InvalidPath`](Self::InvalidPath) or [`InvalidArgument`](Self::InvalidArgument).
    /// Repeating the call cannot help.
    pub fn is_invalid_input(&self) -> bool {
        self.kind() == ErrorKind::InvalidInput
    }

    /// Whether the call cannot work as made, whatever the data ([`ErrorKind::Unsupported`]):
    /// the server lacks a feature ([`ServerUnsupported`](Self::ServerUnsupported), or the
    /// server's own `Unimplemented` / `ReconfigDisabled` answer), or the handle never supports
    /// the call ([`Unsupported`](Self::Unsupported)). Repeating the call unchanged cannot help.
    /// A call that does not fit the handle's state now ([`InvalidState`](Self::InvalidState))
    /// is [`ErrorKind::InvalidState`], not this.
    pub fn is_unsupported(&self) -> bool {
        self.kind() == ErrorKind::Unsupported
    }

    /// Where a [`Timeout`](Self::Timeout) ran out of time (`None` for any other error).
    pub fn timeout_step(&self) -> Option<TimeoutStep> {
        match self {
            Error::Timeout { step, .. } => Some(*step),
            _ => None,
        }
    }

    /// A [`Timeout`](Self::Timeout) of `timeout` in `step`.
    pub(crate) fn timeout(timeout: Duration, step: TimeoutStep) -> Error {
        Error::Timeout { timeout, step }
    }

    /// An [`InvalidArgument`](Self::InvalidArgument) for the parameter `argument`.
    pub(crate) fn invalid(argument: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidArgument { argument, reason: reason.into() }
    }

    /// An [`InvalidArgument`](Self::InvalidArgument) error, for code of yours that this crate
    /// calls and that refuses its input (a [`QueueSerializer`](crate::queue::QueueSerializer)
    /// refusing an item, say). `argument` names what was refused.
    ///
    /// # Examples
    /// ```
    /// let e = zk_recipes::Error::invalid_argument("item", "empty");
    /// assert!(e.is_invalid_input());
    /// assert_eq!(e.to_string(), "invalid argument `item`: empty");
    /// ```
    pub fn invalid_argument(argument: &'static str, reason: impl Into<String>) -> Error {
        Error::invalid(argument, reason)
    }

    /// A [`CorruptData`](Self::CorruptData) error, for code of yours that this crate calls
    /// and that cannot decode a node's data (a
    /// [`QueueSerializer`](crate::queue::QueueSerializer)). `path` may be empty where the
    /// node is not known.
    ///
    /// # Examples
    /// ```
    /// use zk_recipes::{Error, ErrorKind};
    ///
    /// let e = Error::corrupt_data("/config/limits", "not UTF-8");
    /// assert_eq!(e.kind(), ErrorKind::CorruptData);
    /// ```
    pub fn corrupt_data(path: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::CorruptData { path: path.into(), reason: reason.into() }
    }
}

/// Shorthand for results of this crate.
///
/// # Examples
/// ```
/// fn lock_path(name: &str) -> zk_recipes::Result<String> {
///     zk_recipes::ops::validate_path(&format!("/locks/{name}"))?;
///     Ok(format!("/locks/{name}"))
/// }
/// assert!(lock_path("orders").is_ok());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests;
