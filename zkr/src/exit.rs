//! Exit codes (a contract: scripts branch on them) and the error that carries one.

use zk_recipes::zk::Error as ZkError;
use zk_recipes::Error;

/// Success; also what a holding zkr without a command exits with after SIGINT/SIGTERM.
pub const OK: i32 = 0;
/// A failure that has no code of its own (a refused operation, a failed `cas`).
pub const FAILURE: i32 = 1;
/// Usage error or invalid argument (clap's own usage errors exit 2 as well).
pub const USAGE: i32 = 2;
/// The command could not be executed (permission denied), as in POSIX shells.
pub const CANNOT_EXECUTE: i32 = 126;
/// The command was not found, as in POSIX shells.
pub const NOT_FOUND: i32 = 127;
/// ZooKeeper could not be reached within the connection timeout, the TLS handshake failed, or
/// the ensemble refused our authentication (sysexits `EX_UNAVAILABLE`).
pub const UNAVAILABLE: i32 = 69;
/// Timed out waiting, `--timeout` (sysexits `EX_TEMPFAIL`).
pub const TIMEOUT: i32 = 75;
/// The lock, lease or leadership was lost while held (sysexits `EX_PROTOCOL`).
pub const LOST: i32 = 76;

/// The exit code for a process ended by `signal`: 128 + its number, as shells report it.
pub fn signalled(signal: i32) -> i32 {
    128 + signal
}

/// An error that ends zkr: the message goes to stderr (prefixed `zkr: `), the code is the
/// exit code.
#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub message: String,
}

impl CliError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(USAGE, message)
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        let code = match &e {
            Error::InvalidPath { .. } | Error::InvalidArgument { .. } | Error::Unsupported(_) => USAGE,
            Error::InvalidState(_) | Error::ServerUnsupported(_) => USAGE,
            Error::ItemTooLarge { .. } => USAGE,
            Error::ConnectTimeout { .. } | Error::RetriesExhausted { .. } => UNAVAILABLE,
            Error::Tls { .. } | Error::AuthFailed { .. } => UNAVAILABLE,
            Error::ZooKeeper(ZkError::ConnectionLoss | ZkError::NoHosts | ZkError::Timeout) => UNAVAILABLE,
            Error::Timeout(_) => TIMEOUT,
            Error::LockLost { .. } => LOST,
            _ => FAILURE,
        };
        // the whole chain: a wrapped error (the last error of RetriesExhausted...) is a source
        let chain = std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source());
        CliError::new(code, chain.map(|e| e.to_string()).collect::<Vec<_>>().join(": "))
    }
}

/// Shorthand for the commands' results: `Ok(exit code)`.
pub type CliResult<T = i32> = Result<T, CliError>;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn library_errors_map_to_the_documented_codes() {
        let code = |e: Error| CliError::from(e).code;
        assert_eq!(code(Error::InvalidPath { path: "x".into(), reason: "relative" }), USAGE);
        assert_eq!(code(Error::InvalidArgument { argument: "max_leases", reason: "zero".into() }), USAGE);
        assert_eq!(code(Error::Unsupported("re-entering a lease")), USAGE);
        assert_eq!(code(Error::InvalidState("already started")), USAGE);
        assert_eq!(code(Error::ServerUnsupported(zk_recipes::ServerFeature::TtlNodes)), USAGE);
        assert_eq!(code(Error::ItemTooLarge { size: 2_000_000, limit: 1_024_000 }), USAGE);
        let timeout = Duration::from_millis(300);
        assert_eq!(code(Error::ConnectTimeout { connect_string: "h:1".into(), timeout }), UNAVAILABLE);
        assert_eq!(code(Error::Timeout(timeout)), TIMEOUT);
        let tls = Error::Tls { server: "h:1".into(), failure: zk_recipes::TlsFailure::UnknownCa };
        assert_eq!(code(tls), UNAVAILABLE);
        assert_eq!(code(Error::AuthFailed { connect_string: "h:1".into() }), UNAVAILABLE);
        assert_eq!(code(Error::LockLost { path: "/l/n".into(), reason: zk_recipes::LossReason::NodeDeleted }), LOST);
        assert_eq!(code(Error::ZooKeeper(ZkError::NoAuth)), FAILURE);
        assert_eq!(code(Error::Contended { path: "/c".into(), attempts: 3 }), FAILURE);
        let gave_up = Error::RetriesExhausted { attempts: 2, elapsed: timeout, last: ZkError::ConnectionLoss };
        let message = CliError::from(gave_up).message;
        assert!(message.starts_with("gave up after 2 attempt(s)"), "{message}");
        assert!(message.ends_with(&format!(": {}", ZkError::ConnectionLoss)), "{message}");
        assert_eq!(signalled(15), 143);
    }
}
