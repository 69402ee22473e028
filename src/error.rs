//! The crate's one error type.

use std::time::Duration;

/// Every error this crate returns.
///
/// `Clone + PartialEq` so that tests and callers can `assert_eq!` on errors and share them
/// between tasks. Server-side failures keep the original [`zookeeper_client::Error`] in
/// [`Error::ZooKeeper`] so that callers can match on it (`NoNode`, `NoAuth`, `BadVersion`, ...).
///
/// # Acting on an error
/// The `is_*` methods classify an error for a retry loop or an HTTP handler without matching
/// every variant (and keep working as variants are added):
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
/// | [`is_unsupported`](Self::is_unsupported) | [`ServerUnsupported`](Self::ServerUnsupported), [`Unsupported`](Self::Unsupported), [`InvalidState`](Self::InvalidState) | 501 / 409, do not repeat |
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
/// ```
/// use std::error::Error as _;
/// use std::time::Duration;
/// let e = zk_recipes::Error::RetriesExhausted {
///     attempts: 4,
///     elapsed: Duration::from_secs(3),
///     last: zk_recipes::zk::Error::ConnectionLoss,
/// };
/// assert!(e.is_retryable() && e.is_connection());
/// assert!(!e.to_string().contains(&e.source().unwrap().to_string()));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A path given to the API is not a valid absolute ZooKeeper path.
    #[error("invalid path {path:?}: {reason}")]
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
    ///     Error::InvalidArgument { argument, reason } => eprintln!("bad {argument}: {reason}"),
    ///     _ => {}
    /// }
    /// # }
    /// ```
    #[error("invalid argument `{argument}`: {reason}")]
    InvalidArgument {
        /// The parameter or setting refused, e.g. `"max_leases"`, `"ttl"`, `"connect_string"`.
        argument: &'static str,
        /// Why it was refused.
        reason: String,
    },

    /// No session could be established within the connection timeout.
    #[error("could not connect to ZooKeeper at {connect_string:?} within {timeout:?}")]
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
    Tls {
        /// The server, `host:port`.
        server: String,
        /// What went wrong.
        failure: TlsFailure,
    },

    /// The ensemble refused our authentication (SASL: wrong user or password, or a mechanism it
    /// does not accept), when a session was being established.
    #[error("authentication refused by ZooKeeper at {connect_string:?}")]
    AuthFailed {
        /// The connect string that was tried.
        connect_string: String,
    },

    /// A ZooKeeper operation failed with a non-retryable error, or the error policy forbade a
    /// retry. The inner error tells which (`NoNode`, `NodeExists`, `NoAuth`, `BadVersion`, ...).
    #[error(transparent)]
    ZooKeeper(#[from] zookeeper_client::Error),

    /// A retryable error (connection loss, timeout, session moved or expired) kept happening
    /// until the retry policy gave up.
    /// `last` is the error's [`source()`](std::error::Error::source).
    #[error("gave up after {attempts} attempt(s) over {elapsed:?}")]
    RetriesExhausted {
        /// How many times the operation was tried.
        attempts: u32,
        /// Time from the first attempt until giving up.
        elapsed: Duration,
        /// The error of the last attempt.
        #[source]
        last: zookeeper_client::Error,
    },

    /// The framework was closed; no further operations are possible.
    #[error("the framework is closed")]
    Closed,

    /// A wait ended because its deadline passed.
    #[error("timed out after {0:?}")]
    Timeout(Duration),

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
    CorruptData {
        /// The node whose data could not be decoded.
        path: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A conditional write's reply was lost (connection loss, session expiry) and the node
    /// changed meanwhile in a way that does not tell whether our write was applied. Read the
    /// node again and decide.
    #[error("the outcome of a write to {path:?} is unknown: its reply was lost and the node changed since")]
    OutcomeUnknown {
        /// The node that was written.
        path: String,
    },

    /// A node that a recipe keeps (a [`PersistentNode`](crate::PersistentNode), a group
    /// member) is there already as an ephemeral node of another live session: it is not taken
    /// over. The recipe goes on watching it and creates its own once it is gone.
    #[error("{path:?} is held by another session (0x{owner:x})")]
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
    UnknownPermit {
        /// The semaphore's path.
        semaphore: String,
        /// The permit id as given.
        permit_id: String,
    },

    /// A queue item (or the node holding it) is larger than a queue accepts: ZooKeeper
    /// refuses requests over its `jute.maxbuffer` (1 MiB by default), so queues stop at
    /// [`MAX_ITEM_BYTES`](crate::queue::MAX_ITEM_BYTES).
    #[error("queue item of {size} bytes is larger than the {limit}-byte limit")]
    ItemTooLarge {
        /// The size of the node's data that was refused.
        size: usize,
        /// The limit.
        limit: usize,
    },

    /// A queue has no such item: `element()` of an empty queue, `remove(id)` of an id that is
    /// not queued.
    #[error("no such item in the queue {path}")]
    NoSuchItem {
        /// The queue's path (and the id asked for).
        path: String,
    },

    /// An operation of a [`Transaction`](crate::Transaction) was refused (a failed check,
    /// `BadVersion`, `NodeExists`, `NoNode`...), so none of them was applied. What the server
    /// answered is the error's [`source()`](std::error::Error::source).
    #[error("transaction refused at operation {index} ({path:?})")]
    Transaction {
        /// The refused operation, counted from 0 in the order they were added.
        index: usize,
        /// Its path.
        path: String,
        /// What the server answered.
        source: zookeeper_client::Error,
    },

    /// An atomic update ([`DistributedAtomicLong`](crate::DistributedAtomicLong),
    /// [`DistributedAtomicValue`](crate::DistributedAtomicValue)...) gave up: every one of its
    /// versioned writes was refused because another writer changed the value first, until its
    /// tries ([`AtomicOptions`](crate::AtomicOptions)) ran out. The value was not changed by
    /// it; trying again later (or with more tries, or a promotion lock) may succeed.
    #[error("the atomic update of {path:?} gave up after {attempts} attempts refused by concurrent writers; it was not applied")]
    Contended {
        /// The value's path.
        path: String,
        /// The write attempts made (optimistic and promoted).
        attempts: u32,
    },
}

/// Whether a `zookeeper_client` error is a failure of the connection (not an answer of the
/// server): connection loss, a request timeout, and the client's custom errors, which it raises
/// only from its connection handling (a read timeout, a socket error).
fn zk_connection(e: &zookeeper_client::Error) -> bool {
    use zookeeper_client::Error as Zk;
    matches!(e, Zk::ConnectionLoss | Zk::Timeout | Zk::Custom(_))
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
            | Error::Timeout(_)
            | Error::Suspended
            | Error::Contended { .. } => true,
            Error::ZooKeeper(e) => crate::framework::is_retryable(e),
            _ => false,
        }
    }

    /// Whether a deadline passed: [`Timeout`](Self::Timeout) (a wait with a timeout, such as
    /// `acquire_timeout`) or [`ConnectTimeout`](Self::ConnectTimeout) (no session within the
    /// connection timeout).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout(_) | Error::ConnectTimeout { .. })
    }

    /// Whether something that was held can no longer be trusted: [`LockLost`](Self::LockLost)
    /// (a lock, lease or leadership) or [`SessionLost`](Self::SessionLost). Stop the work the
    /// hold protected; taking it again is a new hold.
    pub fn is_lost(&self) -> bool {
        matches!(self, Error::LockLost { .. } | Error::SessionLost)
    }

    /// Whether the connection to the ensemble failed: [`Suspended`](Self::Suspended),
    /// [`ConnectTimeout`](Self::ConnectTimeout), and [`ZooKeeper`](Self::ZooKeeper) or
    /// [`RetriesExhausted`](Self::RetriesExhausted) whose (last) error is `ConnectionLoss`, a
    /// request `Timeout` or a custom (connection) error of the client. Session expiry is not a
    /// connection error (see [`is_lost`](Self::is_lost) and [`is_retryable`](Self::is_retryable)).
    pub fn is_connection(&self) -> bool {
        match self {
            Error::Suspended | Error::ConnectTimeout { .. } => true,
            Error::ZooKeeper(e) | Error::RetriesExhausted { last: e, .. } => zk_connection(e),
            _ => false,
        }
    }

    /// Whether the framework was closed ([`Closed`](Self::Closed)): nothing more will work
    /// through it.
    pub fn is_closed(&self) -> bool {
        matches!(self, Error::Closed)
    }

    /// Whether something asked for does not exist: `NoNode` ([`ZooKeeper`](Self::ZooKeeper),
    /// or the refused operation of a [`Transaction`](Self::Transaction)),
    /// [`NoSuchItem`](Self::NoSuchItem), [`UnknownPermit`](Self::UnknownPermit).
    pub fn is_not_found(&self) -> bool {
        use zookeeper_client::Error as Zk;
        matches!(
            self,
            Error::ZooKeeper(Zk::NoNode)
                | Error::Transaction { source: Zk::NoNode, .. }
                | Error::NoSuchItem { .. }
                | Error::UnknownPermit { .. }
        )
    }

    /// Whether a write conflicted with the state on the server: `NodeExists`, `BadVersion`,
    /// `NotEmpty` ([`ZooKeeper`](Self::ZooKeeper), or the refused operation of a
    /// [`Transaction`](Self::Transaction)), or [`NodeHeldByOther`](Self::NodeHeldByOther).
    /// Read again and decide.
    pub fn is_conflict(&self) -> bool {
        use zookeeper_client::Error as Zk;
        match self {
            Error::ZooKeeper(e) | Error::Transaction { source: e, .. } => {
                matches!(e, Zk::NodeExists | Zk::BadVersion | Zk::NotEmpty)
            }
            Error::NodeHeldByOther { .. } => true,
            _ => false,
        }
    }

    /// Whether the caller passed something invalid: [`InvalidPath`](Self::InvalidPath) or
    /// [`InvalidArgument`](Self::InvalidArgument). Repeating the call cannot help.
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, Error::InvalidPath { .. } | Error::InvalidArgument { .. })
    }

    /// Whether the call cannot work as made, whatever the data: the server lacks a feature
    /// ([`ServerUnsupported`](Self::ServerUnsupported)), the handle never supports the call
    /// ([`Unsupported`](Self::Unsupported)), or the handle's state does not allow it
    /// ([`InvalidState`](Self::InvalidState)). Repeating the call unchanged cannot help.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Error::ServerUnsupported(_) | Error::Unsupported(_) | Error::InvalidState(_))
    }

    /// An [`InvalidArgument`](Self::InvalidArgument) for the parameter `argument`.
    pub(crate) fn invalid(argument: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidArgument { argument, reason: reason.into() }
    }
}

