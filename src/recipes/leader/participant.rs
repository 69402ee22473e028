//! Who takes part in an election, in queue order.

use zookeeper_client::Error as ZkError;

use crate::error::{Error, Result};
use crate::framework::{paths, Framework};
use crate::recipes::locks::driver::sort_children;

/// One participant of a [`LeaderLatch`](crate::LeaderLatch) or
/// [`LeaderSelector`](crate::LeaderSelector).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// The participant's id (its node's data as UTF-8, lossy).
    pub id: String,
    /// Its node's full path.
    pub node: String,
    /// Whether it leads (first in the queue).
    pub is_leader: bool,
}

/// The participants under `dir` in queue order (nodes sorted by the text after `name`).
pub(crate) async fn participants(fw: &Framework, dir: &str, name: &'static str) -> Result<Vec<Participant>> {
    let mut children = match fw.children(dir).await {
        Err(Error::ZooKeeper(ZkError::NoNode)) => return Ok(Vec::new()),
        other => other?,
    };
    sort_children(&mut children, &[name]);
    let mut out = Vec::with_capacity(children.len());
    for child in children {
        let node = paths::join(dir, &child);
        match fw.get_data(&node).await {
            Ok((data, _)) => {
                let is_leader = out.is_empty();
                out.push(Participant { id: String::from_utf8_lossy(&data).into_owned(), node, is_leader });
            }
            Err(Error::ZooKeeper(ZkError::NoNode)) => continue, // left meanwhile
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}
