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

    /// The testing kit could not find a ZooKeeper installation.
    #[error("no ZooKeeper installation found ({searched}); install one with: {install_hint}")]
    ZooKeeperNotInstalled {
        /// Where the kit looked.
        searched: String,
        /// The command that installs one.
        install_hint: &'static str,
    },

    /// The testing kit's Curator peer needs Java and Debian's Curator jars, and some are missing.
    #[error("Curator peer unavailable ({searched}); install with: {install_hint}")]
    CuratorNotInstalled {
        /// What was looked for, and where.
        searched: String,
        /// The command that installs what is missing.
        install_hint: &'static str,
    },

    /// The testing kit's Curator peer (a Java process) failed: it answered a command with an
    /// exception (`"<command>: <ExceptionClass>: <message>"`), could not be compiled, or died.
    #[error("Curator peer: {0}")]
    Peer(String),

    /// A local process or file operation of the testing kit or CLI failed.
    #[error("I/O error: {0}")]
    Io(String),

    /// The Docker daemon refused or failed a request of the testing kit's Docker backend, or
    /// cannot be reached (`"<what the kit did>: <the daemon's answer>"`).
    #[error("Docker: {0}")]
    Docker(String),

    /// A ZooKeeper server process of the testing kit did not come up, or exited while it was
    /// expected to serve. `log_tail` holds the last lines the JVM wrote, which usually say why
    /// (a port already in use, a corrupt data directory, a Java version mismatch, ...).
    #[error("test ZooKeeper server failed: {reason}; last log lines:\n{log_tail}")]
    TestServerFailed {
        /// What went wrong, as seen from the kit (exited with a status, not serving in time).
        reason: String,
        /// The end of the server's log file.
        log_tail: String,
    },
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
