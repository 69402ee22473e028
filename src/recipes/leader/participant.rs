//! Who takes part in an election, in queue order.

use crate::error::Result;
use crate::framework::{paths, Framework};

/// One participant of a [`LeaderLatch`](crate::LeaderLatch) or
/// [`LeaderSelector`](crate::LeaderSelector).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::LeaderLatch;
///
/// let latch = LeaderLatch::new(&fw, "/elections/scheduler", "replica-1")?;
/// latch.start().await?;
/// for p in latch.participants().await? {
///     println!("{} {}{}", p.id, p.node, if p.is_leader { " (leader)" } else { "" });
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// The participant's id (its node's data as UTF-8, lossy).
    pub id: String,
    /// Its node's full path.
    pub node: String,
    /// Whether it leads (first in the queue).
    pub is_leader: bool,
}

/// The participants under `dir` in queue order (nodes sorted by the text after `name`);
/// foreign children (see `locks::driver::is_contender`) take no part.
pub(crate) async fn participants(fw: &Framework, dir: &str, name: &'static str) -> Result<Vec<Participant>> {
    let (nodes, _foreign) = crate::recipes::inspect::contenders(fw, dir, &[name]).await?;
    let participants = nodes.into_iter().enumerate().map(|(i, n)| Participant {
        id: n.data,
        node: paths::join(dir, &n.name),
        is_leader: i == 0,
    });
    Ok(participants.collect())
}
