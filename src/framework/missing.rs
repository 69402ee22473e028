//! A missing node as an answer, not an error: `NoNode` turned into `None` (or an empty
//! listing), for the many places where "gone" or "never there" is a normal outcome.

use zookeeper_client::Error as ZkError;

use super::Framework;
use crate::error::{Error, Result};
use crate::ZooKeeperError;

/// Errors that can say "no such node".
pub(crate) trait NoNode {
    fn is_no_node(&self) -> bool;
}

impl NoNode for ZkError {
    fn is_no_node(&self) -> bool {
        matches!(self, ZkError::NoNode)
    }
}

impl NoNode for Error {
    fn is_no_node(&self) -> bool {
        matches!(self, Error::ZooKeeper(ZooKeeperError::NoNode))
    }
}

/// `NoNode` as `Ok(None)`, on the client's results and on the framework's.
pub(crate) trait IfExists<T, E> {
    /// `Ok(Some(value))`, `Ok(None)` for `NoNode`, other errors unchanged.
    fn if_exists(self) -> std::result::Result<Option<T>, E>;
}

impl<T, E: NoNode> IfExists<T, E> for std::result::Result<T, E> {
    fn if_exists(self) -> std::result::Result<Option<T>, E> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(e) if e.is_no_node() => Ok(None),
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
        assert_eq!(Ok::<_, ZkError>(3).if_exists(), Ok(Some(3)));
        assert_eq!(Err::<i32, _>(ZkError::NoNode).if_exists(), Ok(None));
        assert_eq!(Err::<i32, _>(ZkError::NodeExists).if_exists(), Err(ZkError::NodeExists));
        assert_matches!(Err::<i32, _>(Error::ZooKeeper(ZooKeeperError::NoNode)).if_exists(), Ok(None));
        assert_matches!(Err::<i32, _>(Error::Closed).if_exists(), Err(Error::Closed));
    }
}
