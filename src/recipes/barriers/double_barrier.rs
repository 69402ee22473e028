//! `DistributedDoubleBarrier`: members enter together once enough have arrived, and leave
//! together once all are done.

use std::time::Duration;

use crate::framework::CreateMode;
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::wait::{wait, wait_any, Wake};
use crate::framework::{paths, Framework, IfExists, OneShotWatch};
use crate::recipes::layout::DOUBLE_BARRIER_READY;
use crate::recipes::locks::ForeignNodes;
use crate::ZooKeeperError;

/// A double barrier: Curator's `DistributedDoubleBarrier`. [`enter`](Self::enter) blocks until
/// `member_qty` members have entered; [`leave`](Self::leave) blocks until every member has
/// left. Use one instance per member (each instance is one member, with its own node name).
///
/// # Notable behaviors
/// * **No lost wake-up on enter.** Each round of the enter loop sets the watch on `ready` and
///   the watch on the members together (one pipelined round trip) and then checks the
///   condition; any member arriving or `ready` appearing after that check fires a watch. After
///   every wake-up the condition is checked again. (Curator's and kazoo's enter can miss a
///   wake-up between creating their member node and watching `ready`, and then hang; the
///   crate's tests run 16 members through 100 rounds.)
/// * **Leave waits for everybody.** Curator's leave algorithm, except that a member whose own
///   node is gone keeps waiting until no member node is left (Curator leaves as soon as a
///   single other member remains, and deletes `ready` under it). A member whose session dies
///   counts as left: its ephemeral node vanishes and the others go on.
/// * **No orphans.** A timed-out or failed enter or leave, and a dropped `enter`/`leave`
///   future, delete our member node (in the background when dropped, also when dropped while
///   the delete of a timed-out call is under way).
/// * If our session is lost while entering, our member node is created again in the new
///   session; while leaving, our node is simply gone (we count as left).
/// * **Foreign children are no members.** A child not named by a UUID (nor `ready`) counts
///   neither to open the barrier nor as a member still to leave; it is logged once at WARN.
///
/// # Curator compatibility
/// Members are EPHEMERAL nodes `<path>/<random uuid>` (36 characters, no protection prefix,
/// no sequence) holding the framework's default data; `<path>/ready` is PERSISTENT, holds the
/// default data and is created by whoever sees at least `member_qty` members; `<path>` is a
/// container. Members sort by name (byte order, as Java's `String` order for these ASCII
/// names). Curator members and ours enter and leave the same barrier together.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedDoubleBarrier;
/// let barrier = DistributedDoubleBarrier::new(&fw, "/jobs/batch-17", 4)?;
/// barrier.enter().await?; // all 4 workers start together
/// // ... work ...
/// barrier.leave().await?; // and finish together
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DistributedDoubleBarrier {
    fw: Framework,
    path: String,
    ready_path: String,
    our_name: String,
    our_path: String,
    member_qty: usize,
}

/// What one pipelined look at the barrier showed while entering.
enum Entering {
    /// `ready` exists.
    Ready,
    /// `ready` is missing; the members (without `ready`) and the watches on both.
    Waiting { members: Vec<String>, watchers: Vec<OneShotWatch> },
}

/// Deletes our member node when an enter or leave is abandoned (dropped, failed) while it may
/// exist. A node of a session that is gone has gone with it.
struct MemberGuard<'a> {
    barrier: &'a DistributedDoubleBarrier,
    owner: Option<i64>,
    armed: bool,
}

impl MemberGuard<'_> {
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for MemberGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let owner = self.owner.unwrap_or_else(|| self.barrier.fw.status().session_id);
            self.barrier.fw.delete_in_background(self.barrier.our_path.clone(), Some(owner));
        }
    }
}

impl DistributedDoubleBarrier {
    /// A member of the double barrier at `path` that opens when `member_qty` members are in.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path (or the root); [`Error::InvalidArgument`]
    /// when `member_qty` is 0 or more than `i32::MAX` (more members than a node can have
    /// children: the barrier could never open).
    pub fn new(fw: &Framework, path: &str, member_qty: usize) -> Result<Self> {
        paths::validate_recipe_path(path)?;
        if member_qty == 0 || member_qty > i32::MAX as usize {
            return Err(Error::invalid("member_qty", format!("a double barrier needs 1..={} members", i32::MAX)));
        }
        let our_name = uuid::Uuid::new_v4().to_string();
        Ok(Self {
            fw: fw.clone(),
            path: path.to_string(),
            ready_path: paths::join(path, DOUBLE_BARRIER_READY),
            our_path: paths::join(path, &our_name),
            our_name,
            member_qty,
        })
    }

    /// The barrier's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The full path of this member's node (it exists between enter and leave).
    pub fn member_path(&self) -> &str {
        &self.our_path
    }

    /// How many members open the barrier.
    pub fn member_qty(&self) -> usize {
        self.member_qty
    }

