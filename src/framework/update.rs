//! `update_many`: an optimistic update of several nodes in the spirit of etcd's STM — read
//! them all, compute the new values, commit every change with version checks in one
//! [`Transaction`](super::Transaction); on a conflict read again and compute again.

use std::time::Duration;

use crate::framework::Stat;
use crate::ZooKeeperError;
use futures_util::future::try_join_all;

use super::backoff::Backoff;
use super::missing::IfExists;
use super::paths::validate_path;
use super::session::Framework;
use crate::error::{Error, Result};

/// The first pause after a conflict; pauses double (with jitter) up to [`CONFLICT_PAUSE_CAP`],
/// so that contenders that collided do not collide again in step.
const CONFLICT_PAUSE: Duration = Duration::from_millis(1);
const CONFLICT_PAUSE_CAP: Duration = Duration::from_millis(50);

impl Framework {
    /// Updates the nodes at `paths` together: reads them (`None` for a node that does not
    /// exist), calls `update` with their values in the order of `paths`, and commits what it
    /// returns in one transaction — `Some(data)` writes (creates a missing node, persistent,
    /// its parent must exist), `None` deletes (or leaves a missing node missing) — checking that
    /// every node read is still at the version read. When another writer got in between, it
    /// reads again and calls `update` again, until a commit succeeds: no update is lost, and
    /// `update` may run several times (keep it free of side effects). Applied exactly once
    /// across lost replies (see [`Transaction::commit`](super::Transaction::commit)).
    ///
    /// Returns the values committed. A node that was missing and is left missing is not
    /// checked (ZooKeeper cannot check that a node is absent).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no paths, a path given twice, or `update` returning a
    /// different number of values; [`Error::InvalidPath`]; [`Error::Transaction`] for a
    /// refusal that is no conflict (`NoAuth`, a missing parent...); the errors of the retry
    /// loop, including [`Error::OutcomeUnknown`].
    ///
    /// # Cancel safety
    /// Not cancel safe: a commit already sent is applied or not whatever happens to the future.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// // move 10 from a to b, never losing a concurrent transfer
    /// let amount = |v: &Option<Vec<u8>>| -> i64 {
    ///     v.as_deref().and_then(|b| std::str::from_utf8(b).ok()?.parse().ok()).unwrap_or(0)
    /// };
    /// fw.update_many(&["/accounts/a", "/accounts/b"], |values| {
    ///     let (a, b) = (amount(&values[0]), amount(&values[1]));
    ///     vec![Some((a - 10).to_string().into_bytes()), Some((b + 10).to_string().into_bytes())]
    /// })
    /// .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn update_many<F>(&self, paths: &[&str], mut update: F) -> Result<Vec<Option<Vec<u8>>>>
    where
        F: FnMut(&[Option<Vec<u8>>]) -> Vec<Option<Vec<u8>>>,
    {
        if paths.is_empty() {
            return Err(Error::invalid("paths", "update_many: no paths"));
        }
        for (i, path) in paths.iter().enumerate() {
            validate_path(path)?;
            if paths[..i].contains(path) {
                return Err(Error::invalid("paths", format!("update_many: {path:?} is given twice")));
            }
        }
        let mut pause = Backoff::new(CONFLICT_PAUSE, CONFLICT_PAUSE_CAP).with_jitter();
        loop {
            let read = self.read_many(paths).await?;
            let values: Vec<Option<Vec<u8>>> = read.iter().map(|r| r.as_ref().map(|(data, _)| data.clone())).collect();
            let new = update(&values);
            if new.len() != paths.len() {
                return Err(Error::invalid(
                    "update",
                    format!("update_many: {} values returned for {} paths", new.len(), paths.len()),
                ));
            }
            let mut txn = self.transaction();
            for ((path, old), new) in paths.iter().zip(&read).zip(&new) {
                txn = match (old, new) {
                    (Some((data, stat)), Some(value)) if data == value => txn.check(path, stat.version),
                    (Some((_, stat)), Some(value)) => txn.set_data(path, value, Some(stat.version)),
                    (Some((_, stat)), None) => txn.delete(path, Some(stat.version)),
                    (None, Some(value)) => txn.create(path, value, crate::CreateMode::Persistent),
                    (None, None) => txn,
                };
            }
            if txn.is_empty() {
                return Ok(new);
            }
            match txn.commit().await {
                Ok(_) => return Ok(new),
                Err(Error::Transaction {
                    source: ZooKeeperError::BadVersion | ZooKeeperError::NoNode | ZooKeeperError::NodeExists,
                    path,
                    ..
                }) if paths.contains(&path.as_str()) => pause.sleep().await,
                Err(e) => return Err(e),
            }
        }
    }

    /// The data and stat of each of `paths` (`None` where missing), read with pipelined
    /// requests.
    async fn read_many(&self, paths: &[&str]) -> Result<Vec<Option<(Vec<u8>, Stat)>>> {
        self.request("multi_read", "", |conn| async move {
            // every read is sent here, before any answer is awaited
            let reads: Vec<_> = paths.iter().map(|path| conn.get_data(path)).collect();
            try_join_all(reads.into_iter().map(|read| async move { read.await.if_exists() })).await
        })
        .await?
        .into_iter()
        .zip(paths)
        .map(|(read, path)| read.map(|(data, stat)| Ok((self.decode(path, data)?, stat))).transpose())
        .collect()
    }
}