/// A feature of ZooKeeper that a call needs and the server lacks (see
/// [`Error::ServerUnsupported`]). Its `Display` says what the server needs for it.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::{Error, ServerFeature};
/// use zk_recipes::zk::CreateMode;
///
/// match fw.create_with_ttl("/tmp/marker", b"", CreateMode::Persistent, Duration::from_secs(60)).await {
///     Err(Error::ServerUnsupported(ServerFeature::TtlNodes)) => eprintln!("enable TTL nodes on the server"),
///     other => { other?; }
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum ServerFeature {
    /// TTL nodes (`CreateMode::PersistentWithTtl`...): the server must run with
    /// `zookeeper.extendedTypesEnabled=true` (ZooKeeper 3.5.3 or later).
    #[error("TTL nodes (the server needs zookeeper.extendedTypesEnabled=true)")]
    TtlNodes,
    /// `multiRead`: ZooKeeper 3.6 or later.
    #[error("multiRead (ZooKeeper 3.6 or later)")]
    MultiRead,
    /// `getEphemerals`: ZooKeeper 3.6 or later.
    #[error("getEphemerals (ZooKeeper 3.6 or later)")]
    GetEphemerals,
    /// `getAllChildrenNumber`: ZooKeeper 3.6 or later.
    #[error("getAllChildrenNumber (ZooKeeper 3.6 or later)")]
    GetAllChildrenNumber,
    /// `whoAmI`: ZooKeeper 3.7 or later.
    #[error("whoAmI (ZooKeeper 3.7 or later)")]
    WhoAmI,
}

