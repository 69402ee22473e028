//! The store the paused-holder rows sell from: a stock kept outside ZooKeeper (a database, a
//! storage service), which can check the fencing token each write carries. In memory (the
//! README's pattern), or in PostgreSQL where the database itself checks the token
//! (`DEMO_POSTGRES=1`, [`crate::pg_store`]).

use std::sync::Mutex;

use crate::pg_store::PgStore;
use crate::BoxError;

/// Where a paused-holder row keeps its stock.
#[derive(Debug)]
pub enum Store {
    /// In the demo's memory, with or without the fencing check.
    Memory(Mutex<Memory>),
    /// A row of a PostgreSQL table, written through `zk-recipes-fencing`.
    Postgres(Box<PgStore>),
}

impl Store {
    /// A stock in memory; fenced or not.
    pub fn memory(stock: i64, fenced: bool) -> Self {
        Store::Memory(Mutex::new(Memory::new(stock, fenced)))
    }

    /// The stock left.
    pub async fn read(&self) -> Result<i64, BoxError> {
        match self {
            Store::Memory(memory) => Ok(memory.lock().expect("the store's lock").read()),
            Store::Postgres(pg) => pg.read().await,
        }
    }

    /// Sets the stock to `value` for the holder of lock token `token`; false when refused.
    pub async fn write(&self, value: i64, token: i64) -> Result<bool, BoxError> {
        match self {
            Store::Memory(memory) => Ok(memory.lock().expect("the store's lock").write(value, token)),
            Store::Postgres(pg) => pg.write(value, token).await,
        }
    }

    /// How many writes the fencing check refused.
    pub fn refused(&self) -> u64 {
        match self {
            Store::Memory(memory) => memory.lock().expect("the store's lock").refused(),
            Store::Postgres(pg) => pg.refused(),
        }
    }
}

/// A stock with, when `fenced`, the fencing check of the README's pattern: a write carrying a
/// token lower than one already written is refused.
#[derive(Debug)]
pub struct Memory {
    stock: i64,
    fenced: bool,
    highest_token: i64,
    refused: u64,
}

impl Memory {
    pub fn new(stock: i64, fenced: bool) -> Self {
        Memory { stock, fenced, highest_token: i64::MIN, refused: 0 }
    }

    pub fn read(&self) -> i64 {
        self.stock
    }

    pub fn write(&mut self, value: i64, token: i64) -> bool {
        if self.fenced && token < self.highest_token {
            self.refused += 1;
            return false;
        }
        self.highest_token = self.highest_token.max(token);
        self.stock = value;
        true
    }

    pub fn refused(&self) -> u64 {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::Memory;

    #[test]
    fn a_fenced_store_refuses_an_older_token_and_an_unfenced_one_does_not() {
        let mut fenced = Memory::new(10, true);
        assert!(fenced.write(9, 5));
        assert!(fenced.write(8, 7));
        assert!(!fenced.write(9, 5), "a stale holder's write");
        assert!(fenced.write(7, 7), "the current holder writes again");
        assert_eq!((fenced.read(), fenced.refused()), (7, 1));
        let mut open = Memory::new(10, false);
        assert!(open.write(8, 7));
        assert!(open.write(9, 5));
        assert_eq!((open.read(), open.refused()), (9, 0));
    }
}
