//! Queueing on contention: a turn on the value's own lock, `<path>/_lock_`.
//!
//! A turn is a mutex hold taken through the lock engine (the same nodes, order and watches as
//! [`InterProcessMutex`](crate::InterProcessMutex)), with two shortcuts that only a queue of
//! writers of one node can take:
//! * the value is read pipelined behind the listing that makes us the holder (no round trip
//!   between being handed the turn and knowing the value to write from);
//! * the turn is given back inside the write's own transaction (a `delete` of our lock node in
//!   the `multi`), so the next writer is woken by the commit of our write, not one round trip
//!   later.
//!
//! An addition queues with a name that carries it, and may be applied by the turn holder
//! ahead of it instead of taking the turn (see `joint.rs`): [`Turn::take_joint`].
//!
//! The queue is only a way to take turns: every write stays versioned, so writers that do not
//! queue (Curator, `queue_on_contention: false`) stay correct, and so does a write made after
//! our turn's node went with an expired session.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::framework::{paths, Framework, IfExists, LossReason};
use crate::observe::Kind;
use crate::recipes::layout;
use crate::recipes::locks::{
    contend, forever, Acquired, Decision, Driver, Exclusive, Forever, HeldNode, Listed, Listing, Once, Read, Reading,
    Request, Spec,
};

use super::joint::{self, Addition, Joiner};

/// Our turn to write: a lock hold whose node is deleted when the turn is dropped, unless a
/// write gave it back.
pub(crate) struct Turn {
    held: HeldNode,
    given_back: bool,
    /// The value as read behind the listing that gave us the turn (`None`: not read).
    pub prefetched: Option<Read>,
    /// Whether we had to wait for the turn (contention goes on).
    pub waited: bool,
    /// The additions queued behind ours that our write may carry (joining turns only).
    pub joiners: Vec<Joiner>,
}

/// How a joining addition's wait in the queue ended.
pub(crate) enum Taken {
    /// Our turn: we write, with the additions queued behind us.
    Held(Box<Turn>),
    /// Another writer applied our addition: the value before it, as its marker holds it.
    Applied(Vec<u8>),
    /// Our node is gone and our addition was not applied (nor can it be any more).
    Gone,
}

impl Turn {
    /// Waits for our turn on the queue of the value at `value_path`.
    ///
    /// # Cancel safety
    /// Cancel safe: an abandoned turn leaves no node behind.
    pub(crate) async fn take(fw: &Framework, value_path: &str) -> Result<Turn> {
        let dir = paths::join(value_path, layout::ATOMIC_QUEUE);
        let driver = Reading { driver: Turns { name: layout::LOCK_NAME }, read: value_path };
        let acquired = acquire(fw, &dir, &driver).await?;
        Ok(Turn::new(fw, acquired, Vec::new()))
    }

    fn new(fw: &Framework, mut acquired: Acquired, joiners: Vec<Joiner>) -> Turn {
        let (prefetched, waited) = (acquired.read(), acquired.waited);
        Turn { held: HeldNode::unwatched(fw, acquired), given_back: false, prefetched, waited, joiners }
    }

    /// Queues `addition` on the value at `value_path`, to be applied with the marker `marker`
    /// (a path): by us in our turn, or by a turn holder ahead of us. `name`: what follows the
    /// protection prefix, [`Addition::queue_name`].
    ///
    /// # Cancel safety
    /// Cancel safe as far as the queue goes: an abandoned wait leaves no node behind. But a
    /// turn holder may have applied the addition already (its marker then says so).
    pub(crate) async fn take_joint(
        fw: &Framework,
        value_path: &str,
        addition: Addition,
        name: &str,
        marker: &str,
    ) -> Result<Taken> {
        let dir = paths::join(value_path, layout::ATOMIC_QUEUE);
        let mut abandoned = Abandoned { fw, dir: &dir, key: joint::node_key(name), marker, armed: true };
        let taken = Self::joint_wait(fw, &dir, value_path, addition, name, marker).await;
        // an error leaves our node to the engine's background delete, and the outcome to the
        // marker: cleaned up as for an abandoned wait
        abandoned.armed = taken.is_err();
        taken
    }

    async fn joint_wait(
        fw: &Framework,
        dir: &str,
        value_path: &str,
        addition: Addition,
        name: &str,
        marker: &str,
    ) -> Result<Taken> {
        // another writer may have applied our addition with its own and deleted our node: its
        // vanishing ends the wait (it is never queued again)
        let driver = Once(Reading { driver: Turns { name }, read: value_path });
        let mut acquired = match acquire(fw, dir, &driver).await {
            Ok(acquired) => acquired,
            Err(Error::LockLost { path, reason }) => {
                let ours = (reason == LossReason::SessionLost).then_some(path.as_str());
                return settled(fw, ours, marker).await;
            }
            Err(e) => return Err(e),
        };
        let ours = paths::node_name(&acquired.path).to_string();
        let listing = match acquired.listed.as_ref().map(|listed| listed.listing.clone()) {
            Some(listing) => listing,
            // handed over without a listing: the transaction that deleted the nodes before ours
            // may have applied ours too; a listing tells, and names who queued behind us
            None => {
                let session_changed = fw.status().session_id != acquired.stat.ephemeral_owner;
                let (listing, read, applied) = list_read_and_check(fw, dir, value_path, marker).await?;
                if session_changed || !joint::listed(&listing, &ours) {
                    let mut turn = Turn::new(fw, acquired, Vec::new());
                    turn.node_gone();
                    return match (session_changed, applied) {
                        (false, Some(pre)) => Ok(Taken::Applied(pre)),
                        (false, None) => Ok(Taken::Gone),
                        (true, _) => settled(fw, Some(turn.held.path()), marker).await,
                    };
                }
                acquired.listed = Some(Listed { listing: listing.clone(), read: Some(read) });
                listing
            }
        };
        let joiners = joint::joiners(&listing, &ours, addition.width);
        Ok(Taken::Held(Box::new(Turn::new(fw, acquired, joiners))))
    }

