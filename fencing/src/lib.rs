//! Writes to PostgreSQL fenced by a [zk-recipes](zk_recipes) hold: the database itself refuses
//! the write of a holder that was superseded.
//!
//! A lock held through ZooKeeper can be lost without its holder knowing: a process paused
//! longer than its session (a GC pause, a frozen VM), a partition, a clock that jumped. The
//! lock is then someone else's, and the old holder's next write, decided before the pause,
//! lands on top of the new holder's. Every hold of zk-recipes carries a fencing token that
//! strictly increases from one holder of a lock path to the next; this crate gives the
//! database the other half: it remembers the highest token it accepted per lock path and
//! resource ([`FENCE_TABLE`]), and a [`Fence`] runs the caller's statements only in a
//! transaction that checked and recorded the token first. A stale token is
//! [`FenceError::Stale`], and nothing of that write is applied.
//!
//! ```no_run
//! use zk_recipes::{Framework, InterProcessMutex};
//! use zk_recipes_fencing::{tokio_postgres, Fence, FencingToken};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let fw = Framework::builder().connect_string("127.0.0.1:2181").connect().await?;
//! let (mut db, connection) = tokio_postgres::connect("host=127.0.0.1 user=app dbname=shop", tokio_postgres::NoTls).await?;
//! tokio::spawn(connection);
//! let fence = Fence::open(&db).await?; // the table of migrations/0001_fences.sql
//!
//! let guard = InterProcessMutex::new(&fw, "/locks/stock")?.acquire().await?;
//! match fence
//!     .execute(&mut db, &FencingToken::of(&guard), "item-42", "UPDATE stock SET left = left - 1 WHERE item = 42", &[])
//!     .await
//! {
//!     Ok(_) => println!("sold"),
//!     Err(e) if e.is_stale() => println!("we lost the lock while paused: nothing written"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # The schema
//! One table, made by `migrations/0001_fences.sql` (shipped in the crate, also as
//! [`MIGRATION`]): apply it with your migration tool, or call [`Fence::migrate`].
//! [`Fence::open`] checks it is there in the expected shape and says what to do if not.
//!
//! # Scopes
//! A token is compared only with tokens of the same scope, the lock path it comes from
//! ([`FencingToken::scope`]): tokens of different lock paths never mix, so one resource
//! written under two locks has a highest token per lock.
//!
//! # Isolation
//! Under `READ COMMITTED` (PostgreSQL's default) the check locks the resource's row in the
//! fence table until the transaction ends, so two writers of one resource go one after the
//! other and the second sees the first's token. Under `SERIALIZABLE`
//! ([`Fence::with_isolation`]) one of two concurrent writers fails to serialize; the fence runs
//! its transaction again, where the check sees the other's token.
//!
//! # MySQL and MariaDB
//! The same pattern in SQL is in the guide page "Fencing your database"
//! (`docs/guide/fencing-database.md` in the repository).

#![deny(missing_docs)]

mod error;
mod fence;
mod token;

pub use error::FenceError;
pub use fence::{Fence, Work, DEFAULT_ATTEMPTS, FENCE_TABLE, MAX_RESOURCE_BYTES, MIGRATION};
pub use token::{FencingToken, MAX_SCOPE_BYTES};
/// The PostgreSQL driver this crate is built on, at the version its signatures use.
pub use tokio_postgres;
