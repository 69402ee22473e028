//! The store the paused-holder rows sell from: a stock kept outside ZooKeeper (a database, a
//! storage service), which can check the fencing token each write carries.

/// A stock with, when `fenced`, the fencing check of the README's pattern: a write carrying a
/// token lower than one already written is refused.
#[derive(Debug)]
pub struct Store {
    stock: i64,
    fenced: bool,
    highest_token: i64,
    refused: u64,
}

impl Store {
    pub fn new(stock: i64, fenced: bool) -> Self {
        Store { stock, fenced, highest_token: i64::MIN, refused: 0 }
    }

    pub fn read(&self) -> i64 {
        self.stock
    }

    /// Sets the stock to `value` for the holder of lock token `token`; false when refused.
    pub fn write(&mut self, value: i64, token: i64) -> bool {
        if self.fenced && token < self.highest_token {
            self.refused += 1;
            return false;
        }
        self.highest_token = self.highest_token.max(token);
        self.stock = value;
        true
    }

    /// How many writes the fencing check refused.
    pub fn refused(&self) -> u64 {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::Store;

    #[test]
    fn a_fenced_store_refuses_an_older_token_and_an_unfenced_one_does_not() {
        let mut fenced = Store::new(10, true);
        assert!(fenced.write(9, 5));
        assert!(fenced.write(8, 7));
        assert!(!fenced.write(9, 5), "a stale holder's write");
        assert!(fenced.write(7, 7), "the current holder writes again");
        assert_eq!((fenced.read(), fenced.refused()), (7, 1));
        let mut open = Store::new(10, false);
        assert!(open.write(8, 7));
        assert!(open.write(9, 5));
        assert_eq!((open.read(), open.refused()), (9, 0));
    }
}
