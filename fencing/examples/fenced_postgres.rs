//! A lock holder paused past its session, refused by PostgreSQL.
//!
//! Two holders of one lock write one row of an `accounts` table through a [`Fence`]. The first
//! loses its session while it is "paused" (its session is expired for it, as a long GC pause
//! would), the second takes the lock and writes; when the first wakes and writes what it
//! decided before, PostgreSQL refuses its stale token and the row keeps the second's write.
//!
//! Runs against its own servers (the testing kit's ZooKeeper and PostgreSQL, Debian's
//! packages: `scripts/setup.sh`), or against yours with `ZK_CONNECT` and `PG_CONNECT` (a libpq
//! connection string whose user may create a table):
//!
//! ```sh
//! cargo run -p zk-recipes-fencing --example fenced_postgres
//! ```

use std::time::Duration;

use zk_recipes::{Framework, InterProcessMutex};
use zk_recipes_fencing::tokio_postgres::{self, Client, NoTls};
use zk_recipes_fencing::{Fence, FencingToken};
use zk_recipes_testing::{expire_session, server_or_env, TestingPostgres};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let (_zk, zk_connect) = server_or_env().await?;
    let (_pg, pg_connect) = match std::env::var("PG_CONNECT") {
        Ok(cs) => (None, cs),
        Err(_) => {
            let pg = TestingPostgres::start().await?;
            let cs = pg.connection_string();
            (Some(pg), cs)
        }
    };
    let setup = connect(&pg_connect).await?;
    let fence = Fence::migrate(&setup).await?; // or apply migrations/0001_fences.sql yourself
    setup
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS accounts (id text PRIMARY KEY, balance bigint NOT NULL, written_by text);
             INSERT INTO accounts VALUES ('acme', 100, NULL) ON CONFLICT (id) DO UPDATE SET balance = 100, written_by = NULL;",
        )
        .await?;
    let lock = format!("/examples/fenced-postgres/{}", std::process::id());
    let update = "UPDATE accounts SET balance = $1, written_by = $2 WHERE id = 'acme'";

    // The first holder reads the balance and decides to debit 30 ...
    let first = framework(&zk_connect).await?;
    let mut first_db = connect(&pg_connect).await?;
    let first_guard = InterProcessMutex::new(&first, &lock)?.acquire().await?;
    let first_token = FencingToken::of(&first_guard);
    let balance: i64 = first_db.query_one("SELECT balance FROM accounts WHERE id = 'acme'", &[]).await?.get(0);
    println!("first holder (token {}): balance {balance}, will write {}", first_token.value(), balance - 30);

    // ... and is paused past its session: the lock is free for another.
    expire_session(&first).await?;
    let second = framework(&zk_connect).await?;
    let mut second_db = connect(&pg_connect).await?;
    let second_guard = InterProcessMutex::new(&second, &lock)?.acquire_timeout(Duration::from_secs(30)).await?;
    let second_token = FencingToken::of(&second_guard);
    fence.execute(&mut second_db, &second_token, "acme", update, &[&(balance - 50), &"second"]).await?;
    println!("second holder (token {}): wrote {}", second_token.value(), balance - 50);

    // The first wakes and writes what it decided before the pause: refused.
    match fence.execute(&mut first_db, &first_token, "acme", update, &[&(balance - 30), &"first"]).await {
        Err(e) if e.is_stale() => println!("first holder's write refused by PostgreSQL: {e}"),
        other => return Err(format!("the stale write was not refused: {other:?}").into()),
    }
    let row = setup.query_one("SELECT balance, written_by FROM accounts WHERE id = 'acme'", &[]).await?;
    let (balance, by): (i64, String) = (row.get(0), row.get(1));
    println!("accounts.acme = {balance} (written by the {by} holder)");
    if (balance, by.as_str()) != (50, "second") {
        return Err("the row does not hold the second holder's write".into());
    }
    drop((first_guard, second_guard));
    second.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}

async fn framework(connect: &str) -> Result<Framework, BoxError> {
    Ok(Framework::builder().connect_string(connect).session_timeout(Duration::from_secs(4)).connect().await?)
}

async fn connect(cs: &str) -> Result<Client, BoxError> {
    let (client, connection) = tokio_postgres::connect(cs, NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}
