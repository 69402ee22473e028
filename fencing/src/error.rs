//! What a fenced write can fail with.

/// The error of a fenced write, a token or the fence table's check.
///
/// `Stale` is the one a fenced write exists for: the database refused a holder whose token is
/// older than one it already accepted, and nothing of that write was applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FenceError {
    /// The token is lower than the highest the database accepted for this scope and resource:
    /// the hold it came from was superseded (its holder paused, expired, or was partitioned
    /// while another took the lock and wrote). The transaction was rolled back.
    #[error("stale fencing token {token} for {resource:?} under {scope:?}: the database has accepted {highest}")]
    Stale {
        /// The lock path whose tokens are compared.
        scope: String,
        /// The resource written.
        resource: String,
        /// The refused token.
        token: i64,
        /// The highest token accepted so far.
        highest: i64,
    },
    /// A resource key or a scope the fence table cannot store: empty, longer than its limit
    /// ([`MAX_RESOURCE_BYTES`](crate::MAX_RESOURCE_BYTES),
    /// [`MAX_SCOPE_BYTES`](crate::MAX_SCOPE_BYTES)), or with a NUL character.
    #[error("invalid {what}: {reason}")]
    InvalidKey {
        /// `"resource key"` or `"scope"`.
        what: &'static str,
        /// Why it is refused.
        reason: String,
    },
    /// The fence table does not exist in the connection's `search_path`: apply
    /// `migrations/0001_fences.sql` or call [`Fence::migrate`](crate::Fence::migrate).
    #[error(
        "the fence table {table} is missing: apply zk-recipes-fencing's migrations/0001_fences.sql \
         (or call Fence::migrate)"
    )]
    SchemaMissing {
        /// The table looked for.
        table: &'static str,
    },
    /// The fence table exists but not in the shape the migration makes (a column missing or of
    /// another type, no primary key on `(scope, resource)`).
    #[error("the fence table {table} has the wrong shape: {detail}")]
    SchemaMismatch {
        /// The table.
        table: &'static str,
        /// What differs.
        detail: String,
    },
    /// The transaction failed to serialize (`40001`) or deadlocked (`40P01`) on every one of
    /// its attempts ([`Fence::with_attempts`](crate::Fence::with_attempts)); nothing was applied.
    #[error("the fenced transaction conflicted with others on each of its {attempts} attempts")]
    Conflict {
        /// How many times it ran.
        attempts: u32,
        /// The last conflict.
        #[source]
        last: tokio_postgres::Error,
    },
    /// An error of the database or the connection (the caller's statements included).
    #[error(transparent)]
    Postgres(#[from] tokio_postgres::Error),
}

impl FenceError {
    /// Whether the database refused the token as stale ([`FenceError::Stale`]).
    pub fn is_stale(&self) -> bool {
        matches!(self, FenceError::Stale { .. })
    }
}
