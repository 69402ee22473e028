//! The fence: checks and records a token in the caller's transaction, and runs the caller's
//! statements only when the token is current.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, IsolationLevel, Transaction};

use crate::error::FenceError;
use crate::token::{check_key, FencingToken};

/// The table the migration makes (in the connection's `search_path`).
pub const FENCE_TABLE: &str = "zk_recipes_fences";
/// The longest resource key the fence table stores, in bytes.
pub const MAX_RESOURCE_BYTES: usize = 512;
/// How many times a fenced transaction runs by default when it fails to serialize.
pub const DEFAULT_ATTEMPTS: u32 = 8;
/// The migration that makes the fence table (`migrations/0001_fences.sql`).
pub const MIGRATION: &str = include_str!("../migrations/0001_fences.sql");

/// The longest pause before a fenced transaction runs again after a serialization failure.
const MAX_CONFLICT_PAUSE: Duration = Duration::from_millis(50);

/// Records the token if it is at least the highest accepted (the row stays locked until the
/// transaction ends, so concurrent writers of one resource go one at a time); no row returned
/// means the token is stale.
const ADVANCE: &str = "INSERT INTO zk_recipes_fences AS f (scope, resource, token) VALUES ($1, $2, $3) \
     ON CONFLICT (scope, resource) DO UPDATE SET token = EXCLUDED.token, updated_at = now() \
     WHERE f.token <= EXCLUDED.token RETURNING f.token";
const HIGHEST: &str = "SELECT token FROM zk_recipes_fences WHERE scope = $1 AND resource = $2";
const SHAPE: &str = "SELECT scope, resource, token FROM zk_recipes_fences LIMIT 0";

/// The future of a fenced transaction's work (see [`Fence::transaction`]): boxed, so that
/// it may borrow the transaction it is given.
pub type Work<'t, T> = Pin<Box<dyn Future<Output = Result<T, tokio_postgres::Error>> + Send + 't>>;

/// Writes to PostgreSQL that only a current holder can make.
///
/// Each fenced write runs in one database transaction that first checks the hold's
/// [`FencingToken`] against the highest the database has accepted for that scope and
/// resource, and records it: a token at least as high goes on, a lower one is refused with
/// [`FenceError::Stale`] and the transaction is rolled back, so the caller's statements of a
/// superseded holder change nothing. The check and the statements commit together or not at
/// all, which is what makes the refusal hold when the holder is paused between its check and
/// its write.
///
/// Works under PostgreSQL's default isolation (`READ COMMITTED`: the token's row is locked by
/// the check, so writers of one resource go one at a time) and under `SERIALIZABLE`
/// ([`with_isolation`](Self::with_isolation)), where a transaction that fails to serialize is
/// run again, up to [`with_attempts`](Self::with_attempts) times.
///
/// A `Fence` holds no connection: it is a checked handle on the fence table, cheap to clone
/// and used with any `tokio_postgres::Client` of that database.
///
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework, mut db: tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use zk_recipes::InterProcessMutex;
/// use zk_recipes_fencing::{Fence, FencingToken};
///
/// let fence = Fence::open(&db).await?;
/// let guard = InterProcessMutex::new(&fw, "/locks/stock")?.acquire().await?;
/// // ... the holder may pause here for longer than its session ...
/// let updated = fence
///     .execute(&mut db, &FencingToken::of(&guard), "item-42", "UPDATE stock SET left = left - 1 WHERE item = 42", &[])
///     .await?; // Err(FenceError::Stale { .. }) once another holder has written
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Fence {
    isolation: Option<IsolationLevel>,
    attempts: u32,
}

