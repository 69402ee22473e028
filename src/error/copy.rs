//! The crate's own copies of an error, for the few places that hand one failure to several
//! callers (a cached shutdown result, a refusal kept for every later call, the members of a
//! combined update). `Error` itself is not `Clone`, so that a variant may carry a source that
//! cannot be cloned later: such a variant would be shared through an `Arc` here.

use super::Error;

impl Error {
    /// Whether two errors report the same failure: the same kind and the same message (what
    /// the statuses that carry an error compare).
    pub(crate) fn same(&self, other: &Error) -> bool {
        self.kind() == other.kind() && self.to_string() == other.to_string()
    }

    /// An error equal to this one, for another caller.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::InvalidPath { path, reason } => Error::InvalidPath { path: path.clone(), reason },
            Error::InvalidArgument { argument, reason } => Error::InvalidArgument { argument, reason: reason.clone() },
            Error::ConnectTimeout { connect_string, timeout } => {
                Error::ConnectTimeout { connect_string: connect_string.clone(), timeout: *timeout }
            }
            Error::Tls { server, failure } => Error::Tls { server: server.clone(), failure: failure.clone() },
            Error::AuthFailed { connect_string } => Error::AuthFailed { connect_string: connect_string.clone() },
            Error::ZooKeeper(e) => Error::ZooKeeper(e.clone()),
            Error::RetriesExhausted { attempts, elapsed, last } => {
                Error::RetriesExhausted { attempts: *attempts, elapsed: *elapsed, last: last.clone() }
            }
            Error::Closed => Error::Closed,
            Error::Timeout { timeout, step } => Error::Timeout { timeout: *timeout, step: *step },
            Error::SessionLost => Error::SessionLost,
            Error::Suspended => Error::Suspended,
            Error::LockLost { path, reason } => Error::LockLost { path: path.clone(), reason: *reason },
            Error::AlreadyReleased => Error::AlreadyReleased,
            Error::Unsupported(what) => Error::Unsupported(what),
            Error::InvalidState(what) => Error::InvalidState(what),
            Error::ServerUnsupported(feature) => Error::ServerUnsupported(*feature),
            Error::CorruptData { path, reason } => Error::CorruptData { path: path.clone(), reason: reason.clone() },
            Error::OutcomeUnknown { path } => Error::OutcomeUnknown { path: path.clone() },
            Error::NodeHeldByOther { path, owner } => Error::NodeHeldByOther { path: path.clone(), owner: *owner },
            Error::UnknownPermit { semaphore, permit_id } => {
                Error::UnknownPermit { semaphore: semaphore.clone(), permit_id: permit_id.clone() }
            }
            Error::TooLarge { path, size, limit } => Error::TooLarge { path: path.clone(), size: *size, limit: *limit },
            Error::NoSuchItem { path } => Error::NoSuchItem { path: path.clone() },
            Error::Transaction { index, path, source } => {
                Error::Transaction { index: *index, path: path.clone(), source: source.clone() }
            }
            Error::Contended { path, attempts } => Error::Contended { path: path.clone(), attempts: *attempts },
        }
    }
}
