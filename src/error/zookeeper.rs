//! [`ZooKeeperError`]: what ZooKeeper (or the connection to it) answered an operation, in this
//! crate's own type, so that the client library underneath can change without changing ours.

/// What ZooKeeper answered an operation with, or what went wrong on the way: the payload of
/// [`Error::ZooKeeper`](crate::Error::ZooKeeper), the last attempt of
/// [`Error::RetriesExhausted`](crate::Error::RetriesExhausted), the refused operation of
/// [`Error::Transaction`](crate::Error::Transaction), a failed read of a multi-read
/// ([`ReadResult::Failed`](crate::ops::ReadResult::Failed)) and a retry policy's
/// [`RetryAttempt::error`](crate::RetryAttempt::error).
///
/// The codes are ZooKeeper's own (Curator's `KeeperException.Code`). `#[non_exhaustive]`: a
/// `match` needs a `_` arm, which covers the codes a later server or release adds. Most
/// callers need only the error's [`kind`](crate::Error::kind).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::{CreateMode, Error, ZooKeeperError};
///
/// match fw.create("/jobs", b"", CreateMode::Persistent).await {
///     Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => {}
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZooKeeperError {
    /// The node does not exist.
    #[error("no node")]
    NoNode,
    /// The node exists already.
    #[error("the node exists")]
    NodeExists,
    /// The node's version is not the expected one.
    #[error("bad version")]
    BadVersion,
    /// The node has children.
    #[error("the node has children")]
    NotEmpty,
    /// An ephemeral node cannot have children.
    #[error("an ephemeral node cannot have children")]
    NoChildrenForEphemerals,
    /// The node's ACL does not allow the operation to this session's identities.
    #[error("not authorized")]
    NoAuth,
    /// The server refused the session's authentication.
    #[error("authentication failed")]
    AuthFailed,
    /// The ACL given is not valid.
    #[error("invalid ACL")]
    InvalidAcl,
    /// The session expired.
    #[error("session expired")]
    SessionExpired,
    /// The session moved to another server.
    #[error("session moved")]
    SessionMoved,
    /// The connection was lost before the answer came: the operation may or may not have
    /// been applied.
    #[error("connection lost")]
    ConnectionLoss,
    /// The request was not answered in time.
    #[error("request timed out")]
    Timeout,
    /// A write was sent to a read-only server.
    #[error("the server is read-only")]
    NotReadOnly,
    /// The watch to remove does not exist.
    #[error("no such watch")]
    NoWatcher,
    /// A quota of the path was exceeded.
    #[error("quota exceeded")]
    QuotaExceeded,
    /// The server throttled the request.
    #[error("throttled by the server")]
    Throttled,
    /// The server could not read the request.
    #[error("the server could not read the request")]
    MarshallingError,
    /// The server does not implement the operation.
    #[error("not implemented by the server")]
    Unimplemented,
    /// Dynamic reconfiguration is disabled on the ensemble.
    #[error("reconfiguration disabled")]
    ReconfigDisabled,
    /// A condition of the request did not hold on the server (`RuntimeInconsistency`).
    #[error("runtime inconsistency")]
    RuntimeInconsistent,
    /// The client was closed.
    #[error("client closed")]
    ClientClosed,
    /// No server of the connect string could be used.
    #[error("no server available")]
    NoHosts,
    /// The connection failed underneath (a socket or TLS error of the client): retried like a
    /// connection loss.
    #[error("connection failed: {0}")]
    Io(String),
    /// The client refused the request's arguments.
    #[error("bad arguments: {0}")]
    BadArguments(String),
    /// A code this crate does not know.
    #[error("unknown error code {0}")]
    UnknownCode(i32),
    /// Anything else: an unexpected answer, a reply that could not be decoded.
    #[error("{0}")]
    Other(String),
}

impl ZooKeeperError {
    /// Whether the operation may succeed if tried again: the connection or the session
    /// failed under it (`ConnectionLoss`, `Timeout`, `SessionMoved`, `SessionExpired`, `Io`).
    pub(crate) fn is_retryable(&self) -> bool {
        matches!(self, Self::ConnectionLoss | Self::Timeout | Self::SessionMoved | Self::SessionExpired | Self::Io(_))
    }

    /// The client's error in this crate's terms.
    pub(crate) fn from_client(e: &zookeeper_client::Error) -> Self {
        use zookeeper_client::Error as Zk;
        match e {
            Zk::NoNode => Self::NoNode,
            Zk::NodeExists => Self::NodeExists,
            Zk::BadVersion => Self::BadVersion,
            Zk::NotEmpty => Self::NotEmpty,
            Zk::NoChildrenForEphemerals => Self::NoChildrenForEphemerals,
            Zk::NoAuth => Self::NoAuth,
            Zk::AuthFailed => Self::AuthFailed,
            Zk::InvalidAcl => Self::InvalidAcl,
            Zk::SessionExpired => Self::SessionExpired,
            Zk::SessionMoved => Self::SessionMoved,
            Zk::ConnectionLoss => Self::ConnectionLoss,
            Zk::Timeout => Self::Timeout,
            Zk::NotReadOnly => Self::NotReadOnly,
            Zk::NoWatcher => Self::NoWatcher,
            Zk::QuotaExceeded => Self::QuotaExceeded,
            Zk::Throttled => Self::Throttled,
            Zk::MarshallingError => Self::MarshallingError,
            Zk::Unimplemented => Self::Unimplemented,
            Zk::ReconfigDisabled => Self::ReconfigDisabled,
            Zk::RuntimeInconsistent => Self::RuntimeInconsistent,
            Zk::ClientClosed => Self::ClientClosed,
            Zk::NoHosts => Self::NoHosts,
            Zk::BadArguments(reason) => Self::BadArguments((**reason).to_owned()),
            Zk::UnexpectedErrorCode(code) => Self::UnknownCode(*code),
            Zk::Custom(e) => Self::Io(e.to_string()),
            other => Self::Other(other.to_string()),
        }
    }
}

impl crate::Error {
    /// The client's error as [`Error::ZooKeeper`](crate::Error::ZooKeeper).
    pub(crate) fn from_client(e: zookeeper_client::Error) -> Self {
        Self::ZooKeeper(ZooKeeperError::from_client(&e))
    }
}

/// For code that uses the raw client (`?` on its results in a function returning this crate's
/// [`Result`](crate::Result)).
#[cfg(feature = "raw-client")]
#[cfg_attr(docsrs, doc(cfg(feature = "raw-client")))]
impl From<zookeeper_client::Error> for crate::Error {
    fn from(e: zookeeper_client::Error) -> Self {
        Self::from_client(e)
    }
}
