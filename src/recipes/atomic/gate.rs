//! The queue turn's priority over optimistic writers: the gate node `<path>/_gate_`.
//!
//! Queueing alone is not fair where some writers are closer to the leader than others: on a
//! 3-node ensemble, a session on the leader's server hears of its write sooner than a session
//! on a follower, writes again at once from the version it knows, and the follower's session
//! — holding the queue's turn, reading and writing a round trip behind — lost nearly every race
//! (measured: the slowest of 16 sessions at 0.03 (0.00–0.07) of the mean increments in a 3-s
//! window, while the rest made the throughput).
//!
//! So every optimistic write of a queueing value also checks the gate's version (a `check` in
//! the same `multi`, which modifies nothing), and a turn holder whose writes were refused
//! [`RAISE_AFTER`] times raises the gate (an unconditional `setData` of it): every optimistic
//! write sent from then on is refused, its writer queues behind the turn and learns the new
//! version when it next writes optimistically, and the turn's next write has no optimistic
//! competitor from this library. Writers that do not check the gate (Curator processes,
//! values with `queue_on_contention: false`) stay correct: only fairness rests on the gate,
//! never the count.

use crate::error::{Error, Result};
use crate::framework::{paths, CreateMode, Framework, IfExists};
use crate::recipes::layout;
use crate::ZooKeeperError;

/// Refused writes in one queue turn after which the turn holder raises the gate.
///
/// A raise sends every optimistic writer through the queue once, at the queue's pace, so it
/// costs throughput: on the 3-node ensemble at 16 sessions, raising after 2 refusals gave the
/// slowest session 0.52–0.58 of the mean at 605–685 increments/s, after 8 0.24–0.35 at
/// 800–938/s (Curator's `DistributedAtomicLong` 0.29–0.50 at 619–657/s, with give-ups), never
/// 0.08–0.11 at about 1,030/s. On one server a turn holder is seldom refused 8 times, so the
/// standalone rate stays that of no gate.
pub(crate) const RAISE_AFTER: u32 = 8;

/// The gate of the value at `value_path`.
pub(crate) fn path(value_path: &str) -> String {
    paths::join(value_path, layout::ATOMIC_GATE)
}

/// The gate's version, creating the gate (persistent, empty) when it is missing, and first the
/// value's own node when that is missing too (persistent and empty, as a write from nothing
/// makes it: empty reads as the initial value). The gate is never created with its parents:
/// that would make the value's node a container.
///
/// # Cancel safety
/// Cancel safe: at worst the nodes are created and not read.
pub(crate) async fn version(fw: &Framework, value_path: &str) -> Result<i32> {
    let gate = &path(value_path);
    if let Some(stat) = fw.exists(gate).await? {
        return Ok(stat.version);
    }
    let create_gate =
        || fw.request("create", gate, |conn| async move { conn.create(gate, &[], CreateMode::Persistent, None).await });
    let mut created = create_gate().await;
    if let Err(Error::ZooKeeper(ZooKeeperError::NoNode)) = created {
        let empty = fw.encode(value_path, &[])?;
        match fw.create_if_absent(value_path, &empty, CreateMode::Persistent).await {
            Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => created = create_gate().await,
            Err(e) => return Err(e),
        }
    }
    match created {
        Ok(_) => Ok(0),
        Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => match fw.exists(gate).await? {
            Some(stat) => Ok(stat.version),
            None => Ok(0), // deleted meanwhile: a check of it fails and is read again
        },
        Err(e) => Err(e),
    }
}

/// Raises the gate and reads `value_path` behind it, in one round trip: the read sees every
/// optimistic write that got through before the gate closed.
///
/// # Cancel safety
/// Cancel safe: a gate raised for nothing only sends optimistic writers to the queue once.
pub(crate) async fn raise_and_read(fw: &Framework, gate: &str, value_path: &str) -> Result<(Vec<u8>, Option<i32>)> {
    let (stored, version) = fw
        .request("raise", gate, |conn| async move {
            // requests go out in the order they are made: the read after the raise
            let (raised, read) = tokio::join!(conn.set_data(gate, &[], None), conn.get_data(value_path));
            // a missing gate: nobody checks it, there is nothing to raise
            raised.if_exists()?;
            Ok(read.if_exists()?.map_or((Vec::new(), None), |(data, stat)| (data, Some(stat.version))))
        })
        .await?;
    // the value's node as Curator 5.8 stores it (see `DistributedAtomicValue::value_of`)
    Ok((fw.decode_or_empty(value_path, stored)?, version))
}
