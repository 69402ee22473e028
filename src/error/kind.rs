//! [`ErrorKind`]: the one category of each error, for code that must keep compiling as
//! variants are added.

use super::ZooKeeperError as Zk;

use super::Error;

/// What kind of failure an [`Error`] is ([`Error::kind`]): one per error, so that a `match`
/// on it covers every variant of `Error`, today's and later ones (`_` takes the kinds a later
/// release adds).
///
/// The kinds follow the `is_*` methods of [`Error`]: `e.is_not_found()` is
/// `e.kind() == ErrorKind::NotFound`, and so on (but [`Error::is_timeout`], which is also
/// true for a [`ConnectTimeout`](Error::ConnectTimeout), a connection failure). Whether to try again is not a kind but
/// [`Error::is_retryable`], which spans several ([`Timeout`](Self::Timeout),
/// [`Connection`](Self::Connection), [`Session`](Self::Session),
/// [`Contended`](Self::Contended)).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) {
/// use zk_recipes::ErrorKind;
///
/// let status = match fw.delete("/jobs/42").await {
///     Ok(()) => 204,
///     Err(e) => match e.kind() {
///         ErrorKind::NotFound => 404,
///         ErrorKind::Conflict => 409,
///         ErrorKind::InvalidInput => 400,
///         ErrorKind::Timeout => 504,
///         ErrorKind::Connection | ErrorKind::Session => 503,
///         _ => 500,
///     },
/// };
/// # let _ = status;
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The caller passed something invalid: [`Error::InvalidPath`], [`Error::InvalidArgument`].
    InvalidInput,
    /// A deadline passed: [`Error::Timeout`].
    Timeout,
    /// The connection failed: [`Error::Suspended`], [`Error::ConnectTimeout`] (no session
    /// within the connection timeout: the ensemble is unreachable), connection loss, a
    /// request timeout or a
    /// socket error of the client ([`Error::ZooKeeper`], or the last attempt of
    /// [`Error::RetriesExhausted`]).
    Connection,
    /// The session of a plain operation expired or moved (`SessionExpired`, `SessionMoved`):
    /// the framework builds a new one; the call may be made again.
    Session,
    /// A TLS handshake failed ([`Error::Tls`]): a configuration to fix, not a transient fault.
    Tls,
    /// Authentication or authorisation was refused: [`Error::AuthFailed`], the server's
    /// `NoAuth` or `AuthFailed`.
    Auth,
    /// What was held can no longer be trusted: [`Error::LockLost`], [`Error::SessionLost`].
    Lost,
    /// The framework was closed: [`Error::Closed`].
    Closed,
    /// What was asked for does not exist: `NoNode`, [`Error::NoSuchItem`],
    /// [`Error::UnknownPermit`].
    NotFound,
    /// A write conflicted with the state on the server: `NodeExists`, `BadVersion`,
    /// `NotEmpty`, [`Error::NodeHeldByOther`].
    Conflict,
    /// The call cannot work as made: [`Error::ServerUnsupported`], [`Error::Unsupported`],
    /// the server's `Unimplemented` or `ReconfigDisabled`.
    Unsupported,
    /// The call does not fit the handle's state now: [`Error::InvalidState`],
    /// [`Error::AlreadyReleased`].
    InvalidState,
    /// A node's data is not in the format the recipe expects: [`Error::CorruptData`].
    CorruptData,
    /// Whether a write was applied is not known: [`Error::OutcomeUnknown`].
    OutcomeUnknown,
    /// An optimistic update gave up to concurrent writers: [`Error::Contended`].
    Contended,
    /// Data is larger than where it goes accepts: [`Error::TooLarge`] (a request over the
    /// framework's limit, a queue item over a queue's).
    TooLarge,
    /// Any other answer of the server or the client (a quota, a marshalling error, an
    /// unexpected reply...).
    Other,
}

/// The kind of ZooKeeper's answer or the connection's failure.
fn of_zookeeper(e: &Zk) -> ErrorKind {
    match e {
        Zk::ConnectionLoss | Zk::Timeout | Zk::NoHosts | Zk::Io(_) => ErrorKind::Connection,
        Zk::SessionExpired | Zk::SessionMoved => ErrorKind::Session,
        Zk::NoNode => ErrorKind::NotFound,
        Zk::NodeExists | Zk::BadVersion | Zk::NotEmpty => ErrorKind::Conflict,
        Zk::NoAuth | Zk::AuthFailed => ErrorKind::Auth,
        Zk::Unimplemented | Zk::ReconfigDisabled => ErrorKind::Unsupported,
        _ => ErrorKind::Other,
    }
}

impl Error {
    /// The kind of this error: one per error, stable as variants are added (see
    /// [`ErrorKind`]).
    ///
    /// # Examples
    /// ```
    /// use zk_recipes::{Error, ErrorKind};
    ///
    /// assert_eq!(Error::Closed.kind(), ErrorKind::Closed);
    /// assert!(Error::Closed.is_closed());
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidPath { .. } | Error::InvalidArgument { .. } => ErrorKind::InvalidInput,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::ConnectTimeout { .. } => ErrorKind::Connection,
            Error::Tls { .. } => ErrorKind::Tls,
            Error::AuthFailed { .. } => ErrorKind::Auth,
            Error::ZooKeeper(e) | Error::RetriesExhausted { last: e, .. } | Error::Transaction { source: e, .. } => {
                of_zookeeper(e)
            }
            Error::Closed => ErrorKind::Closed,
            Error::SessionLost | Error::LockLost { .. } => ErrorKind::Lost,
            Error::Suspended => ErrorKind::Connection,
            Error::AlreadyReleased | Error::InvalidState(_) => ErrorKind::InvalidState,
            Error::Unsupported(_) | Error::ServerUnsupported(_) => ErrorKind::Unsupported,
            Error::CorruptData { .. } => ErrorKind::CorruptData,
            Error::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
            Error::NodeHeldByOther { .. } => ErrorKind::Conflict,
            Error::UnknownPermit { .. } | Error::NoSuchItem { .. } => ErrorKind::NotFound,
            Error::TooLarge { .. } => ErrorKind::TooLarge,
            Error::Contended { .. } => ErrorKind::Contended,
        }
    }
}
