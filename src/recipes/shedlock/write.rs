//! The one conditional write under the scheduled-job lock: a create or a versioned `setData`,
//! told apart from a competitor's write across lost replies.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::framework::{CreateMode, Framework, Stat};
use crate::ZooKeeperError;

/// What a conditional write did.
#[derive(Debug)]
pub(super) enum Written {
    /// Applied; the node's stat after it.
    Applied(Stat),
    /// Refused: another write got there first (a version clash, or the node exists).
    Refused,
    /// The node is gone (a versioned write only).
    Missing,
    /// An earlier attempt's reply was lost and the node now holds our bytes at the version our
    /// write would have given it: ours, unless a competitor wrote the very same bytes. The
    /// node's stat as read.
    Ambiguous(Stat),
}

/// Writes `data` to `path`: creates it (persistent, parents as containers) when `version` is
/// `None`, else sets it only at `version`. Through the framework's retry loop; a retry after a
/// lost reply reads the node back to tell our write from a competitor's.
pub(super) async fn write(fw: &Framework, path: &str, version: Option<i32>, data: &[u8]) -> Result<Written> {
    let sent = AtomicBool::new(false);
    fw.request("write", path, |conn| {
        let sent = &sent;
        async move {
            let resent = sent.swap(true, Ordering::SeqCst);
            let refused = match version {
                None => match conn.create_with_parents(path, data, CreateMode::Persistent, None).await {
                    Ok(created) => return Ok(Written::Applied(created.stat)),
                    Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => ZooKeeperError::NodeExists,
                    Err(e) => return Err(e),
                },
                Some(v) => match conn.set_data(path, data, Some(v)).await {
                    Ok(stat) => return Ok(Written::Applied(stat)),
                    Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => return Ok(Written::Missing),
                    Err(Error::ZooKeeper(ZooKeeperError::BadVersion)) => ZooKeeperError::BadVersion,
                    Err(e) => return Err(e),
                },
            };
            if !resent {
                return Ok(Written::Refused);
            }
            // An earlier attempt may have been applied: exactly one write from `version` (or
            // one create) succeeded; if it left other bytes than ours, it was not ours.
            let expected_version = version.map_or(Some(0), |v| v.checked_add(1));
            match conn.get_data(path).await {
                Ok((now, stat)) if now == data && Some(stat.version) == expected_version => {
                    Ok(Written::Ambiguous(stat))
                }
                Ok(_) => Ok(Written::Refused),
                Err(Error::ZooKeeper(ZooKeeperError::NoNode)) if refused == ZooKeeperError::BadVersion => {
                    Ok(Written::Missing)
                }
                Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(Written::Refused),
                Err(e) => Err(e),
            }
        }
    })
    .await
}