/// Why a TLS handshake failed (see [`Error::Tls`]).
///
/// # Examples
/// ```no_run
/// # async fn demo(builder: zk_recipes::FrameworkBuilder) {
/// use zk_recipes::{Error, TlsFailure};
///
/// match builder.connect().await {
///     Ok(_fw) => {}
///     Err(Error::Tls { server, failure: TlsFailure::UnknownCa }) => {
///         eprintln!("{server}: its certificate is not signed by our CA (wrong --tls-ca?)")
///     }
///     Err(Error::Tls { server, failure }) => eprintln!("{server}: {failure}"),
///     Err(e) => eprintln!("{e}"),
/// }
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsFailure {
    /// The server's certificate is not signed by a certificate authority we trust.
    #[error("unknown certificate authority")]
    UnknownCa,
    /// The server's certificate has expired (or is not valid yet).
    #[error("the server certificate has expired or is not yet valid")]
    CertificateExpired,
    /// The server's certificate does not name the host we connected to.
    #[error("the server certificate does not match the host name")]
    HostnameMismatch,
    /// The server's certificate is unusable for another reason.
    #[error("bad server certificate: {0}")]
    BadCertificate(String),
    /// The server requires a client certificate and we presented none.
    #[error("the server requires a client certificate")]
    ClientCertificateRequired,
    /// The server refused our client certificate (the TLS alert it sent).
    #[error("the server refused the client certificate ({0})")]
    ClientCertificateRejected(String),
    /// The port does not speak TLS: a plaintext ZooKeeper port reached with TLS.
    #[error("the server does not speak TLS on this port (a plaintext port?)")]
    NotTls,
    /// The port speaks TLS but the connection was plaintext.
    #[error("the server expects TLS on this port, the connection was plaintext")]
    PlaintextToTlsPort,
    /// Anything else the handshake reported.
    #[error("{0}")]
    Other(String),
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
mod tests {
    use std::collections::HashSet;
    use std::time::Duration;

    use zookeeper_client::Error as Zk;

    use super::*;

    fn retries(last: Zk) -> Error {
        Error::RetriesExhausted { attempts: 3, elapsed: Duration::from_secs(1), last }
    }

    fn lock_lost() -> Error {
        Error::LockLost { path: "/l/x".into(), reason: crate::LossReason::NodeDeleted }
    }

    fn connect_timeout() -> Error {
        Error::ConnectTimeout { connect_string: "h:1".into(), timeout: Duration::from_secs(1) }
    }

    /// Every message of `e`'s chain (itself, then each `source()`), in order.
    fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
        std::iter::successors(Some(e), |e| e.source()).map(|e| e.to_string()).collect()
    }

    /// Errors of every variant that wraps or describes another error.
    fn samples() -> Vec<Error> {
        vec![
            Error::ZooKeeper(Zk::NoNode),
            Error::ZooKeeper(Zk::UnexpectedError("odd reply".into())),
            retries(Zk::ConnectionLoss),
            retries(Zk::UnexpectedError("odd reply".into())),
            Error::Transaction { index: 2, path: "/a".into(), source: Zk::BadVersion },
            Error::Tls { server: "h:1".into(), failure: TlsFailure::UnknownCa },
            Error::Tls { server: "h:1".into(), failure: TlsFailure::Other("handshake eof".into()) },
            lock_lost(),
            Error::invalid("max_leases", "must be at least 1"),
            Error::Unsupported("upgrade"),
            Error::InvalidState("already started"),
            Error::ServerUnsupported(ServerFeature::TtlNodes),
            connect_timeout(),
        ]
    }

    #[test]
    fn each_message_of_a_chain_is_printed_once() {
        for e in samples() {
            let messages = chain(&e);
            for (i, m) in messages.iter().enumerate() {
                for later in &messages[i + 1..] {
                    assert!(!m.contains(later.as_str()), "{e:?}: {m:?} repeats its source {later:?}");
                }
            }
            assert_eq!(messages.iter().collect::<HashSet<_>>().len(), messages.len(), "{messages:?}");
        }
    }

    #[test]
    fn wrapped_client_errors_are_sources() {
        use std::error::Error as _;
        assert_eq!(retries(Zk::ConnectionLoss).source().map(|s| s.to_string()), Some(Zk::ConnectionLoss.to_string()));
        let refused = Error::Transaction { index: 0, path: "/a".into(), source: Zk::NodeExists };
        assert_eq!(refused.source().map(|s| s.to_string()), Some(Zk::NodeExists.to_string()));
        // the server's error itself: shown as the server's error, once
        let e = Error::ZooKeeper(Zk::NoNode);
        assert_eq!(e.to_string(), Zk::NoNode.to_string());
        assert_eq!(chain(&e).len(), 1);
    }

    #[test]
    fn retryable() {
        for e in [
            retries(Zk::SessionExpired),
            connect_timeout(),
            Error::Timeout(Duration::from_secs(1)),
            Error::Suspended,
            Error::Contended { path: "/c".into(), attempts: 3 },
            Error::ZooKeeper(Zk::ConnectionLoss),
            Error::ZooKeeper(Zk::Timeout),
            Error::ZooKeeper(Zk::SessionMoved),
            Error::ZooKeeper(Zk::SessionExpired),
        ] {
            assert!(e.is_retryable(), "{e:?}");
        }
        for e in [
            Error::ZooKeeper(Zk::NoNode),
            Error::ZooKeeper(Zk::NoAuth),
            Error::ZooKeeper(Zk::BadVersion),
            Error::Closed,
            Error::SessionLost,
            lock_lost(),
            Error::OutcomeUnknown { path: "/a".into() },
            Error::AuthFailed { connect_string: "h:1".into() },
            Error::invalid("x", "y"),
            Error::ServerUnsupported(ServerFeature::MultiRead),
            Error::InvalidState("not started"),
            Error::Transaction { index: 0, path: "/a".into(), source: Zk::ConnectionLoss },
        ] {
            assert!(!e.is_retryable(), "{e:?}");
        }
    }

    #[test]
    fn timeout() {
        assert!(Error::Timeout(Duration::from_secs(1)).is_timeout());
        assert!(connect_timeout().is_timeout());
        assert!(!Error::ZooKeeper(Zk::ConnectionLoss).is_timeout());
        assert!(!retries(Zk::Timeout).is_timeout());
        assert!(!Error::Closed.is_timeout());
    }

    #[test]
    fn lost() {
        assert!(lock_lost().is_lost());
        assert!(Error::SessionLost.is_lost());
        assert!(!Error::Suspended.is_lost());
        assert!(!Error::ZooKeeper(Zk::SessionExpired).is_lost());
        assert!(!Error::AlreadyReleased.is_lost());
    }

    #[test]
    fn connection() {
        for e in [
            Error::Suspended,
            connect_timeout(),
            Error::ZooKeeper(Zk::ConnectionLoss),
            retries(Zk::ConnectionLoss),
            retries(Zk::Timeout),
        ] {
            assert!(e.is_connection(), "{e:?}");
        }
        for e in [
            retries(Zk::SessionExpired),
            Error::ZooKeeper(Zk::SessionExpired),
            Error::ZooKeeper(Zk::NoNode),
            Error::SessionLost,
            Error::Timeout(Duration::from_secs(1)),
            Error::Closed,
        ] {
            assert!(!e.is_connection(), "{e:?}");
        }
    }

    #[test]
    fn closed() {
        assert!(Error::Closed.is_closed());
        assert!(!Error::AlreadyReleased.is_closed());
        assert!(!Error::ZooKeeper(Zk::ClientClosed).is_closed());
    }

    #[test]
    fn not_found_and_conflict() {
        let txn = |source| Error::Transaction { index: 1, path: "/a".into(), source };
        for e in [
            Error::ZooKeeper(Zk::NoNode),
            txn(Zk::NoNode),
            Error::NoSuchItem { path: "/q".into() },
            Error::UnknownPermit { semaphore: "/s".into(), permit_id: "p".into() },
        ] {
            assert!(e.is_not_found() && !e.is_conflict(), "{e:?}");
        }
        for e in [
            Error::ZooKeeper(Zk::NodeExists),
            Error::ZooKeeper(Zk::BadVersion),
            Error::ZooKeeper(Zk::NotEmpty),
            txn(Zk::BadVersion),
            txn(Zk::NodeExists),
            Error::NodeHeldByOther { path: "/m".into(), owner: 7 },
        ] {
            assert!(e.is_conflict() && !e.is_not_found(), "{e:?}");
        }
        for e in [Error::ZooKeeper(Zk::NoAuth), Error::Closed, Error::OutcomeUnknown { path: "/a".into() }] {
            assert!(!e.is_conflict() && !e.is_not_found(), "{e:?}");
        }
    }

    #[test]
    fn invalid_input() {
        let e = Error::invalid("max_leases", "must be at least 1");
        assert!(e.is_invalid_input() && !e.is_unsupported());
        assert!(matches!(e, Error::InvalidArgument { argument: "max_leases", .. }));
        assert_eq!(e.to_string(), "invalid argument `max_leases`: must be at least 1");
        assert!(Error::InvalidPath { path: "a".into(), reason: "relative" }.is_invalid_input());
        assert!(!Error::Unsupported("x").is_invalid_input());
        assert!(!Error::ZooKeeper(Zk::BadArguments(&"bad")).is_invalid_input());
    }

    #[test]
    fn invalid_arguments_name_the_parameter() {
        let builder = || crate::Framework::builder().connect_string("127.0.0.1:1");
        let argument = |b: crate::FrameworkBuilder| match b.validate() {
            Err(Error::InvalidArgument { argument, reason }) => {
                assert!(!reason.is_empty());
                argument
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("accepted"),
        };
        assert_eq!(argument(crate::Framework::builder().connect_string(" ")), "connect_string");
        assert_eq!(argument(builder().session_timeout(Duration::ZERO)), "session_timeout");
        assert_eq!(argument(builder().connection_timeout(Duration::ZERO)), "connection_timeout");
        assert_eq!(argument(builder().default_acl(Vec::new())), "default_acl");
        assert!(builder().validate().is_ok());
    }

    #[test]
    fn unsupported() {
        for e in [
            Error::ServerUnsupported(ServerFeature::WhoAmI),
            Error::Unsupported("re-entering a lease"),
            Error::InvalidState("already started"),
        ] {
            assert!(e.is_unsupported() && !e.is_invalid_input() && !e.is_retryable(), "{e:?}");
        }
        assert!(!Error::invalid("ttl", "zero").is_unsupported());
        assert!(!Error::ZooKeeper(Zk::Unimplemented).is_unsupported());
        let ttl = Error::ServerUnsupported(ServerFeature::TtlNodes).to_string();
        assert!(ttl.contains("extendedTypesEnabled=true"), "{ttl}");
        assert!(Error::ServerUnsupported(ServerFeature::WhoAmI).to_string().contains("3.7"));
    }
}
