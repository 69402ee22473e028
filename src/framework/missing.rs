//! A missing node as an answer, not an error: `NoNode` turned into `None` (or an empty
//! listing), for the many places where "gone" or "never there" is a normal outcome.

use super::Framework;
use crate::error::{Error, Result};
use crate::ZooKeeperError;

/// `NoNode` as `Ok(None)`, on the framework's results.
pub(crate) trait IfExists<T> {
    /// `Ok(Some(value))`, `Ok(None)` for `NoNode`, other errors unchanged.
    fn if_exists(self) -> Result<Option<T>>;
}

impl<T> IfExists<T> for Result<T> {
    fn if_exists(self) -> Result<Option<T>> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl Framework {
    /// The names of `path`'s children (unsorted), none when `path` does not exist; through
    /// the retry loop.
    ///
    /// # Errors
    /// As [`children`](Self::children), except `NoNode`.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub(crate) async fn children_or_empty(&self, path: &str) -> Result<Vec<String>> {
        Ok(self.children(path).await.if_exists()?.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use assert_matches::assert_matches;

    #[test]
    fn no_node_is_none_other_errors_stay() {
        assert_matches!(Ok::<_, Error>(3).if_exists(), Ok(Some(3)));
        assert_matches!(
            Err::<i32, _>(Error::ZooKeeper(ZooKeeperError::NodeExists)).if_exists(),
            Err(Error::ZooKeeper(ZooKeeperError::NodeExists))
        );
        assert_matches!(Err::<i32, _>(Error::ZooKeeper(ZooKeeperError::NoNode)).if_exists(), Ok(None));
        assert_matches!(Err::<i32, _>(Error::Closed).if_exists(), Err(Error::Closed));
    }
}
