//! What some errors carry: where a deadline ran out, the server feature missing, why a TLS
//! handshake failed.

/// Where a deadline ran out (see [`Error::Timeout`](crate::Error::Timeout)). Its `Display` completes "timed out
/// after … while".
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum TimeoutStep {
    /// Waiting for a connection to the ensemble (none was up).
    #[error("waiting for a connection")]
    Connecting,
    /// Awaiting the server's reply to a request that was sent: a read's result is not known;
    /// a write's outcome is reported as [`Error::OutcomeUnknown`](crate::Error::OutcomeUnknown) by the plain framework writes.
    #[error("awaiting the server's reply")]
    Reply,
    /// The retry policy asked for a pause that would have ended past the deadline: no attempt
    /// was started that could not be answered in time.
    #[error("pausing before a retry")]
    RetryPause,
    /// The recipe's own wait: a turn in a lock's queue, a barrier, a latch, an item of a queue,
    /// leadership, a cache's initial load.
    #[error("waiting")]
    Waiting,
    /// Removing what the abandoned wait left (its node): that goes on in the background and is
    /// gone once the server answers again.
    #[error("cleaning up")]
    Cleanup,
    /// A shutdown: background deletes, or the server's acknowledgement of the session's close.
    #[error("closing")]
    Closing,
}

/// A feature of ZooKeeper that a call needs and the server lacks (see
/// [`Error::ServerUnsupported`](crate::Error::ServerUnsupported)). Its `Display` says what the server needs for it.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::{Error, ServerFeature};
/// use zk_recipes::CreateMode;
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
    /// Persistent and persistent-recursive watches (`addWatch`), which caches in
    /// `WatchMode::Persistent` and the `PersistentWatcher` use: ZooKeeper 3.6 or later.
    #[error("persistent watches, addWatch (ZooKeeper 3.6 or later)")]
    PersistentWatches,
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

/// Why a TLS handshake failed (see [`Error::Tls`](crate::Error::Tls)).
///
/// # Examples
/// ```no_run
/// # async fn demo(builder: zk_recipes::FrameworkBuilder) {
/// use zk_recipes::{Error, TlsFailure};
///
/// match builder.connect().await {
///     Ok(_fw) => {}
///     Err(Error::Tls { server, failure: TlsFailure::UnknownCa, .. }) => {
///         eprintln!("{server}: its certificate is not signed by our CA (wrong --tls-ca?)")
///     }
///     Err(Error::Tls { server, failure, .. }) => eprintln!("{server}: {failure}"),
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
