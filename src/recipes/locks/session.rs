//! What one framework's locks share between acquires: three optimisations of the plain queue,
//! and the foreign nodes warned about. The engine (`engine.rs`) reads as the plain queue
//! without them: each is asked at one point — "wait for our turn to enter" ([`LocalQueues`]),
//! "a listing sent after our create" ([`Listings`]), "we hold / we follow this node"
//! ([`HandOff`]).
//!
//! * **The local queue** (the mutex's, through its driver's `admit`): a process's acquires of
//!   one lock path go into ZooKeeper's queue at most [`DEPTH`] at a time; the others wait here,
//!   in arrival order. Every contender in ZooKeeper's queue costs a node, a create, a watch, an
//!   entry in every other contender's listing, and on our side a full acquire (its request
//!   slots, watch channels and names: about 4 KB); one waiting here costs its task and a place
//!   in a fair semaphore (well under 1 KB), and nothing on the server. 10,000 tasks queued on
//!   one lock path hold [`DEPTH`] nodes, not 10,000. Within a process, acquires hold in the
//!   order they arrived: an acquire takes the queue's create order (a fair lock) before its
//!   place and gives it up only once its create has answered that its node exists, so the
//!   sequence numbers come back in arrival order however late the runtime gets to a waiter it
//!   woke — and when the connection drops under a create (retried, and looking for the node it
//!   may have made first, the order still held). Against other processes, a process is in
//!   ZooKeeper's queue with at most [`DEPTH`] contenders: one arriving later elsewhere may hold
//!   before this process's waiters beyond the first [`DEPTH`].
//! * **Shared listings**: a queue of N waiters in one process used to cost N listings of an
//!   N-long queue when they arrived together — O(N²) names over the wire and in memory (10,000
//!   waiters: ~3 GB). Contenders of one directory on one session share listings: a contender
//!   gets a listing that was *sent after* the request it made just before asking (its create),
//!   which is all the engine needs (the listing then shows its node). The first asker sends
//!   its listing at once, pipelined behind its create; askers that arrive while it is in flight
//!   wait for the next one, sent as soon as the first answers and shared by all of them. A
//!   listing is sorted once per set of names, and shared read-only.
//! * **The hand-off**: a waiter watches its predecessor. When the predecessor is deleted,
//!   Curator's protocol lists the queue again, because the predecessor may have been a waiter
//!   that gave up while nodes before it still hold: with N waiters queued that is an N-long
//!   listing (and sort) per hand-off, O(N²) to drain the queue. But if the predecessor ever held
//!   as the head, every node before it was gone at that moment and every node created since
//!   sorts after us: its deletion alone makes us the holder. A remote holder cannot tell us
//!   that; a holder in this process can. So a holder alone at the head marks its node here
//!   while it holds ([`HandOff::mark`]), a waiter registers the node it watches
//!   ([`HandOff::follow`]), and when that node is deleted the waiter asks whether it was marked
//!   ([`Mark::was_held`]) — no listing. Local acquires in flight are known too (by their
//!   protection prefix, registered before the create is sent): a waiter behind a local node
//!   needs no early listing (the "ahead" watch), since that node marks itself when it holds.
//!   Invariants: a node is marked only by its holder, only while it holds alone at the head,
//!   and before it is deleted; a waiter follows a node only where the driver says its deletion
//!   after holding makes us the holder (`Watch::after_holder`: not behind a writer, which may
//!   downgrade and leave a read node in its place); the follower registers before its watch is
//!   set, so a mark made before the deletion it is woken by is seen (a mark missed — a watch
//!   kept from before — only costs a listing); entries live while a holder or a follower refers
//!   to them: a new node at the same path starts unmarked.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, Mutex as AsyncMutex, OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};

use super::order::Listing;
use crate::error::{Error, Result};
use crate::framework::{paths, Conn, Framework, IfExists, ProtectedName};
use crate::sync::lock;

/// Everything the locks of one framework share between acquires, for its current session.
#[derive(Default)]
pub(crate) struct SessionLocks {
    /// The mutexes' local queues, by lock path.
    pub local_queues: Arc<LocalQueues>,
    /// Which local nodes held alone as a queue's head, for the waiters that follow them.
    pub hand_off: Arc<HandOff>,
    /// Children listings shared by the local contenders of a directory.
    pub listings: Arc<Listings>,
    /// The foreign children already warned about.
    pub foreign: ForeignNodes,
}