    /// Enters: creates our member node and waits until `member_qty` members are in (or the
    /// barrier is already open).
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`enter_timeout`](Self::enter_timeout) with the time left.
    ///
    /// # Errors
    /// The framework's errors ([`Error::Closed`], [`Error::RetriesExhausted`], `NoAuth`...);
    /// our member node is deleted then.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future deletes our member node (in the background).
    pub async fn enter(&self) -> Result<()> {
        if let Some(left) = deadline::scope_left() {
            return self.enter_timeout(left).await;
        }
        self.enter_until(None).await.map(drop)
    }

    /// Enters, waiting at most `timeout` for the barrier to open.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when the barrier did not open in time (our member node is deleted
    /// then); as [`enter`](Self::enter) otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe, as [`enter`](Self::enter).
    #[doc(alias = "enter")]
    pub async fn enter_timeout(&self, timeout: Duration) -> Result<()> {
        deadline::timed(self.fw.operation_timeout(), timeout, |at| async move {
            Ok(self.enter_until(Some(at)).await?.then_some(()))
        })
        .await
    }

    /// Leaves: deletes our member node and waits until every member has left, then deletes
    /// `ready`. A member that never entered (or whose session was lost) just waits for the
    /// others.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`leave_timeout`](Self::leave_timeout) with the time left.
    ///
    /// # Errors
    /// The framework's errors; our member node is deleted then.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future deletes our member node (in the background).
    pub async fn leave(&self) -> Result<()> {
        if let Some(left) = deadline::scope_left() {
            return self.leave_timeout(left).await;
        }
        self.leave_until(None).await.map(drop)
    }

    /// Leaves, waiting at most `timeout` for every other member to leave.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when others were still in at the deadline (our member node is
    /// deleted anyway); as [`leave`](Self::leave) otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe, as [`leave`](Self::leave).
    #[doc(alias = "leave")]
    pub async fn leave_timeout(&self, timeout: Duration) -> Result<()> {
        deadline::timed(self.fw.operation_timeout(), timeout, |at| async move {
            Ok(self.leave_until(Some(at)).await?.then_some(()))
        })
        .await
    }

    async fn enter_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let mut guard = MemberGuard { barrier: self, owner: None, armed: true };
        let mut owner = self.create_member().await?;
        guard.owner = Some(owner);
        loop {
            let session = self.fw.status().session_id;
            if session != owner {
                // our node went with the old session: be a member again
                owner = self.create_member().await?;
                guard.owner = Some(owner);
                continue;
            }
            let (members, watchers) = match self.look_entering().await? {
                Entering::Ready => break,
                Entering::Waiting { members, watchers } => (self.only_members(members), watchers),
            };
            if !members.contains(&self.our_name) {
                tracing::debug!(path = %self.our_path, "our member node vanished: creating it again");
                owner = self.create_member().await?;
                guard.owner = Some(owner);
                continue;
            }
            if members.len() >= self.member_qty {
                // the default data, compressed by a compressing framework as Curator 5.8 writes it
                let data = self.fw.encode(&self.ready_path, self.fw.default_data())?;
                match self.fw.create_if_absent(&self.ready_path, &data, CreateMode::Persistent).await {
                    Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => break,
                    Err(e) => return Err(e),
                }
            }
            if wait_any(&self.fw, watchers, deadline, session).await == Wake::Deadline {
                self.withdraw(guard).await;
                return Ok(false);
            }
        }
        guard.disarm();
        Ok(true)
    }

    /// Watches `ready` and the members in one round trip.
    async fn look_entering(&self) -> Result<Entering> {
        let (path, ready_path) = (self.path.as_str(), self.ready_path.as_str());
        self.fw
            .request("watch", path, |conn| async move {
                let ready = conn.watch_exists(ready_path);
                let children = conn.watch_children(path);
                let (ready, children) = tokio::join!(ready, children);
                let (ready, ready_watcher) = ready?;
                if ready.is_some() {
                    return Ok(Entering::Ready);
                }
                let (members, watchers) = match children.if_exists()? {
                    Some((children, watcher)) => (children, vec![ready_watcher, watcher]),
                    None => (Vec::new(), vec![ready_watcher]),
                };
                Ok(Entering::Waiting { members, watchers })
            })
            .await
    }

    /// Creates our member node in the current session; returns that session (the node's
    /// owner). Adopts the node when a retried create finds it already ours; deletes a leftover
    /// of an older session.
    async fn create_member(&self) -> Result<i64> {
        let data = &*self.fw.encode(&self.our_path, self.fw.default_data())?;
        for _ in 0..10 {
            match self.fw.create_if_absent(&self.our_path, data, CreateMode::Ephemeral).await {
                Ok(node) => return Ok(node.stat.ephemeral_owner),
                Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => {}
                Err(e) => return Err(e),
            }
            let path = self.our_path.as_str();
            let owner = self.fw.status().session_id;
            let adopted = self
                .fw
                .request("exists", path, |conn| async move {
                    match conn.exists(path).await? {
                        Some(stat) if stat.ephemeral_owner == conn.session_id() => Ok(Some(stat.ephemeral_owner)),
                        Some(_) => conn.delete(path, None).await.if_exists().map(|_| None),
                        None => Ok(None),
                    }
                })
                .await?;
            if let Some(found) = adopted {
                return Ok(found);
            }
            tracing::debug!(path, owner, "a member node of an older session was in the way");
        }
        // someone keeps creating a node under our (random) name
        Err(Error::ZooKeeper(ZooKeeperError::NodeExists))
    }

    /// Withdraws our member node past a timed wait's deadline: deleted in place within the
    /// cleanup grace (a missing one is fine), a failed delete goes on in the background. `guard`
    /// stays armed until the delete returned: a withdraw cut short — the grace ran out, the
    /// caller dropped the call — is finished in the background too, never dropped in flight.
    async fn withdraw(&self, mut guard: MemberGuard<'_>) {
        if let Err(e) = deadline::cleanup(self.fw.delete_guaranteed(&self.our_path)).await {
            tracing::debug!(path = %self.our_path, error = %e, "member delete continues in the background");
        }
        guard.disarm();
    }

    async fn leave_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let mut guard = MemberGuard { barrier: self, owner: None, armed: true };
        loop {
            let session = self.fw.status().session_id;
            let mut members = self.members().await?;
            members.sort();
            let ours = members.iter().position(|m| *m == self.our_name);
            let (Some(lowest), Some(highest)) = (members.first(), members.last()) else { break };
            if members.len() == 1 && ours == Some(0) {
                // the last one in: leave and let the others go (armed until the delete is
                // done or handed to its background retries: a call dropped meanwhile leaves
                // no member)
                let deleted = self.fw.delete_guaranteed(&self.our_path).await;
                guard.disarm();
                deleted?;
                break;
            }
            let watched = match ours {
                // we are the lowest: wait for the highest, keep our node (others watch it)
                Some(0) => paths::join(&self.path, highest),
                // otherwise: our node goes, and we wait for the lowest
                _ => paths::join(&self.path, lowest),
            };
            let delete_ours = ours.is_some_and(|i| i > 0);
            let Some(watcher) = self.watch_and_delete(&watched, delete_ours).await? else { continue };
            if wait(&self.fw, watcher, deadline, session).await == Wake::Deadline {
                self.withdraw(guard).await;
                return Ok(false);
            }
        }
        guard.disarm();
        self.fw.delete_if_exists(&self.ready_path).await?;
        Ok(true)
    }

    /// The member names (without `ready`), unsorted; none when the barrier node is gone.
    async fn members(&self) -> Result<Vec<String>> {
        let children = self.fw.children_or_empty(&self.path).await?;
        Ok(self.only_members(children))
    }

    /// The members among `children`: every member (ours, Curator's) is named by a random
    /// UUID in its canonical form, so any other child but `ready` is foreign — put there by
    /// hand or by another program, it counts neither to open the barrier nor as a member that
    /// has yet to leave (it would never leave). Each is warned about once.
    fn only_members(&self, children: Vec<String>) -> Vec<String> {
        let (members, foreign): (Vec<String>, Vec<String>) =
            children.into_iter().filter(|c| c != DOUBLE_BARRIER_READY).partition(|c| is_member_name(c));
        self.fw.session_extension::<ForeignNodes>().warn(&self.path, &foreign);
        members
    }

    /// Watches `watched` (exists) and, in the same round trip, deletes our node when asked.
    /// `None` when `watched` is already gone.
    async fn watch_and_delete(&self, watched: &str, delete_ours: bool) -> Result<Option<OneShotWatch>> {
        let ours = self.our_path.as_str();
        self.fw
            .request("watch", watched, |conn| async move {
                let watch = conn.watch_exists(watched);
                let delete = delete_ours.then(|| conn.delete(ours, None));
                let (stat, watcher) = watch.await?;
                if let Some(delete) = delete {
                    delete.await.if_exists()?;
                }
                Ok(stat.map(|_| watcher))
            })
            .await
    }
}

/// Whether `name` is a member's name: a UUID as Java's `UUID.toString` and ours write it
/// (36 characters, lower-case hex and hyphens).
pub(crate) fn is_member_name(name: &str) -> bool {
    uuid::Uuid::try_parse(name).is_ok_and(|u| u.hyphenated().to_string() == name)
}

#[cfg(test)]
mod tests {
    use super::is_member_name;

    #[test]
    fn members_are_named_by_canonical_uuids() {
        assert!(is_member_name(&uuid::Uuid::new_v4().to_string()));
        assert!(is_member_name("0f8fad5b-d9cb-469f-a165-70867728950e"));
        for foreign in ["foo", "ready2", "", "0F8FAD5B-D9CB-469F-A165-70867728950E", "0f8fad5bd9cb469fa16570867728950e"]
        {
            assert!(!is_member_name(foreign), "{foreign}");
        }
    }
}
