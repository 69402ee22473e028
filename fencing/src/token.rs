//! A fencing token and the lock path it belongs to.

use zk_recipes::{HeldNode, LeaderContext, Leadership};

use crate::error::FenceError;

/// The longest scope the fence table stores, in bytes.
pub const MAX_SCOPE_BYTES: usize = 1024;

/// A hold's fencing token together with its scope: the lock path whose tokens it is compared
/// with.
///
/// The token is the ZooKeeper zxid the recipes expose as `fencing_token()`: it strictly
/// increases from one hold of a lock path to the next, so a database that remembers the highest
/// it accepted can refuse the write of a holder that was superseded. The scope keeps the tokens
/// of different lock paths apart: a resource written under two locks has one highest token per
/// lock.
///
/// A token is a snapshot taken when the hold was: it stays valid in the database's eyes until
/// a newer hold of the same path writes, whatever the holder's own state, which is the point
/// (a paused holder does not know it lost the lock; the database does).
///
/// Fencing suits exclusive holds: locks, write sides, leaderships, a one-lease semaphore. The
/// holders of a semaphore with several leases hold at once; their writes to one resource would
/// refuse each other's older tokens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FencingToken {
    scope: String,
    value: i64,
}

impl FencingToken {
    /// The token of a held lock node: any lock guard, lease or timed hold (they dereference to
    /// [`HeldNode`]: pass `&guard`). The scope is the lock's path: the node's parent, relative
    /// to the framework's namespace.
    ///
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> Result<(), Box<dyn std::error::Error>> {
    /// use zk_recipes::InterProcessMutex;
    /// use zk_recipes_fencing::FencingToken;
    ///
    /// let guard = InterProcessMutex::new(&fw, "/locks/orders")?.acquire().await?;
    /// let token = FencingToken::of(&guard);
    /// assert_eq!(token.scope(), "/locks/orders");
    /// assert_eq!(token.value(), guard.fencing_token());
    /// # Ok(())
    /// # }
    /// ```
    pub fn of(hold: &HeldNode) -> FencingToken {
        FencingToken { scope: parent(hold.path()).to_string(), value: hold.fencing_token() }
    }

    /// The token of a leadership: what [`LeaderLatch::await_leadership`] returns, or a
    /// [`LeaderSelector`](zk_recipes::LeaderSelector)'s [`LeaderContext`] (it derefs to
    /// [`Leadership`]: pass `&ctx`). The scope is the election's path: the node's parent (a
    /// latch and a selector on one path elect among each other and share it).
    ///
    /// A held leadership always has its token: this cannot fail. A leadership that ended
    /// still gives its token, and the database refuses it once a newer leadership wrote.
    ///
    /// [`LeaderLatch::await_leadership`]: zk_recipes::LeaderLatch::await_leadership
    ///
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> Result<(), Box<dyn std::error::Error>> {
    /// use zk_recipes::LeaderLatch;
    /// use zk_recipes_fencing::FencingToken;
    ///
    /// let latch = LeaderLatch::new(&fw, "/elections/billing", "replica-1")?;
    /// latch.start().await?;
    /// let leadership = latch.await_leadership().await?;
    /// let token = FencingToken::of_leadership(&leadership);
    /// assert_eq!(token.scope(), "/elections/billing");
    /// assert_eq!(token.value(), leadership.fencing_token());
    /// # Ok(())
    /// # }
    /// ```
    pub fn of_leadership(leadership: &Leadership) -> FencingToken {
        FencingToken { scope: parent(leadership.node()).to_string(), value: leadership.fencing_token() }
    }

    /// The token of a [`LeaderSelector`](zk_recipes::LeaderSelector)'s leadership, from the
    /// context its leadership task is given: the same as
    /// [`of_leadership(&ctx)`](Self::of_leadership).
    pub fn of_leader(context: &LeaderContext) -> FencingToken {
        Self::of_leadership(context)
    }

    /// A token of a scope of the caller's choosing: for holds this crate does not know (a
    /// ShedLock guard's `fencing_token()`, a token carried over a network).
    ///
    /// # Errors
    /// [`FenceError::InvalidKey`] when `scope` is empty, longer than [`MAX_SCOPE_BYTES`] or
    /// holds a NUL character.
    pub fn new(scope: impl Into<String>, value: i64) -> Result<FencingToken, FenceError> {
        let scope = scope.into();
        check_key("scope", &scope, MAX_SCOPE_BYTES)?;
        Ok(FencingToken { scope, value })
    }

    /// The lock path whose tokens this one is compared with.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The token: a zxid.
    pub fn value(&self) -> i64 {
        self.value
    }
}

/// A lock node's lock path: its parent (the root for a node at the top).
fn parent(node: &str) -> &str {
    match node.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &node[..i],
    }
}

/// Refuses what the fence table cannot store: empty, too long, or with a NUL (PostgreSQL's
/// `text` cannot hold one).
pub(crate) fn check_key(what: &'static str, key: &str, max: usize) -> Result<(), FenceError> {
    let reason = if key.is_empty() {
        "it is empty".to_string()
    } else if key.len() > max {
        format!("it is {} bytes long, more than the {max} the fence table stores", key.len())
    } else if key.contains('\0') {
        "it contains a NUL character".to_string()
    } else {
        return Ok(());
    };
    Err(FenceError::InvalidKey { what, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_scope_is_its_parent() {
        assert_eq!(parent("/locks/orders/_c_x-lock-0000000001"), "/locks/orders");
        assert_eq!(parent("/node"), "/");
    }

    #[test]
    fn scopes_the_table_cannot_store_are_refused() {
        assert!(FencingToken::new("/locks/a", 7).is_ok());
        for bad in [String::new(), "x".repeat(MAX_SCOPE_BYTES + 1), "a\0b".into()] {
            assert!(matches!(FencingToken::new(bad, 1), Err(FenceError::InvalidKey { what: "scope", .. })));
        }
    }
}
