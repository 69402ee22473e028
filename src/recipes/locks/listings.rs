//! Shared children listings: one `getChildren` for every local contender that needs one.
//!
//! A lock queue of N waiters in one process used to cost N listings of an N-long queue when
//! they arrived together — O(N²) names over the wire and in memory (10,000 waiters: ~3 GB).
//! Contenders of one directory on one session now share listings: a contender gets a listing
//! that was *sent after* the request it issued just before asking (its create, sent by the
//! engine), which is all
//! the engine needs (the listing then shows its node). The first asker sends its listing at
//! once, pipelined behind its create, as before; askers that arrive while it is in flight wait
//! for the next one, sent as soon as the first answers and shared by all of them. A listing is
//! sorted once per sort order, and shared read-only.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::driver::Request;
use super::order::{contenders, Contenders};
use crate::error::{Error, Result};
use crate::framework::{Conn, Framework, IfExists};
use crate::sync::lock;

/// The children of a directory, as one listing returned them.
#[derive(Debug)]
pub(crate) struct Listing {
    children: Vec<String>,
    sorted: Mutex<Vec<SortedBy>>,
}

/// The children split into contenders and foreign children for one set of lock names.
type SortedBy = (Vec<&'static str>, Arc<Contenders>);

impl Listing {
    pub(crate) fn new(children: Vec<String>) -> Self {
        Self { children, sorted: Mutex::default() }
    }

    /// The contenders for `names` in queue order, and the foreign children (see
    /// `order::contenders`), computed once per `names` and shared.
    pub(crate) fn sorted(&self, names: &[&'static str]) -> Arc<Contenders> {
        let mut cache = lock(&self.sorted);
        if let Some((_, sorted)) = cache.iter().find(|(n, _)| n.as_slice() == names) {
            return sorted.clone();
        }
        let sorted = Arc::new(contenders(self.children.clone(), names));
        cache.push((names.to_vec(), sorted.clone()));
        sorted
    }
}

/// A listing's outcome, shared by its askers (`NoNode`: an empty listing).
pub(crate) type SharedListing = Result<Arc<Listing>>;

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
        let waiting = {
            let mut dirs = lock(&self.listings.dirs);
            let Some(dir) = dirs.get_mut(&self.key) else { return };
            if dir.waiting.is_empty() {
                dirs.remove(&self.key);
                return;
            }
            true
        };
        if waiting {
            let (listings, conn, key) = (self.listings.clone(), self.conn.clone(), self.key.clone());
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(serve_waiting(listings, conn, key))),
                // no runtime (shutting down): the waiters see a lost connection and retry
                Err(_) => drop(lock(&listings.dirs).remove(&key)),
            }
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
            listings.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
                self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
        self.sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether a listing is in flight for any directory.
    #[cfg(test)]
    pub(crate) fn any_in_flight(&self) -> bool {
        lock(&self.dirs).values().any(|d| d.in_flight)
    }
}

/// A node read pipelined behind the listing that made us the holder: its data and version, or
/// `None` when it does not exist.
pub(crate) type Prefetched = Option<(Vec<u8>, i32)>;

/// A listing and what comes with it: the [`Driver::prefetch`](super::driver::Driver::prefetch)
/// read, when the driver asks for one.
pub(crate) type Listed = (Arc<Listing>, Option<Prefetched>);

/// A listing of the request's directory sent after this call: shared with the other local
/// contenders, or our own with the prefetch read pipelined behind it.
pub(super) async fn relist(fw: &Framework, req: &Request<'_>, listings: &Arc<Listings>) -> Result<Listed> {
    let dir = req.dir;
    match req.driver.prefetch() {
        Some(read) => {
            let (listing, data) =
                fw.request("list", dir, |conn| async move { list_and_read(&conn, dir, read).await }).await?;
            Ok((listing, Some(data)))
        }
        None => fw.request("list", dir, |conn| async move { listings.list(&conn, dir).await }).await.map(|l| (l, None)),
    }
}

/// Lists `dir` and reads `read` behind it, in one round trip.
pub(super) async fn list_and_read(conn: &Conn, dir: &str, read: &str) -> Result<(Arc<Listing>, Prefetched)> {
    // requests go out in the order they are made: the read after the listing
    let (listed, data) = tokio::join!(conn.children(dir), conn.get_data(read));
    let children = listed.if_exists()?.unwrap_or_default();
    let data = data.if_exists()?.map(|(data, stat)| (data, stat.version));
    Ok((Arc::new(Listing::new(children)), data))
}
