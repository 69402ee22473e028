//! `delete_recursive`: a node and everything under it, children first (Curator's
//! `deletingChildrenIfNeeded`), iterative so that a deep tree needs no deep stack.

use futures_util::StreamExt;

use super::deadline::{self, with_deadline};
use super::paths::validate_path;
use super::session::Framework;
use crate::error::{Error, Result};
use crate::ZooKeeperError;

/// How many requests of one level are in flight at once.
const IN_FLIGHT: usize = 256;

impl Framework {
    /// Deletes `path` and every node under it, children first — ephemeral nodes of other
    /// sessions included. Each step goes through the retry loop; the whole call shares one
    /// deadline: the [`with_deadline`](crate::with_deadline) scope's this runs in, or else the
    /// [`operation_timeout`](crate::FrameworkBuilder::operation_timeout) from now.
    ///
    /// Concurrent changes are tolerated: a node that another client deleted meanwhile counts
    /// as deleted, and a child created meanwhile (the parent's delete fails with `NotEmpty`)
    /// is listed and deleted in turn, again until the parent goes or the deadline passes.
    ///
    /// A missing `path` is `Ok(())`: the caller wants the tree gone, and it is. (Curator's
    /// `deletingChildrenIfNeeded()` throws `NoNode` unless `quietly()`; here a retry after a
    /// lost reply, or two cleanups racing, would otherwise fail for having succeeded — use
    /// [`exists`](Self::exists) first to tell the cases apart.)
    ///
    /// `"/"` — the namespace root under a [`namespace`](crate::FrameworkBuilder::namespace),
    /// the whole tree without — is refused: never delete everything by accident.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (argument `path`) for `"/"`; [`Error::InvalidPath`];
    /// `NoAuth` as [`Error::ZooKeeper`] for a node this session may not list or delete;
    /// [`Error::Timeout`] when the deadline passes first (a writer that keeps adding children
    /// faster than they are deleted ends there); the retry loop's errors (see [`retry`](crate::retry)).
    ///
    /// # Cancel safety
    /// Not cancel safe: the nodes deleted before the cancel stay deleted (calling again
    /// finishes the job).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// use zk_recipes::with_deadline;
    ///
    /// // retire a tenant's subtree, taking at most 10 s
    /// with_deadline(Duration::from_secs(10), fw.delete_recursive("/tenants/acme")).await?;
    /// assert!(fw.exists("/tenants/acme").await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete_recursive(&self, path: &str) -> Result<()> {
        validate_path(path)?;
        if path == "/" {
            return Err(Error::invalid(
                "path",
                "refusing to delete \"/\" recursively (the whole tree, or the namespace root)",
            ));
        }
        let bound = deadline::of_operation(self.operation_timeout());
        with_deadline(bound, self.delete_tree(path)).await
    }

    /// The walk of [`delete_recursive`](Self::delete_recursive), level by level: every node
    /// of a level listed together (up to [`IN_FLIGHT`] requests at once, pipelined on the
    /// session), then the levels deleted deepest first, each level's nodes together. A node
    /// that gained a child since its listing (`NotEmpty`) is walked again from there (its
    /// ancestors fail the same way and are walked again after it), until it goes or the
    /// deadline passes. Iterative: a deep tree needs no deep stack.
    async fn delete_tree(&self, root: &str) -> Result<()> {
        let mut walks = vec![root.to_string()];
        while let Some(top) = walks.pop() {
            let mut levels = vec![vec![top]];
            while let Some(level) = levels.last() {
                let listed = each(level, |path| self.children_or_empty(path)).await;
                let mut below = Vec::new();
                for (parent, children) in level.iter().zip(listed) {
                    below.extend(children?.into_iter().map(|child| format!("{parent}/{child}")));
                }
                if below.is_empty() {
                    break;
                }
                levels.push(below);
            }
            for level in levels.iter().rev() {
                for (path, deleted) in level.iter().zip(each(level, |path| self.delete_if_exists(path)).await) {
                    match deleted {
                        Ok(()) => {}
                        // a child was created since the listing: walk it again
                        Err(Error::ZooKeeper(ZooKeeperError::NotEmpty)) => {
                            tracing::debug!(%path, "delete_recursive: a child appeared; listing again");
                            walks.push(path.clone());
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    }
}

/// `op` of every path, [`IN_FLIGHT`] at a time, the outcomes in the paths' order.
async fn each<'a, T, F, Fut>(paths: &'a [String], op: F) -> Vec<Result<T>>
where
    F: Fn(&'a str) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    futures_util::stream::iter(paths.iter().map(|path| op(path))).buffered(IN_FLIGHT).collect().await
}
