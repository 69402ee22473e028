//! `InterProcessMutex`: a fair distributed mutex, re-entrant through its guard.

use std::sync::Arc;
use std::time::Duration;

use super::driver::{Driver, Exclusive, MutexDriver, Reading, Request};
use super::engine::{self, contend, Forever, Until, Wait, Waited};
use super::handle::Shared;
use super::held::{HeldNode, LocalHolds, LockGuard, REVOKE_MESSAGE};
use super::order::{queue, Read};
use crate::error::{Error, Result};
use crate::framework::paths::validate_path;
use crate::framework::{validate_ttl, Framework};
use crate::observe::Kind;
use crate::recipes::VersionedValue;
use crate::ZooKeeperError;

/// A fair distributed mutex, re-entrant through its guard: Curator's `InterProcessMutex`.
///
/// Contenders queue as ephemeral-sequential nodes `<path>/_c_<uuid>-lock-<seq>`; the lowest
/// holds; a waiter watches its predecessor (near the head: every node before it, so that a
/// release hands over without a listing). A Curator process using
/// `InterProcessMutex` on the same path excludes and is excluded by this one.
///
/// # Re-entrancy
/// Every [`acquire`](Self::acquire) is a hold of its own — its own node, its own place in the
/// queue — whoever calls it: two branches of one `tokio::join!`, two tasks, two handles. A
/// second `acquire` while holding waits for the first hold, as a `tokio::sync::Mutex` would.
/// Re-entering is explicit, through the guard one holds: [`LockGuard::reenter`] returns
/// another guard on the same node at once; the node is deleted when the last of them goes.
/// Possession of the guard is the proof of ownership: no task or thread identity decides who
/// holds. Guards may be moved to and released from any task.
///
/// Curator re-enters per thread (`acquire()` on a thread that holds just counts up); code
/// ported from Curator passes the guard (or a [`reenter`](LockGuard::reenter)ed one) down to
/// the code that would have re-acquired.
///
/// # Many waiters in one process
/// A framework's acquires of one path go into ZooKeeper's queue at most eight at a time; the
/// others wait in a local queue, in arrival order, as a small future each (no node, no watch,
/// nothing on the server): 10,000 tasks waiting on one lock cost about 1 KB each. Within a
/// process, acquires hold in the order they arrived. Against other processes, a contender
/// arriving elsewhere later queues behind this process's eight only, not behind all of its
/// waiters. [`participants`](Self::participants) lists nodes, so it shows those eight.
///
/// # Foreign children
/// A child of the lock's path whose name does not end with `lock-` and a ZooKeeper sequence
/// (`lock-`, `_c_x-lock-`, `foo`: put there by hand or by another program) holds nothing: it
/// is left out of the queue and of [`participants`](Self::participants), and logged once at
/// WARN. (Curator counts such a node: one that sorts first stops its contenders.) The same
/// rule holds for every lock kind, the semaphore's leases and the leader recipes; see "Hostile
/// trees" in docs/RELIABILITY.md.
///
/// # Curator compatibility
/// Node layout, sort order and data (the framework's default data, empty when revocable) as
/// Curator 5.x; revocation uses Curator's `__REVOKE__` protocol.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::InterProcessMutex;
/// let mutex = InterProcessMutex::new(&fw, "/locks/orders")?;
/// let guard = mutex.acquire().await?;
/// let token = guard.fencing_token(); // pass to the store you write to
/// tokio::select! {
///     _ = guard.lost() => { /* stop: someone else may hold it now */ }
///     _ = async { /* critical section using `token` */ } => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessMutex {
    shared: Arc<Shared<State>>,
}

/// What only a mutex keeps besides its framework and path.
#[derive(Debug, Default)]
struct State {
    data: Option<Vec<u8>>,
    /// Contender nodes are TTL nodes with this time to live (a server TTL).
    server_ttl: Option<Duration>,
    /// Holds through this handle and its clones in this process.
    local: Arc<LocalHolds>,
    /// The `kind` of its metrics and spans (a recipe built on the mutex names itself).
    kind: Kind,
}

impl InterProcessMutex {
    /// A mutex at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path.
    pub fn new(fw: &Framework, path: &str) -> Result<Self> {
        Ok(Self { shared: Shared::new(fw, path, State::default())? })
    }

    /// Names the recipe built on this mutex in its metrics and spans (`kind`).
    pub(crate) fn with_kind(mut self, kind: Kind) -> Self {
        self.shared_mut().kind = kind;
        self
    }

