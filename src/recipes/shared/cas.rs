//! The one conditional write under `SharedValue` and `SharedCount`: a versioned `setData`,
//! followed by a `getData` of the node when refused, exactly once across lost replies; and
//! the versioned value it compares.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::framework::Framework;
use crate::ZooKeeperError;

/// A value together with the node version it was read or written at (Curator's
/// `VersionedValue`): hand it back to `compare_and_set` or `try_set` to write only if nobody
/// wrote in between.
///
/// # Curator compatibility
/// `version` is the node's data version (`Stat.version`), as in Curator's `VersionedValue`,
/// so versions read by either side are comparable.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::SharedCount;
///
/// let count = SharedCount::new(&fw, "/config/replicas", 3)?;
/// let known = count.get().await?;                    // value and version, read together
/// match count.compare_and_set(&known, known.value + 1).await? {
///     Ok(written) => println!("now {} at version {}", written.value, written.version),
///     Err(current) => println!("someone wrote {} first", current.value),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedValue<T> {
    /// The node's data version when the value was read.
    pub version: i32,
    /// The value.
    pub value: T,
}

/// What a conditional write did.
pub(super) enum Cas {
    /// Written; the node's new version.
    Written(i32),
    /// Not written. What the read after the refusal found (when `current` was asked for, or
    /// the refusal followed a lost reply): the node as it is now, or the read's own error
    /// (`NoNode` when the node is missing; a connection loss when the connection was lost
    /// after the write's refusal arrived).
    Refused(Option<Result<VersionedValue<Vec<u8>>>>),
}

/// One attempt's answer, inside the retry loop.
enum Answer {
    Done(Cas),
    /// A reply was lost and the node has moved on to bytes that could be ours.
    Unknown,
}

/// Writes `new` to `path` only if the node is still at `version`; with `current`, a refusal
/// comes with the node's value.
///
/// A refused write is followed by a read of the node: the value that won. (Sending that read
/// behind every write, before awaiting either, saves the round trip on a refusal, but measured
/// slower: it adds a request to every successful write, and contending sessions that retry
/// sooner only add refused writes to the server's queue.)
///
/// A reply lost to a connection loss is handled exactly: the write is sent again with the same
/// version check, which tells whether the first one was applied (then the node has moved on
/// from `version`); the read after it tells whether the write that moved it on was ours —
/// unless the node moved on to bytes that could be ours, which is [`Error::OutcomeUnknown`].
pub(super) async fn compare_and_set(
    fw: &Framework,
    path: &str,
    version: i32,
    new: &[u8],
    current: bool,
) -> Result<Cas> {
    // compressed once: the same bytes each attempt, to tell our write from another's
    let new = &*fw.encode(path, new)?;
    let sent = AtomicBool::new(false);
    let answer = fw
        .request("set_data", path, |conn| {
            let sent = &sent;
            async move {
                let resent = sent.swap(true, Ordering::SeqCst);
                let written = match conn.set_data(path, new, Some(version)).await {
                    Ok(stat) => return Ok(Answer::Done(Cas::Written(stat.version))),
                    Err(Error::ZooKeeper(e @ (ZooKeeperError::BadVersion | ZooKeeperError::NoNode))) => e,
                    Err(e) => return Err(e),
                };
                if !current && !resent {
                    return Ok(Answer::Done(Cas::Refused(None)));
                }
                let read = conn.get_data(path).await;
                let read = read.map(|(value, stat)| VersionedValue { version: stat.version, value });
                match written {
                    ZooKeeperError::NoNode => Ok(Answer::Done(Cas::Refused(Some(read)))),
                    ZooKeeperError::BadVersion if !resent => Ok(Answer::Done(Cas::Refused(Some(read)))),
                    // An earlier attempt's reply was lost: was it applied? Exactly one write
                    // from `version` succeeded; if its bytes differ from ours, it was not ours.
                    _ => match read {
                        Ok(current) if current.version.checked_sub(1) == Some(version) && current.value != new => {
                            Ok(Answer::Done(Cas::Refused(Some(Ok(current)))))
                        }
                        Ok(_) => Ok(Answer::Unknown),
                        Err(no_node @ Error::ZooKeeper(ZooKeeperError::NoNode)) => {
                            Ok(Answer::Done(Cas::Refused(Some(Err(no_node)))))
                        }
                        Err(e) => Err(e),
                    },
                }
            }
        })
        .await?;
    match answer {
        Answer::Done(Cas::Refused(Some(Ok(current)))) => {
            let value = fw.decode(path, current.value)?;
            Ok(Cas::Refused(Some(Ok(VersionedValue { value, ..current }))))
        }
        Answer::Done(cas) => Ok(cas),
        Answer::Unknown => Err(Error::OutcomeUnknown { path: path.to_string() }),
    }
}
