//! The one conditional write under `SharedValue` and `SharedCount`: a versioned `setData` with
//! a `getData` of the node pipelined right behind it, exactly once across lost replies.

use std::sync::atomic::{AtomicBool, Ordering};

use zookeeper_client::Error as ZkError;

use super::value::VersionedValue;
use crate::error::{Error, Result};
use crate::framework::Framework;

/// What a conditional write did.
pub(super) enum Cas {
    /// Written; the node's new version.
    Written(i32),
    /// Not written. What the read sent behind the write found: the node as it is now, or the
    /// read's own error (`NoNode` when the node is missing; a connection loss when the reply
    /// of the read was lost while the write's refusal arrived).
    Refused(std::result::Result<VersionedValue<Vec<u8>>, ZkError>),
}

/// One attempt's answer, inside the retry loop.
enum Answer {
    Done(Cas),
    /// A reply was lost and the node has moved on to bytes that could be ours.
    Unknown,
}

/// Writes `new` to `path` only if the node is still at `version`.
///
/// Every attempt sends the write and then, before awaiting either, a read of the node on the
/// same session. ZooKeeper answers a session's requests in order, so the read sees the node as
/// the write left it: when the write is refused, the value that won is known without another
/// round trip. When the write succeeds the read is ignored.
///
/// A reply lost to a connection loss is handled exactly: the write is sent again with the same
/// version check, which tells whether the first one was applied (then the node has moved on
/// from `version`); the read behind it tells whether the write that moved it on was ours —
/// unless the node moved on to bytes that could be ours, which is [`Error::OutcomeUnknown`].
pub(super) async fn compare_and_set(fw: &Framework, path: &str, version: i32, new: &[u8]) -> Result<Cas> {
    let sent = AtomicBool::new(false);
    let answer = fw
        .retry(|client| {
            let sent = &sent;
            async move {
                let resent = sent.swap(true, Ordering::SeqCst);
                // Both requests are queued when their futures are created, in this order. The
                // read's reply comes after the write's: when the write succeeded it is not
                // waited for (dropping its future just discards the reply).
                let write = client.set_data(path, new, Some(version));
                let read = client.get_data(path);
                let written = match write.await {
                    Ok(stat) => return Ok(Answer::Done(Cas::Written(stat.version))),
                    Err(e) => e,
                };
                let read = read.await.map(|(value, stat)| VersionedValue { version: stat.version, value });
                match written {
                    ZkError::NoNode => Ok(Answer::Done(Cas::Refused(read))),
                    ZkError::BadVersion if !resent => Ok(Answer::Done(Cas::Refused(read))),
                    // An earlier attempt's reply was lost: was it applied? Exactly one write
                    // from `version` succeeded; if its bytes differ from ours, it was not ours.
                    ZkError::BadVersion => match read {
                        Ok(current) if current.version == version + 1 && current.value != new => {
                            Ok(Answer::Done(Cas::Refused(Ok(current))))
                        }
                        Ok(_) => Ok(Answer::Unknown),
                        Err(ZkError::NoNode) => Ok(Answer::Done(Cas::Refused(Err(ZkError::NoNode)))),
                        Err(e) => Err(e),
                    },
                    e => Err(e),
                }
            }
        })
        .await?;
    match answer {
        Answer::Done(cas) => Ok(cas),
        Answer::Unknown => Err(Error::OutcomeUnknown { path: path.to_string() }),
    }
}
