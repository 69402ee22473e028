//! The fence against real servers: a ZooKeeper server (the kit's shared one) and a throwaway
//! PostgreSQL cluster (the kit's `TestingPostgres`), one of each per test binary.

mod contenders;
mod input;
mod leadership;
mod paused;

use tokio::sync::OnceCell;
use zk_recipes_fencing::tokio_postgres::{self, Client, NoTls};
use zk_recipes_fencing::Fence;
use zk_recipes_testing::TestingPostgres;

/// The PostgreSQL server this test binary shares (its tests use tables and lock paths of
/// their own). Killed with the test process (the kit's parent-death signal).
async fn pg() -> &'static TestingPostgres {
    static PG: OnceCell<TestingPostgres> = OnceCell::const_new();
    PG.get_or_init(|| async {
        let pg = TestingPostgres::start().await.expect("PostgreSQL test server");
        let db = connect_to(&pg.connection_string()).await;
        Fence::migrate(&db).await.expect("the fence table");
        pg
    })
    .await
}

/// A connection to the shared server's `postgres` database (its driver runs on this test's
/// runtime).
async fn connect() -> Client {
    connect_to(&pg().await.connection_string()).await
}

async fn connect_to(cs: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(cs, NoTls).await.expect("connect to PostgreSQL");
    tokio::spawn(connection);
    client
}

/// A fresh table `name (key text primary key, n bigint, stale bigint, last bigint)` with one
/// row `key = 'k'` at zero: what the tests write, fenced.
async fn counter_table(db: &Client, name: &str) {
    db.batch_execute(&format!(
        "CREATE TABLE {name} (key text PRIMARY KEY, n bigint NOT NULL, stale bigint NOT NULL, last bigint NOT NULL);
         INSERT INTO {name} VALUES ('k', 0, 0, 0);"
    ))
    .await
    .expect("counter table");
}

/// The row of [`counter_table`]: `(n, stale, last)`.
async fn counter(db: &Client, name: &str) -> (i64, i64, i64) {
    let row = db.query_one(&format!("SELECT n, stale, last FROM {name} WHERE key = 'k'"), &[]).await.expect("read");
    (row.get(0), row.get(1), row.get(2))
}

/// The highest token the fence table holds for `scope` and `resource`.
async fn highest(db: &Client, scope: &str, resource: &str) -> Option<i64> {
    db.query_opt("SELECT token FROM zk_recipes_fences WHERE scope = $1 AND resource = $2", &[&scope, &resource])
        .await
        .expect("read the fence table")
        .map(|row| row.get(0))
}

/// A SQL identifier unique to this run.
fn table(prefix: &str) -> String {
    zk_recipes_testing::fixtures::unique(prefix).replace('-', "_")
}