impl Fence {
    /// A fence on the table of the database `client` is connected to, once that table is
    /// found in the shape the migration makes.
    ///
    /// # Errors
    /// [`FenceError::SchemaMissing`] when the table is not there (apply the migration, or call
    /// [`Fence::migrate`]); [`FenceError::SchemaMismatch`] when it has the wrong columns or no
    /// primary key on `(scope, resource)`; [`FenceError::Postgres`] when the database cannot
    /// be asked.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn open(client: &Client) -> Result<Fence, FenceError> {
        let shape = client.prepare(SHAPE).await.map_err(schema_error)?;
        let types: Vec<&Type> = shape.columns().iter().map(|c| c.type_()).collect();
        if types != [&Type::TEXT, &Type::TEXT, &Type::INT8] {
            return Err(mismatch(format!("columns (scope, resource, token) are {types:?}, not (text, text, bigint)")));
        }
        // the upsert needs a unique index on (scope, resource): PostgreSQL checks at prepare
        client.prepare(ADVANCE).await.map_err(schema_error)?;
        Ok(Fence { isolation: None, attempts: DEFAULT_ATTEMPTS })
    }

    /// Makes the fence table if it is missing ([`MIGRATION`], the text of
    /// `migrations/0001_fences.sql`), then opens the fence. For services that do not run
    /// their migrations with a tool of their own.
    ///
    /// # Errors
    /// As [`Fence::open`], and [`FenceError::Postgres`] when the table cannot be made (no
    /// `CREATE` right on the schema).
    ///
    /// # Cancel safety
    /// Cancel safe: the migration is one idempotent statement.
    pub async fn migrate(client: &Client) -> Result<Fence, FenceError> {
        client.batch_execute(MIGRATION).await?;
        Fence::open(client).await
    }

    /// Runs fenced transactions at `isolation` (by default the database's, normally
    /// `READ COMMITTED`).
    pub fn with_isolation(mut self, isolation: IsolationLevel) -> Self {
        self.isolation = Some(isolation);
        self
    }

    /// How many times a fenced transaction of [`execute`](Self::execute) or
    /// [`transaction`](Self::transaction) runs when it fails to serialize (`40001`) or
    /// deadlocks (`40P01`); at least 1. Default [`DEFAULT_ATTEMPTS`].
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// Checks `token` for `resource` inside the caller's transaction `tx`, and records it.
    ///
    /// The building block of the other two: the caller's statements must run in the same
    /// transaction, after this check, and only when it returned `Ok`; the transaction must be
    /// rolled back (dropped) when it returned an error. Prefer [`execute`](Self::execute) or
    /// [`transaction`](Self::transaction), which cannot be used otherwise.
    ///
    /// # Errors
    /// [`FenceError::Stale`] when the database accepted a higher token for this scope and
    /// resource; [`FenceError::InvalidKey`] for a resource key the table cannot store;
    /// [`FenceError::Postgres`] when the database fails (a serialization failure included:
    /// the caller retries its transaction).
    ///
    /// # Cancel safety
    /// Dropping the future leaves the transaction in an unknown state: drop the transaction
    /// too (it is rolled back).
    pub async fn check(&self, tx: &Transaction<'_>, token: &FencingToken, resource: &str) -> Result<(), FenceError> {
        check_key("resource key", resource, MAX_RESOURCE_BYTES)?;
        let (scope, value) = (token.scope(), token.value());
        if tx.query_opt(ADVANCE, &[&scope, &resource, &value]).await?.is_some() {
            return Ok(());
        }
        let highest: i64 = tx.query_one(HIGHEST, &[&scope, &resource]).await?.get(0);
        Err(FenceError::Stale { scope: scope.to_string(), resource: resource.to_string(), token: value, highest })
    }

    /// Runs one statement fenced by `token`: in one transaction, the check of
    /// [`check`](Self::check), then `statement` with `params`, then the commit; returns the
    /// number of rows the statement changed.
    ///
    /// # Errors
    /// [`FenceError::Stale`] (nothing applied) when a newer holder of the token's lock path
    /// has written `resource`; [`FenceError::InvalidKey`] for a resource key the table cannot
    /// store; [`FenceError::Conflict`] when the transaction failed to serialize on every
    /// attempt; [`FenceError::Postgres`] for the statement's own errors and the connection's.
    ///
    /// # Cancel safety
    /// Dropping the future before the commit was sent rolls the transaction back; dropped
    /// after, the write may or may not be applied (as any PostgreSQL commit whose answer was
    /// not read). A retry with the same token is then safe to make: it is accepted if the
    /// token is still the highest.
    pub async fn execute(
        &self,
        client: &mut Client,
        token: &FencingToken,
        resource: &str,
        statement: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, FenceError> {
        self.run(client, token, resource, Statement { statement, params }).await
    }

    /// Runs `work` fenced by `token`: in one transaction, the check of [`check`](Self::check),
    /// then `work` with the transaction, then the commit (a `work` that fails rolls it back).
    /// `work` runs again when the transaction fails to serialize, so it must only act through
    /// the transaction.
    ///
    /// `work` returns its future boxed ([`Work`]), which may borrow the transaction but not the
    /// caller's locals: move owned values into it (`move |tx| Box::pin(async move { .. })`),
    /// as with sqlx's `Connection::transaction`.
    ///
    /// ```no_run
    /// # async fn demo(fence: zk_recipes_fencing::Fence, mut db: tokio_postgres::Client,
    /// #               token: zk_recipes_fencing::FencingToken) -> Result<(), zk_recipes_fencing::FenceError> {
    /// let order_id = 42_i64;
    /// let total: i64 = fence
    ///     .transaction(&mut db, &token, "orders", move |tx| {
    ///         Box::pin(async move {
    ///             tx.execute("UPDATE orders SET state = 'shipped' WHERE id = $1", &[&order_id]).await?;
    ///             Ok(tx.query_one("SELECT count(*) FROM orders WHERE state = 'shipped'", &[]).await?.get(0))
    ///         })
    ///     })
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`execute`](Self::execute), with `work`'s errors as [`FenceError::Postgres`].
    ///
    /// # Cancel safety
    /// As [`execute`](Self::execute).
    pub async fn transaction<T, F>(
        &self,
        client: &mut Client,
        token: &FencingToken,
        resource: &str,
        work: F,
    ) -> Result<T, FenceError>
    where
        F: for<'t> FnMut(&'t Transaction<'t>) -> Work<'t, T> + Send,
    {
        self.run(client, token, resource, Closure(work)).await
    }

    /// The one loop of the fenced forms: runs `step` fenced, again while it fails to serialize.
    async fn run<T, S: Step<T>>(
        &self,
        client: &mut Client,
        token: &FencingToken,
        resource: &str,
        mut step: S,
    ) -> Result<T, FenceError> {
        check_key("resource key", resource, MAX_RESOURCE_BYTES)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.once(client, token, resource, &mut step).await {
                Err(FenceError::Postgres(e)) if conflicted(&e) => {
                    if attempt >= self.attempts {
                        return Err(FenceError::Conflict { attempts: attempt, last: e });
                    }
                    // another writer of the same rows: let it finish before running again
                    let most = MAX_CONFLICT_PAUSE.as_millis() as u64 * u64::from(attempt.min(8)) / 8;
                    tokio::time::sleep(Duration::from_millis(fastrand::u64(0..=most))).await;
                }
                outcome => return outcome,
            }
        }
    }

    async fn once<T, S: Step<T>>(
        &self,
        client: &mut Client,
        token: &FencingToken,
        resource: &str,
        step: &mut S,
    ) -> Result<T, FenceError> {
        let mut builder = client.build_transaction();
        if let Some(isolation) = self.isolation {
            builder = builder.isolation_level(isolation);
        }
        let tx = builder.start().await?;
        self.check(&tx, token, resource).await?;
        let done = step.run(&tx).await?;
        tx.commit().await?;
        Ok(done)
    }
}