impl SessionLocks {
    /// The framework's lock state.
    pub(crate) fn of(fw: &Framework) -> Arc<SessionLocks> {
        fw.session_extension::<SessionLocks>()
    }
}

// ---------------------------------------------------------------------------------------
// The local queue

/// At most this many acquires of one framework contend for one lock path in ZooKeeper's
/// queue at a time. Deep enough that draining a local queue never waits for a create: each
/// hand-off takes one notification, the entrant behind it a create and a listing, in flight
/// meanwhile.
pub(crate) const DEPTH: usize = 8;

/// The local queues of one framework, by lock path; a path's queue exists while an acquire
/// of it is in flight.
#[derive(Debug, Default)]
pub(crate) struct LocalQueues {
    paths: Mutex<HashMap<String, PathQueue>>,
}

/// One path's queue.
#[derive(Debug)]
struct PathQueue {
    places: Arc<Semaphore>,
    /// Held from before a place is taken until that place's node is created.
    order: Arc<AsyncMutex<()>>,
    /// Acquires in flight: waiting here or in ZooKeeper's queue.
    users: usize,
}

/// An acquire's admission to ZooKeeper's queue (a driver's `admit`): for the mutex, its place
/// in the local queue — left when dropped, as the acquire ends, whatever its outcome — and
/// the create order until its node exists; nothing for the plain queue.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    place: Option<Place>,
}

#[derive(Debug)]
struct Place {
    queues: Arc<LocalQueues>,
    path: String,
    permit: Option<OwnedSemaphorePermit>,
    order: Option<CreateOrder>,
}

/// The right to create next, held by the acquire that takes the next place until its node is
/// created (see [`Admitted::take_create_order`]).
pub(crate) type CreateOrder = OwnedMutexGuard<()>;

impl LocalQueues {
    /// Waits for a place in ZooKeeper's queue of the lock at `path`, behind every local
    /// acquire that asked before.
    ///
    /// Cancel safe: dropped while it waits, it gives up its create order and takes no place.
    pub(crate) async fn enter(self: &Arc<Self>, path: &str) -> Admitted {
        let (places, order) = {
            let mut queues = lock(&self.paths);
            let queue = queues.entry(path.to_string()).or_insert_with(|| PathQueue {
                places: Arc::new(Semaphore::new(DEPTH)),
                order: Arc::default(),
                users: 0,
            });
            queue.users += 1;
            (queue.places.clone(), queue.order.clone())
        };
        // registered: from here on a drop of ours unregisters
        let mut place = Place { queues: self.clone(), path: path.to_string(), permit: None, order: None };
        // the create order first, then the place: the next one waits for our create, not just our place
        place.order = Some(order.lock_owned().await);
        // (the semaphore is never closed; if it were, the acquire would go on without a place)
        place.permit = places.acquire_owned().await.ok();
        Admitted { place: Some(place) }
    }

    /// The paths with a queue now (acquires in flight), for tests.
    #[cfg(test)]
    pub(crate) fn paths(&self) -> usize {
        lock(&self.paths).len()
    }
}

