//! Exit codes (a contract: scripts branch on them) and the error that carries one.

use zk_recipes::Error;
use zk_recipes::ZooKeeperError;

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
            Error::TooLarge { .. } => USAGE,
            Error::ConnectTimeout { .. } | Error::RetriesExhausted { .. } => UNAVAILABLE,
            Error::Tls { .. } | Error::AuthFailed { .. } => UNAVAILABLE,
            Error::ZooKeeper(ZooKeeperError::ConnectionLoss | ZooKeeperError::NoHosts | ZooKeeperError::Timeout) => {
                UNAVAILABLE
            }
            Error::Timeout { .. } => TIMEOUT,
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
    use super::*;

    /// The errors a caller can make; the rest (unreachable, timeouts, TLS, lost holds) are
    /// made for real by the CLI suite (tests/cli), which checks their exit codes.
    #[test]
    fn library_errors_map_to_the_documented_codes() {
        let code = |e: Error| CliError::from(e).code;
        assert_eq!(code(zk_recipes::ops::validate_path("x").unwrap_err()), USAGE);
        assert_eq!(code(Error::invalid_argument("max_leases", "zero")), USAGE);
        assert_eq!(code(Error::Unsupported("re-entering a lease")), USAGE);
        assert_eq!(code(Error::InvalidState("already started")), USAGE);
        assert_eq!(code(Error::ServerUnsupported(zk_recipes::ServerFeature::TtlNodes)), USAGE);
        assert_eq!(code(Error::ZooKeeper(zk_recipes::ZooKeeperError::ConnectionLoss)), UNAVAILABLE);
        assert_eq!(code(Error::ZooKeeper(zk_recipes::ZooKeeperError::NoAuth)), FAILURE);
        assert_eq!(code(Error::corrupt_data("/c", "not a number")), FAILURE);
        assert_eq!(code(Error::Closed), FAILURE);
        assert_eq!(signalled(15), 143);
    }
}