/// What a fenced transaction runs after the check: one statement, or the caller's work.
trait Step<T>: Send {
    fn run<'t>(&'t mut self, tx: &'t Transaction<'_>) -> Work<'t, T>;
}

/// [`Fence::execute`]'s statement.
struct Statement<'a> {
    statement: &'a str,
    params: &'a [&'a (dyn tokio_postgres::types::ToSql + Sync)],
}

impl Step<u64> for Statement<'_> {
    fn run<'t>(&'t mut self, tx: &'t Transaction<'_>) -> Work<'t, u64> {
        Box::pin(tx.execute(self.statement, self.params))
    }
}

/// [`Fence::transaction`]'s work.
struct Closure<F>(F);

impl<T, F> Step<T> for Closure<F>
where
    F: for<'t> FnMut(&'t Transaction<'t>) -> Work<'t, T> + Send,
{
    fn run<'t>(&'t mut self, tx: &'t Transaction<'_>) -> Work<'t, T> {
        (self.0)(tx)
    }
}

/// A failure that running the transaction again can cure.
fn conflicted(e: &tokio_postgres::Error) -> bool {
    matches!(e.code(), Some(code) if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED)
}

fn schema_error(e: tokio_postgres::Error) -> FenceError {
    match e.code() {
        Some(code) if *code == SqlState::UNDEFINED_TABLE => FenceError::SchemaMissing { table: FENCE_TABLE },
        Some(code) if *code == SqlState::UNDEFINED_COLUMN || *code == SqlState::INVALID_COLUMN_REFERENCE => {
            mismatch(e.as_db_error().map_or_else(|| e.to_string(), |db| db.message().to_string()))
        }
        _ => FenceError::Postgres(e),
    }
}

fn mismatch(detail: String) -> FenceError {
    FenceError::SchemaMismatch { table: FENCE_TABLE, detail }
}