impl Admitted {
    /// The create order, for the acquire to give up once its node is created (the next local
    /// acquire takes the next place then); `None` once taken, or for the plain queue.
    pub(crate) fn take_create_order(&mut self) -> Option<CreateOrder> {
        self.place.as_mut().and_then(|p| p.order.take())
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        // the place first: the next local acquire may enter at once
        drop(self.permit.take());
        let mut queues = lock(&self.queues.paths);
        if let Some(queue) = queues.get_mut(&self.path) {
            queue.users -= 1;
            if queue.users == 0 {
                queues.remove(&self.path);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Shared listings

/// A listing's outcome, shared by its askers (`NoNode`: an empty listing).
type SharedListing = Result<Arc<Listing>>;

type Key = (i64, String);

/// One directory's listings on one session.
#[derive(Default)]
struct Dir {
    /// A listing of this directory is in flight.
    in_flight: bool,
    /// Askers waiting for the next listing.
    waiting: Vec<oneshot::Sender<SharedListing>>,
}

/// The framework's shared listings.
#[derive(Default)]
pub(crate) struct Listings {
    dirs: Mutex<HashMap<Key, Dir>>,
    /// Listings sent so far (for tests and diagnostics).
    sent: std::sync::atomic::AtomicU64,
}

/// The listing an asker gets: its own, in flight, or the next shared one.
enum Ask<'c> {
    Own(std::pin::Pin<Box<dyn Future<Output = Result<Vec<String>>> + Send + 'c>>, Release),
    Next(oneshot::Receiver<SharedListing>),
}

/// Ends an asker's own listing when its listing answered or was dropped: the waiters then get the
/// next listing, sent by a task.
struct Release {
    listings: Arc<Listings>,
    conn: Conn,
    key: Key,
}

impl Drop for Release {
    fn drop(&mut self) {
        {
            let mut dirs = lock(&self.listings.dirs);
            let Some(dir) = dirs.get_mut(&self.key) else { return };
            if dir.waiting.is_empty() {
                dirs.remove(&self.key);
                return;
            }
        }
        let (listings, conn, key) = (self.listings.clone(), self.conn.clone(), self.key.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(serve_waiting(listings, conn, key))),
            // no runtime (shutting down): the waiters see a lost connection and retry
            Err(_) => drop(lock(&listings.dirs).remove(&key)),
        }
    }
}

/// Sends listings for the waiting askers until none is left.
async fn serve_waiting(listings: Arc<Listings>, conn: Conn, key: Key) {
    loop {
        let (askers, listed) = {
            let mut dirs = lock(&listings.dirs);
            let Some(dir) = dirs.get_mut(&key) else { return };
            if dir.waiting.is_empty() {
                dirs.remove(&key);
                return;
            }
            // sent under the lock: after the requests of everyone it serves
            listings.sent.fetch_add(1, Ordering::Relaxed);
            (std::mem::take(&mut dir.waiting), conn.children(&key.1))
        };
        let listed = shared(listed.await);
        for asker in askers {
            let _ = asker.send(listed.as_ref().map(Arc::clone).map_err(Error::duplicate));
        }
    }
}

fn shared(listed: Result<Vec<String>>) -> SharedListing {
    Ok(Arc::new(Listing::new(listed.if_exists()?.unwrap_or_default())))
}

impl Listings {
    /// A listing of `dir` sent after this call (after every request `conn` was asked for
    /// before it, e.g. our create), shared with the other local askers: our own, sent now, or
    /// the next one, sent when the listing in flight answers.
    pub(crate) fn list<'c>(
        self: &Arc<Self>,
        conn: &'c Conn,
        dir: &'c str,
    ) -> impl Future<Output = SharedListing> + Send + 'c {
        let key: Key = (conn.session_id(), dir.to_string());
        let ask = {
            let mut dirs = lock(&self.dirs);
            let entry = dirs.entry(key.clone()).or_default();
            if entry.in_flight {
                let (tx, rx) = oneshot::channel();
                entry.waiting.push(tx);
                Ask::Next(rx)
            } else {
                entry.in_flight = true;
                self.sent.fetch_add(1, Ordering::Relaxed);
                let release = Release { listings: self.clone(), conn: conn.clone(), key };
                Ask::Own(Box::pin(conn.children(dir)), release)
            }
        };
        async move {
            match ask {
                Ask::Own(listed, release) => {
                    let listed = shared(listed.await);
                    drop(release);
                    listed
                }
                // the sender goes away only with the session's client: call it a lost connection
                Ask::Next(rx) => rx.await.unwrap_or(Err(Error::ZooKeeper(crate::ZooKeeperError::ConnectionLoss))),
            }
        }
    }

    /// Listings sent so far.
    #[cfg(test)]
    pub(crate) fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Whether a listing is in flight for any directory.
    #[cfg(test)]
    pub(crate) fn any_in_flight(&self) -> bool {
        lock(&self.dirs).values().any(|d| d.in_flight)
    }
}

// ---------------------------------------------------------------------------------------
// The hand-off

/// The marks of one framework.
#[derive(Debug, Default)]
pub(crate) struct HandOff {
    nodes: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// The protection prefixes of this framework's acquires in flight.
    acquiring: Mutex<HashSet<String>>,
}

/// A local acquire in flight (its protection prefix), known as such while this lives.
#[derive(Debug)]
pub(crate) struct InFlight {
    hand_off: Arc<HandOff>,
    prefix: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.hand_off.acquiring).remove(&self.prefix);
    }
}