    /// Our lock node, while the turn still has one to give back.
    pub(crate) fn node(&self) -> Option<&str> {
        (!self.given_back).then(|| self.held.path())
    }

    /// The node is gone: deleted by our write's transaction, or with our session.
    pub(crate) fn node_gone(&mut self) {
        self.given_back = true;
    }
}

/// Waits for a turn in the queue `dir` as `driver` says.
async fn acquire(fw: &Framework, dir: &str, driver: &dyn Driver) -> Result<Acquired> {
    let request = Request { dir, data: &[], driver };
    forever(async { contend(fw, &request, Forever).await?.waited() }).await
}

/// The turns' driver: the mutex's (so that the queue is a lock Curator's mutex would share),
/// our node named `name` (`lock-`, or a joining addition's name that carries it). Every wait
/// reads the value behind its listings ([`Reading`]: the holder has it as it is handed the
/// turn).
#[derive(Debug)]
struct Turns<'a> {
    name: &'a str,
}

/// The mutex's decisions, for the turns.
const TURN: Exclusive = Exclusive::lock(Kind::Atomic);

impl Driver for Turns<'_> {
    fn spec(&self) -> Spec<'_> {
        Spec { name: self.name, ..TURN.spec() }
    }

    fn decide(&self, queue: &[String], ours: &str) -> Decision {
        TURN.decide(queue, ours)
    }
}

/// A joining addition's wait that ended without an answer (dropped, or failed): once its
/// queue node is deleted no transaction can apply it any more, but one may have done so
/// before, leaving a marker nobody would read — so a background task deletes the node (found
/// by its name's `key`), then the marker.
struct Abandoned<'a> {
    fw: &'a Framework,
    dir: &'a str,
    key: String,
    marker: &'a str,
    armed: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (dir, key, marker) = (self.dir.to_string(), std::mem::take(&mut self.key), self.marker.to_string());
        self.fw.spawn_counted_delete(|fw| async move {
            let cleaned = fw
                .request("delete", &dir, |conn| {
                    let (dir, key, marker) = (&dir, &key, &marker);
                    async move {
                        let children = conn.children(dir).await.if_exists()?.unwrap_or_default();
                        for child in children.iter().filter(|c| c.contains(key.as_str())) {
                            conn.delete(&paths::join(dir, child), None).await.if_exists()?;
                        }
                        conn.delete(marker, None).await.if_exists()?;
                        Ok(())
                    }
                })
                .await;
            if let Err(e) = cleaned {
                tracing::warn!(%marker, error = %e, "atomic value: cleaning up an abandoned addition");
            }
        });
    }
}

/// Whether our addition was applied, once our queue node `ours` is gone: our marker's data,
/// the value before it. A node of an expired session may linger until the server has closed
/// that session, so then (`ours` given) it is deleted first: once that delete is answered, no
/// transaction can apply the addition any more.
async fn settled(fw: &Framework, ours: Option<&str>, marker: &str) -> Result<Taken> {
    let read = fw
        .request("settle", marker, |conn| async move {
            // requests go out in the order they are made: the read after the delete
            let delete = ours.map(|path| conn.delete(path, None));
            let read = conn.get_data(marker);
            if let Some(delete) = delete {
                delete.await.if_exists()?;
            }
            read.await.if_exists()
        })
        .await?;
    Ok(read.map_or(Taken::Gone, |(data, _)| Taken::Applied(data)))
}

/// Lists the queue `dir`, reads the value behind it and then our `marker`, in one round trip.
async fn list_read_and_check(
    fw: &Framework,
    dir: &str,
    value_path: &str,
    marker: &str,
) -> Result<(Arc<Listing>, Read, Option<Vec<u8>>)> {
    fw.request("list", dir, |conn| async move {
        let (listed, value, applied) =
            tokio::join!(conn.children(dir), conn.get_data(value_path), conn.get_data(marker));
        let listing = Arc::new(Listing::new(listed.if_exists()?.unwrap_or_default()));
        let value = value.if_exists()?.map(|(data, stat)| (data, stat.version));
        Ok((listing, value, applied.if_exists()?.map(|(data, _)| data)))
    })
    .await
}

impl Drop for Turn {
    fn drop(&mut self) {
        if !self.given_back {
            self.held.release_in_background();
        }
    }
}
