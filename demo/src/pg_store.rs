//! The stock as a row of a PostgreSQL table, written only through `zk-recipes-fencing`: the
//! database checks each write's fencing token, so the paused holder's stale write is refused
//! by PostgreSQL itself. Used by the optional row of `DEMO_POSTGRES=1`.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Mutex;
use zk_recipes_fencing::tokio_postgres::{self, Client, GenericClient, NoTls};
use zk_recipes_fencing::{Fence, FenceError, FencingToken, FENCE_TABLE};
use zk_recipes_testing::TestingPostgres;

use crate::BoxError;

/// The environment variable that adds the PostgreSQL row.
pub const ENV: &str = "DEMO_POSTGRES";
/// A libpq connection string of a database to use instead of a throwaway server.
pub const URL_ENV: &str = "DEMO_POSTGRES_URL";

/// The database of the optional row: the server the demo started (if it did) and where it is.
pub struct Database {
    _server: Option<TestingPostgres>,
    connect: String,
}

impl Database {
    /// `None` unless `DEMO_POSTGRES=1`; else `DEMO_POSTGRES_URL`, or a throwaway server of the
    /// testing kit (Debian's `postgresql` package), with the fence table made.
    pub async fn from_env() -> Result<Option<Database>, BoxError> {
        if std::env::var(ENV).as_deref() != Ok("1") {
            return Ok(None);
        }
        let (server, connect) = match std::env::var(URL_ENV) {
            Ok(url) => (None, url),
            Err(_) => {
                let server = TestingPostgres::start().await?;
                let connect = server.connection_string();
                (Some(server), connect)
            }
        };
        let client = connect_to(&connect).await?;
        Fence::migrate(&client).await?;
        client
            .batch_execute("CREATE TABLE IF NOT EXISTS demo_stock (id text PRIMARY KEY, stock bigint NOT NULL)")
            .await?;
        Ok(Some(Database { _server: server, connect }))
    }

    /// A stock of `stock` items in row `id`, fenced by the tokens of the lock at `lock_path`.
    /// The row starts afresh, with no token recorded for it: one left by an earlier run (a
    /// database of `DEMO_POSTGRES_URL`, the same pid in a container) may be higher than every
    /// token of this run's ZooKeeper, whose zxids started again, and would refuse every write.
    pub async fn store(&self, id: &str, lock_path: &str, stock: i64) -> Result<PgStore, BoxError> {
        let mut client = connect_to(&self.connect).await?;
        let fence = Fence::open(&client).await?;
        let tx = client.transaction().await?;
        clear(&tx, id, lock_path).await?;
        tx.execute("INSERT INTO demo_stock VALUES ($1, $2)", &[&id, &stock]).await?;
        tx.commit().await?;
        Ok(PgStore {
            client: Mutex::new(client),
            fence,
            id: id.to_string(),
            scope: lock_path.to_string(),
            refused: AtomicU64::new(0),
        })
    }

    /// Removes row `id` and its token under `lock_path`: a database of `DEMO_POSTGRES_URL`
    /// keeps none of the demo's rows.
    pub async fn remove(&self, id: &str, lock_path: &str) -> Result<(), BoxError> {
        Ok(clear(&connect_to(&self.connect).await?, id, lock_path).await?)
    }
}

/// One row of stock. The sellers write one at a time (they hold the lock; the paused holder's
/// late write is served by the demo), so one connection serves them all.
#[derive(Debug)]
pub struct PgStore {
    client: Mutex<Client>,
    fence: Fence,
    id: String,
    /// The lock path: the scope of the tokens compared.
    scope: String,
    refused: AtomicU64,
}

impl PgStore {
    pub async fn read(&self) -> Result<i64, BoxError> {
        let client = self.client.lock().await;
        Ok(client.query_one("SELECT stock FROM demo_stock WHERE id = $1", &[&self.id]).await?.get(0))
    }

    /// Writes `value` fenced by `token`; false when PostgreSQL refused the token as stale.
    pub async fn write(&self, value: i64, token: i64) -> Result<bool, BoxError> {
        let token = FencingToken::new(self.scope.as_str(), token)?;
        let mut client = self.client.lock().await;
        let update = "UPDATE demo_stock SET stock = $1 WHERE id = $2";
        match self.fence.execute(&mut client, &token, &self.id, update, &[&value, &self.id]).await {
            Ok(_) => Ok(true),
            Err(FenceError::Stale { .. }) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Deletes row `id` of stock and the token recorded for it under `scope`.
async fn clear(db: &impl GenericClient, id: &str, scope: &str) -> Result<(), tokio_postgres::Error> {
    db.execute("DELETE FROM demo_stock WHERE id = $1", &[&id]).await?;
    let token = format!("DELETE FROM {FENCE_TABLE} WHERE scope = $1 AND resource = $2");
    db.execute(&token, &[&scope, &id]).await?;
    Ok(())
}

async fn connect_to(connect: &str) -> Result<Client, BoxError> {
    let (client, connection) = tokio_postgres::connect(connect, NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}