    /// Uses `data` as our node's data instead of the framework's default data (LeaderSelector
    /// stores the participant id here).
    pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.shared_mut().data = Some(data.into());
        self
    }

    /// Opts in to revocation as Curator's revocable mutex does: writes empty node data, and
    /// [`HeldNode::revoked`] resolves when
    /// [`InterProcessMutex::request_revoke`] is called on the holder's node.
    pub fn revocable(mut self) -> Self {
        self.shared_mut().data = Some(Vec::new());
        self
    }

    /// Opts in to a server TTL: our contender nodes are created as
    /// `PERSISTENT_SEQUENTIAL_WITH_TTL` nodes (same names, so Curator's mutex queues behind
    /// them as behind its own) instead of ephemeral ones, and the server deletes a node that
    /// has not been touched for `ttl`. A waiter touches its node while it waits; a holder
    /// touches it by renewing a [`TimedHold`](crate::TimedHold) (its length at most `ttl`) or
    /// by [`HeldNode::touch`]. So the lock frees even when the holder's process is gone but
    /// its session lives on elsewhere (a wedged or forked holder, a session shared with other
    /// work).
    ///
    /// The trade-off: such a node does not go with its session. After a crash the lock frees
    /// after the TTL (plus the server's container check interval), not after the session
    /// timeout; a holder that does not touch its node loses the lock after `ttl` even while
    /// alive and connected.
    ///
    /// Needs `zookeeper.extendedTypesEnabled=true` on the server: acquiring answers
    /// [`Error::ServerUnsupported`] where TTL nodes are off.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a TTL under 1 ms (zero included) or beyond ZooKeeper's largest, 2^40 − 1 ms (about 34
    /// years; `Duration::MAX` included).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// use zk_recipes::{InterProcessMutex, TimedHold};
    /// let lease = Duration::from_secs(20);
    /// let mutex = InterProcessMutex::new(&fw, "/locks/job")?.with_server_ttl(lease)?;
    /// let held = TimedHold::acquire(&mutex, lease).await?;
    /// held.renew(lease)?; // also touches the node: the server's 20 s start again
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_server_ttl(mut self, ttl: Duration) -> Result<Self> {
        validate_ttl(ttl)?;
        self.shared_mut().server_ttl = Some(ttl);
        Ok(self)
    }

    fn shared_mut(&mut self) -> &mut State {
        if Arc::get_mut(&mut self.shared).is_none() {
            let s = &self.shared;
            let state = State {
                data: s.state.data.clone(),
                server_ttl: s.state.server_ttl,
                local: Default::default(),
                kind: s.state.kind,
            };
            self.shared = Arc::new(Shared { fw: s.fw.clone(), path: s.path.clone(), state });
        }
        &mut Arc::get_mut(&mut self.shared).expect("unique after re-creation").state
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    pub(crate) fn framework(&self) -> &Framework {
        &self.shared.fw
    }

    /// Waits until the mutex is held: a new hold with a node of its own, also when this
    /// process holds the mutex already (re-enter through the guard instead:
    /// [`LockGuard::reenter`]).
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`acquire_timeout`](Self::acquire_timeout) with the time left.
    ///
    /// # Errors
    /// The framework's errors ([`Error::Closed`], [`Error::RetriesExhausted`], `NoAuth`...);
    /// [`Error::LockLost`] when our node vanished while we waited and could not be made again.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let mutex = zk_recipes::InterProcessMutex::new(&fw, "/locks/a")?;
    /// let guard = mutex.acquire().await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future at any point leaves no node behind (an abandoned node
    /// is deleted in the background, found by its protected prefix if its create never
    /// answered).
    pub async fn acquire(&self) -> Result<LockGuard> {
        engine::forever(self.acquire_until(Forever)).await
    }

    /// Acquires only if that needs no waiting: `Ok(None)` when someone else holds it (our
    /// node is deleted).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(mutex: zk_recipes::InterProcessMutex) -> zk_recipes::Result<()> {
    /// match mutex.try_acquire().await? {
    ///     Some(guard) => guard.release().await?,
    ///     None => println!("busy"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        engine::now(self.acquire_until(Until::now())).await
    }

    /// Waits at most `timeout`.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first (our node is deleted; test it with
    /// [`Error::is_timeout`]); otherwise as [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(mutex: zk_recipes::InterProcessMutex) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// match mutex.acquire_timeout(Duration::from_secs(2)).await {
    ///     Ok(guard) => guard.release().await?,
    ///     Err(e) if e.is_timeout() => println!("still busy after 2 s"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        engine::within(timeout, |wait| self.acquire_until(wait)).await
    }

    /// Waits until the mutex is held, as [`acquire`](Self::acquire), and reads the node at
    /// `path` as the lock was taken: the state the lock guards, without another round trip in
    /// the usual case. The read goes out pipelined behind the listing that tells us we hold (our
    /// own listing then, not one shared with this process's other contenders), so it shows every
    /// write that earlier holders committed before they let go, including a write committed
    /// together with a release ([`LockGuard::commit_and_release`]). When the lock was handed
    /// over without a listing, the node is read right after. `None`: the node does not exist.
    ///
    /// The returned version is what a versioned write of the node expects: with
    /// [`commit_and_release`](LockGuard::commit_and_release), a read-modify-write under the lock
    /// costs the acquire's round trip and one commit.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid `path`; the read's errors (`NoAuth`...) end the
    /// acquire (our node is deleted); otherwise as [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe, as [`acquire`](Self::acquire).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::InterProcessMutex;
    /// let mutex = InterProcessMutex::new(&fw, "/locks/sku-42")?;
    /// let (guard, stock) = mutex.acquire_and_read("/stock/sku-42").await?;
    /// let Some(stock) = stock else { return guard.release().await };
    /// let left: i64 = String::from_utf8_lossy(&stock.value).parse().unwrap_or(0);
    /// let sale = fw.transaction().set_data("/stock/sku-42", (left - 1).to_string().as_bytes(), Some(stock.version));
    /// guard.commit_and_release(sale.without_marker()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_and_read(&self, path: &str) -> Result<(LockGuard, Option<VersionedValue<Vec<u8>>>)> {
        validate_path(path)?;
        let driver = Reading { driver: self.driver(), read: path };
        let (guard, read) = engine::forever(self.contend(Forever, &driver)).await?;
        let read = match read {
            Some(read) => read,
            None => match self.shared.fw.get_data_plain(path).await {
                Ok((data, stat)) => Some((data, stat.version)),
                Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => None,
                Err(e) => {
                    // the hold is of no use to the caller: let go of it before answering
                    let _ = guard.release().await;
                    return Err(e);
                }
            },
        };
        Ok((guard, read.map(|(value, version)| VersionedValue { version, value })))
    }
    /// Contends until `wait` ends, as `driver` says (the mutex's, or the mutex's reading a
    /// node behind its listings): the guard, and the driver's read (`None` when we held without
    /// a listing, or the driver reads nothing).
    async fn contend<W: Wait>(&self, wait: W, driver: &dyn Driver) -> Result<Waited<(LockGuard, Option<Read>), W>> {
        let s = &self.shared;
        let data = s.state.data.as_deref().unwrap_or(s.fw.default_data());
        let request = Request { dir: &s.path, data, driver };
        let acquired = contend(&s.fw, &request, wait).await?.waited()?;
        Ok(acquired.map(|mut a| {
            let read = a.read();
            (LockGuard::new(HeldNode::new(&s.fw, a), &s.state.local), read)
        }))
    }

    /// The mutex's driver: `lock-` nodes (server-TTL nodes with a server TTL), in the local
    /// queue beyond the first few acquires of the process.
    fn driver(&self) -> MutexDriver {
        MutexDriver(Exclusive::lock(self.shared.state.kind).with_ttl(self.shared.state.server_ttl))
    }

    /// Contends until `wait` ends: the guard (the one acquire of every public form).
    pub(crate) async fn acquire_until<W: Wait>(&self, wait: W) -> Result<Waited<LockGuard, W>> {
        Ok(self.contend(wait, &self.driver()).await?.map(|(guard, _)| guard))
    }

    /// Whether this process holds the mutex through this handle or a clone of it (Curator's
    /// `isAcquiredInThisProcess`). It says nothing of which task holds: guards move between
    /// tasks, and a hold belongs to whoever has its guard.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(mutex: zk_recipes::InterProcessMutex) -> zk_recipes::Result<()> {
    /// let guard = mutex.acquire().await?;
    /// assert!(mutex.is_acquired_in_this_process());
    /// guard.release().await?;
    /// assert!(!mutex.is_acquired_in_this_process());
    /// # Ok(()) }
    /// ```
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.shared.state.local.count() > 0
    }

    /// The contenders' node names in queue order (the first holds): nodes in ZooKeeper's
    /// queue, so at most eight of this framework's waiters (the rest wait in its local queue;
    /// see [Many waiters in one process](Self#many-waiters-in-one-process)).
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn participants(&self) -> Result<Vec<String>> {
        participants(&self.shared.fw, &self.shared.path, self.driver().spec().names).await
    }

    /// Asks the holder of `node_path` to release (Curator's `Revoker.attemptRevoke`): sets
    /// the node's data to `__REVOKE__`. The holder must have opted in to revocation.
    ///
    /// # Errors
    /// `NoNode` when the node is gone; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe (the request may or may not have been written).
    pub async fn request_revoke(fw: &Framework, node_path: &str) -> Result<()> {
        fw.set_data(node_path, REVOKE_MESSAGE, None).await.map(|_| ())
    }
}

/// The contenders among the children of `dir` in queue order, for the names a driver's nodes
/// end with (missing dir: none); foreign children (see `driver::is_contender`) are left out.
pub(crate) async fn participants(fw: &Framework, dir: &str, names: &[&str]) -> Result<Vec<String>> {
    let children = fw.children_or_empty(dir).await?;
    Ok(queue(children, names).sorted)
}
