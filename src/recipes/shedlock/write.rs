//! The one conditional write under the scheduled-job lock: a create or a versioned `setData`,
//! told apart from a competitor's write across lost replies.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::framework::Stat;
use zookeeper_client::{CreateMode, Error as ZkError};

use crate::error::Result;
use crate::framework::Framework;

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
    fw.retry_raw(|client| {
        let sent = &sent;
        async move {
            let resent = sent.swap(true, Ordering::SeqCst);
            let refused = match version {
                None => match fw.create_with_parents(&client, path, data, CreateMode::Persistent).await {
                    Ok(created) => return Ok(Written::Applied(created.stat)),
                    Err(ZkError::NodeExists) => ZkError::NodeExists,
                    Err(e) => return Err(e),
                },
                Some(v) => match client.set_data(path, data, Some(v)).await {
                    Ok(stat) => return Ok(Written::Applied(Stat::from_client(&stat))),
                    Err(ZkError::NoNode) => return Ok(Written::Missing),
                    Err(ZkError::BadVersion) => ZkError::BadVersion,
                    Err(e) => return Err(e),
                },
            };
            if !resent {
                return Ok(Written::Refused);
            }
            // An earlier attempt may have been applied: exactly one write from `version` (or
            // one create) succeeded; if it left other bytes than ours, it was not ours.
            let expected_version = version.map_or(0, |v| v + 1);
            match client.get_data(path).await {
                Ok((now, stat)) if now == data && stat.version == expected_version => {
                    Ok(Written::Ambiguous(Stat::from_client(&stat)))
                }
                Ok(_) => Ok(Written::Refused),
                Err(ZkError::NoNode) if refused == ZkError::BadVersion => Ok(Written::Missing),
                Err(ZkError::NoNode) => Ok(Written::Refused),
                Err(e) => Err(e),
            }
        }
    })
    .await
}