/// A registration of one node (by a holder or by a waiter); unregisters when dropped.
#[derive(Debug)]
pub(crate) struct Mark {
    hand_off: Arc<HandOff>,
    path: String,
    held: Arc<AtomicBool>,
}

/// A waiter's registration with the node it watches ([`HandOff::follow`]).
#[derive(Debug)]
pub(crate) struct Followed {
    /// The registration.
    pub mark: Mark,
    /// The watched node is one of our acquires.
    pub local: bool,
}

impl HandOff {
    /// Marks `path`, which holds now alone at the head of its queue, for as long as the hold
    /// keeps the mark.
    pub(crate) fn mark(self: &Arc<Self>, path: &str) -> Arc<Mark> {
        let entry = self.entry(path);
        entry.held.store(true, Ordering::SeqCst);
        Arc::new(entry)
    }

    /// Follows the one node a waiter watches (at `path`), whose deletion after it held alone
    /// makes us the holder: registered before the watch is set. Also says whether that node
    /// is one of our acquires (no early listing needed).
    pub(crate) fn follow(self: &Arc<Self>, path: &str) -> Followed {
        Followed { mark: self.entry(path), local: self.is_local(path) }
    }

    fn entry(self: &Arc<Self>, path: &str) -> Mark {
        let held = lock(&self.nodes).entry(path.to_string()).or_default().clone();
        Mark { hand_off: self.clone(), path: path.to_string(), held }
    }

    /// Registers our acquire by its protection prefix (`_c_<uuid>-`) while it is in flight.
    pub(crate) fn acquiring(self: &Arc<Self>, prefix: &str) -> InFlight {
        lock(&self.acquiring).insert(prefix.to_string());
        InFlight { hand_off: self.clone(), prefix: prefix.to_string() }
    }

    /// Whether the node at `path` is one of our acquires: still in flight, or marked as
    /// holding.
    fn is_local(&self, path: &str) -> bool {
        let name = paths::node_name(path);
        let acquiring = ProtectedName::prefix_of(name).is_some_and(|p| lock(&self.acquiring).contains(p));
        acquiring || lock(&self.nodes).get(path).is_some_and(|h| h.load(Ordering::SeqCst))
    }
}

