//! `delete_recursive`: a node and everything under it, children first (Curator's
//! `deletingChildrenIfNeeded`), iterative so that a deep tree needs no deep stack.

use super::deadline::{self, with_deadline};
use super::paths::validate_path;
use super::session::Framework;
use crate::error::{Error, Result};
use crate::ZooKeeperError;

/// A node met on the way down: its path, and whether its children were pushed above it (then
/// it is deleted when it is on top again; a `NotEmpty` lists it again).
struct Pending {
    path: String,
    listed: bool,
}

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

    /// The walk of [`delete_recursive`](Self::delete_recursive): depth first with an explicit
    /// stack; a node is deleted once its children are.
    async fn delete_tree(&self, root: &str) -> Result<()> {
        let mut stack = vec![Pending { path: root.to_string(), listed: false }];
        while let Some(top) = stack.pop() {
            if !top.listed {
                let children = self.children_or_empty(&top.path).await?;
                if !children.is_empty() {
                    let below: Vec<Pending> =
                        children.iter().map(|c| Pending { path: format!("{}/{c}", top.path), listed: false }).collect();
                    stack.push(Pending { listed: true, ..top });
                    stack.extend(below);
                    continue;
                }
            }
            match self.delete_if_exists(&top.path).await {
                Ok(()) => {}
                // a child was created since the listing: list again
                Err(Error::ZooKeeper(ZooKeeperError::NotEmpty)) => {
                    tracing::debug!(path = %top.path, "delete_recursive: a child appeared; listing again");
                    stack.push(Pending { listed: false, ..top });
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
