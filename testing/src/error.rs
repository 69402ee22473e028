//! The testing kit's error type: its own failures (installations, processes, containers, the
//! Curator peer), and the library's errors through [`Error::Recipes`].

use std::io;
use std::time::Duration;

/// Every error the testing kit returns.
///
/// Not `Clone` or `PartialEq`, as [`zk_recipes::Error`] is not: match it, or compare
/// [`zk_recipes::Error::kind`]s. The library's errors arrive whole in [`Error::Recipes`] (`?`
/// converts them).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A framework or recipe call of the kit failed (connecting, expiring a session, ...).
    #[error(transparent)]
    Recipes(#[from] zk_recipes::Error),

    /// An argument is out of its allowed range (no such server, a bad variable, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The operation is not possible with this backend or build (a partition of a local
    /// server, the Docker backend without the `docker` feature, ...).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),

    /// A wait of the kit ended because its deadline passed.
    #[error("timed out after {0:?}")]
    Timeout(Duration),

    /// The framework the kit was given is closed.
    #[error("the framework is closed")]
    Closed,

    /// No ZooKeeper installation was found.
    #[error("no ZooKeeper installation found ({searched}); install one with: {install_hint}")]
    ZooKeeperNotInstalled {
        /// Where the kit looked.
        searched: String,
        /// The command that installs one.
        install_hint: &'static str,
    },

    /// The Curator peer needs Java and Debian's Curator jars, and some are missing.
    #[error("Curator peer unavailable ({searched}); install with: {install_hint}")]
    CuratorNotInstalled {
        /// What was looked for, and where.
        searched: String,
        /// The command that installs what is missing.
        install_hint: &'static str,
    },

    /// The Curator peer (a Java process) failed: it answered a command with an exception
    /// (`"<command>: <ExceptionClass>: <message>"`), could not be compiled, or died.
    #[error("Curator peer: {0}")]
    Peer(String),

    /// A local process, socket or file operation failed; `kind` is the operating system's
    /// answer, `message` says what the kit was doing.
    #[error("I/O error ({kind}): {message}")]
    Io {
        /// What failed, with the system's message.
        message: String,
        /// The kind of the underlying [`io::Error`].
        kind: io::ErrorKind,
    },

    /// The Docker daemon refused or failed a request of the Docker backend, or cannot be
    /// reached (`"<what the kit did>: <the daemon's answer>"`).
    #[error("Docker: {0}")]
    Docker(String),

    /// A server process (ZooKeeper, or a [`TestingPostgres`](crate::TestingPostgres)) did not
    /// come up, or exited while it was expected to serve.
    /// `log_tail` holds the last lines the server wrote, which usually say why (a port already in
    /// use, a corrupt data directory, a Java version mismatch, ...).
    #[error("test server failed: {reason}; last log lines:\n{log_tail}")]
    TestServerFailed {
        /// What went wrong, as seen from the kit (exited with a status, not serving in time).
        reason: String,
        /// The end of the server's log file.
        log_tail: String,
    },
}

impl Error {
    /// An [`Error::Io`] of kind [`io::ErrorKind::Other`] for a failure that has no system error.
    pub fn io(message: impl Into<String>) -> Self {
        Error::Io { message: message.into(), kind: io::ErrorKind::Other }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io { message: e.to_string(), kind: e.kind() }
    }
}

/// A ZooKeeper client's error (a test's own `zookeeper_client::Client`), as the library's
/// [`zk_recipes::Error::ZooKeeper`].
impl From<zookeeper_client::Error> for Error {
    fn from(e: zookeeper_client::Error) -> Self {
        Error::Recipes(e.into())
    }
}

/// Shorthand for results of the testing kit.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_keep_their_kind() {
        let e: Error = io::Error::new(io::ErrorKind::AddrInUse, "port taken").into();
        assert!(
            matches!(&e, Error::Io { message, kind: io::ErrorKind::AddrInUse } if message == "port taken"),
            "{e:?}"
        );
        assert_eq!(Error::io("gone").to_string(), "I/O error (other error): gone");
        let lib: Error = zk_recipes::Error::Closed.into();
        assert!(matches!(lib, Error::Recipes(zk_recipes::Error::Closed)), "{lib:?}");
        let client: Error = zookeeper_client::Error::NoNode.into();
        assert!(
            matches!(client, Error::Recipes(zk_recipes::Error::ZooKeeper(zk_recipes::ZooKeeperError::NoNode))),
            "{client:?}"
        );
    }
}