impl Mark {
    /// Whether the node was marked as held (at any time since this entry was made, or before
    /// while another entry kept it).
    pub(crate) fn was_held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        let mut nodes = lock(&self.hand_off.nodes);
        // the map's reference and ours: nobody else refers to the node any more
        if Arc::strong_count(&self.held) <= 2 {
            nodes.remove(&self.path);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Foreign nodes

/// How many foreign nodes a framework remembers having warned about; past that it forgets
/// them all (and may warn again), so that a tree that keeps making junk costs bounded memory.
const REMEMBERED: usize = 10_000;

/// The foreign children (see `driver::is_contender`) a framework has warned about, so that
/// each is logged once, not at every listing. The double barrier keeps the same register for
/// its foreign children (names that are not UUIDs).
#[derive(Default)]
pub(crate) struct ForeignNodes {
    warned: Mutex<HashSet<String>>,
}

impl ForeignNodes {
    /// Warns about each of `foreign` (children of `dir`) not warned about before.
    pub(crate) fn warn(&self, dir: &str, foreign: &[String]) {
        if foreign.is_empty() {
            return;
        }
        let mut warned = lock(&self.warned);
        for name in foreign {
            let path = paths::join(dir, name);
            if warned.contains(&path) {
                continue;
            }
            if warned.len() >= REMEMBERED {
                warned.clear();
            }
            tracing::warn!(
                %path,
                "ignoring a foreign node: no compliant client names a node so there (a contender's name \
                 ends with the recipe's name and a ZooKeeper sequence), so it holds nothing"
            );
            warned.insert(path);
        }
    }

    /// How many foreign nodes were warned about (and are remembered).
    #[cfg(test)]
    pub(crate) fn warned(&self) -> usize {
        lock(&self.warned).len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn places_are_fifo_and_bounded_and_queues_go_with_their_last_acquire() {
        let queues = Arc::new(LocalQueues::default());
        let mut inside = Vec::new();
        for _ in 0..DEPTH {
            let mut place = queues.enter("/a").await;
            // its create sent
            drop(place.take_create_order());
            inside.push(place);
        }
        // DEPTH places taken: the next two wait, in order
        let (q1, q2) = (queues.clone(), queues.clone());
        let first = tokio::spawn(async move { q1.enter("/a").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let second = tokio::spawn(async move { q2.enter("/a").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!first.is_finished() && !second.is_finished(), "more than DEPTH places");
        // another path is not held up
        let other = tokio::time::timeout(Duration::from_secs(1), queues.enter("/b")).await.expect("/b waited for /a");
        drop(inside.pop());
        let mut first =
            tokio::time::timeout(Duration::from_secs(1), first).await.expect("the first never entered").unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!second.is_finished(), "the second entered before a place was free");
        // a place free, but the first has not sent its create yet: the second waits for that
        drop(inside.pop());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!second.is_finished(), "the second entered before the first had sent its create");
        drop(first.take_create_order());
        let mut second =
            tokio::time::timeout(Duration::from_secs(1), second).await.expect("the second never entered").unwrap();
        drop(second.take_create_order());
        // a waiter dropped while it waits gives up its create order and takes nothing
        let q3 = queues.clone();
        let dropped = tokio::spawn(async move { q3.enter("/a").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        dropped.abort();
        assert!(dropped.await.unwrap_err().is_cancelled());
        drop(first);
        drop((second, other));
        assert_eq!(queues.paths(), 1, "/b's queue outlived its last acquire");
        drop(inside);
        assert_eq!(queues.paths(), 0, "a queue outlived its acquires");
    }

    #[test]
    fn a_mark_is_seen_by_waiters_registered_before_and_after_and_then_forgotten() {
        let hand_off = Arc::new(HandOff::default());
        let early = hand_off.entry("/l/a");
        assert!(!early.was_held());
        let held = hand_off.mark("/l/a");
        let late = hand_off.follow("/l/a").mark;
        assert!(early.was_held() && late.was_held());
        drop(held);
        assert!(early.was_held(), "released after holding: still known to its waiters");
        drop((early, late));
        assert!(lock(&hand_off.nodes).is_empty(), "no entry outlives its users");
        assert!(!hand_off.entry("/l/a").was_held(), "a new node at the same path starts unmarked");
        assert!(!hand_off.entry("/l/b").was_held());
    }

    #[test]
    fn acquires_are_local_while_in_flight_and_while_marked() {
        let hand_off = Arc::new(HandOff::default());
        let (prefix_a, prefix_b) =
            ("_c_11111111-1111-1111-1111-111111111111-", "_c_22222222-2222-2222-2222-222222222222-");
        let (a, b) = (format!("/l/{prefix_a}lock-0000000001"), format!("/l/{prefix_b}lock-0000000002"));
        let (a, b) = (a.as_str(), b.as_str());
        let in_flight = hand_off.acquiring(prefix_a);
        assert!(hand_off.is_local(a) && !hand_off.is_local(b));
        let watcher = hand_off.follow(b);
        assert!(!watcher.local && !hand_off.is_local(b), "a node we only watch is not ours");
        let held = hand_off.mark(a);
        drop(in_flight);
        assert!(hand_off.is_local(a), "holding");
        drop((held, watcher));
        assert!(!hand_off.is_local(a), "released");
    }

    #[test]
    fn each_foreign_node_is_remembered_once() {
        let f = ForeignNodes::default();
        f.warn("/a", &["lock-".into(), "x".into()]);
        f.warn("/a", &["lock-".into()]);
        f.warn("/b", &["lock-".into()]);
        assert_eq!(f.warned(), 3);
    }
}
