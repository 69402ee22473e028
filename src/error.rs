//! The crate's one error type.

use std::time::Duration;

/// Every error this crate returns.
///
/// `Clone + PartialEq` so that tests and callers can `assert_eq!` on errors and share them
/// between tasks. Server-side failures keep the original [`zookeeper_client::Error`] in
/// [`Error::ZooKeeper`] so that callers can match on it (`NoNode`, `NoAuth`, `BadVersion`, ...).
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
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

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
    #[error("ZooKeeper error: {0}")]
    ZooKeeper(#[from] zookeeper_client::Error),

    /// A retryable error (connection loss, timeout, session moved or expired) kept happening
    /// until the retry policy gave up.
    #[error("gave up after {attempts} attempt(s) over {elapsed:?}; last error: {last}")]
    RetriesExhausted {
        /// How many times the operation was tried.
        attempts: u32,
        /// Time from the first attempt until giving up.
        elapsed: Duration,
        /// The error of the last attempt.
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

    /// The operation is not supported in the current state (for example upgrading a held read
    /// lock to a write lock, which would deadlock).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),

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
    /// [`MAX_ITEM_BYTES`](crate::MAX_ITEM_BYTES).
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
    /// `BadVersion`, `NodeExists`, `NoNode`...), so none of them was applied.
    #[error("transaction refused at operation {index} ({path:?}): {source}")]
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

/// Why a TLS handshake failed (see [`Error::Tls`]).
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
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether a wait ended because its deadline passed ([`Error::Timeout`]).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout(_))
    }
}
