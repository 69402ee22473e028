//! `DistributedCountDownLatch`: a one-shot gate that opens once N participants counted down,
//! and can be set again for a new round (a new generation).

pub(crate) mod state;

use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::wait::{wait, Wake};
use crate::framework::{paths, CreateMode, Framework, IfExists, OneShotWatch};
use crate::ZooKeeperError;
use state::{check_count, check_participant, decode, encode, generation_dir, generation_of};

/// How many generation numbers one `try_set_count` skips because foreign nodes hold their
/// directories' names, before it gives up with the transaction's `NodeExists`.
const MAX_SKIPPED: u64 = 64;

/// A count-down latch across processes (as Hazelcast's `ICountDownLatch`; Curator has none).
///
/// Someone [sets a count](Self::try_set_count) N; participants [count down](Self::count_down)
/// by id; waiters [wait](Self::wait) until N different participants have counted down. The
/// latch then stays open until a new count is set: that starts a new *generation*.
///
/// # Notable behaviors
/// * **Idempotent per participant.** A count-down is one persistent node named by the
///   participant's id, so a count-down that is retried (a lost reply), replayed (a participant
///   that restarts and counts down again) or whose participant crashed right after it counts
///   exactly once. A count-down never depends on a session: session expiries lose nothing.
/// * **Opens exactly once, never early.** The latch is open when its generation has at least N
///   count-down nodes; they are never deleted while the generation is current, so the latch
///   cannot close again, and no participant can count twice to open it early.
/// * **Generations.** [`try_set_count`](Self::try_set_count) succeeds only while the count is
///   zero (no latch yet, or the current generation open) and starts the next generation. A
///   waiter waits for the generation that was current when it started: a later generation's
///   state never releases it, and its own generation's count-downs never release a later
///   waiter. Older generations are deleted by the setter of the next one.
/// * Waiting costs one children watch per waiter, and no polling; after any wake-up (a
///   count-down, a reconnection, a new session) the waiter looks again.
///
/// # Layout
/// No Curator recipe shares it (Curator has no count-down latch):
///
/// | node | mode | data |
/// |---|---|---|
/// | `<path>` | persistent (parents: containers) | the current generation G, decimal text |
/// | `<path>/gen-<G, 10 digits>` | persistent | the generation's count N, decimal text |
/// | `<path>/gen-<G>/<participant id>` | persistent | a random token of the count-down call |
///
/// Setting a count is one transaction (the latch's data, compared by version, and the new
/// generation's directory), so concurrent setters cannot both succeed.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::DistributedCountDownLatch;
/// let latch = DistributedCountDownLatch::new(&fw, "/jobs/ingest/shards-done")?;
/// latch.try_set_count(16).await?; // the coordinator, once per round
/// // ... each of the 16 workers, when its shard is done:
/// latch.count_down("shard-7").await?;
/// // ... the coordinator waits for all of them:
/// latch.wait().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedCountDownLatch {
    fw: Framework,
    path: String,
}

/// What a [`count_down`](DistributedCountDownLatch::count_down) did.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::latch::{CountDown, DistributedCountDownLatch};
///
/// let latch = DistributedCountDownLatch::new(&fw, "/jobs/ingest/done")?;
/// match latch.count_down("shard-3").await? {
///     CountDown::Counted { remaining: 0, .. } => println!("the last one: the latch is open"),
///     CountDown::Counted { remaining, .. } => println!("{remaining} to go"),
///     other => println!("{other:?}"),                // already counted in this generation
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountDown {
    /// This call counted the participant down in `generation`; `remaining` count-downs are
    /// still missing then (0: the latch is open).
    Counted {
        /// The generation counted down.
        generation: u64,
        /// Count-downs still missing (as listed right after ours).
        remaining: u64,
    },
    /// The participant had counted down in `generation` already: nothing changed.
    AlreadyCounted {
        /// The generation.
        generation: u64,
        /// Count-downs still missing.
        remaining: u64,
    },
    /// There was nothing to count down: no count was ever set, or the generation this call
    /// found was opened and replaced by a new one before the count-down got there.
    NotCounting,
}

/// One generation as read: its count, and how many participants counted down.
#[derive(Debug, Clone, Copy)]
struct Generation {
    count: u64,
    counted: u64,
}

impl Generation {
    fn remaining(self) -> u64 {
        self.count.saturating_sub(self.counted)
    }
}

impl DistributedCountDownLatch {
    /// A latch at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path (or the root).
    pub fn new(fw: &Framework, path: &str) -> Result<Self> {
        paths::validate_recipe_path(path)?;
        Ok(Self { fw: fw.clone(), path: path.to_string() })
    }

    /// The latch's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sets the count to `count` if it is zero — no count was ever set, or the current
    /// generation is open — starting a new generation: `Ok(true)`. `Ok(false)` when a
    /// generation is still counting down (nothing changes).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a count of 0 or beyond `i32::MAX`;
    /// [`Error::CorruptData`] when the latch's nodes hold something else than this recipe
    /// writes; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the count may have been set.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        check_count(count)?;
        // generation numbers skipped because a foreign node holds their directory's name
        let mut skip = 0;
        loop {
            let set = match self.current().await? {
                None => self.first_generation(count).await,
                Some((generation, version)) => {
                    if self
                        .read_generation(&generation_dir(&self.path, generation), false)
                        .await?
                        .is_some_and(|(g, _)| g.remaining() > 0)
                    {
                        return Ok(false);
                    }
                    self.next_generation(generation, version, count, skip).await
                }
            };
            match set {
                Ok(generation) => {
                    self.delete_generations_before(generation).await;
                    return Ok(true);
                }
                // someone else set it first (the latch node created, or its version moved on), or
                // its parent vanished (a reaped container): look again
                Err(Error::Transaction {
                    index: 0,
                    source: ZooKeeperError::NodeExists | ZooKeeperError::BadVersion | ZooKeeperError::NoNode,
                    ..
                }) => {}
                // the next generation's directory exists though the latch never named that
                // generation (a setter makes both in one transaction): a foreign node, which
                // would refuse every setter — skip its number (it is deleted with the older
                // generations)
                Err(Error::Transaction { index: 1, source: ZooKeeperError::NodeExists, path })
                    if skip < MAX_SKIPPED =>
                {
                    tracing::warn!(%path, "latch: a foreign node holds the next generation's name: skipping it");
                    skip += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn first_generation(&self, count: u64) -> Result<u64> {
        let parent = paths::parent(&self.path);
        self.fw.request("create", parent, |conn| async move { conn.make_parents(parent).await }).await?;
        let dir = generation_dir(&self.path, 1);
        let txn = self.fw.transaction().plain().create(&self.path, &encode(1), CreateMode::Persistent);
        txn.create(&dir, &encode(count), CreateMode::Persistent).commit().await.map(|_| 1)
    }

    /// Starts the generation after `generation` (at the latch's data `version`), `skip`
    /// numbers further on.
    async fn next_generation(&self, generation: u64, version: i32, count: u64, skip: u64) -> Result<u64> {
        let next = generation + 1 + skip;
        let txn = self.fw.transaction().plain().set_data(&self.path, &encode(next), Some(version));
        txn.create(&generation_dir(&self.path, next), &encode(count), CreateMode::Persistent)
            .commit()
            .await
            .map(|_| next)
    }

    /// Deletes the generations before `current` (what a setter leaves behind it); failures
    /// are logged and left to the next setter.
    async fn delete_generations_before(&self, current: u64) {
        let old = match self.fw.children_or_empty(&self.path).await {
            Ok(children) => children.into_iter().filter(|c| generation_of(c).is_some_and(|g| g < current)),
            Err(e) => return tracing::debug!(path = %self.path, error = %e, "latch: old generations stay for now"),
        };
        for dir in old.map(|c| paths::join(&self.path, &c)) {
            let deleted = async {
                for child in self.fw.children_or_empty(&dir).await? {
                    self.fw.delete_if_exists(&paths::join(&dir, &child)).await?;
                }
                self.fw.delete_if_exists(&dir).await
            };
            if let Err(e) = deleted.await {
                tracing::debug!(%dir, error = %e, "latch: an old generation stays for now");
            }
        }
    }

    /// Counts `participant` down in the current generation, once: a participant that counted
    /// down already (in this call's earlier attempt, or an earlier call) is not counted again.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a participant id that cannot be a node name (empty,
    /// longer than 255 bytes, `/`, `.`, `..`, control characters); [`Error::CorruptData`];
    /// the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the count-down may have been made (calling again with the same id is
    /// safe: it counts once).
    pub async fn count_down(&self, participant: &str) -> Result<CountDown> {
        check_participant(participant)?;
        let Some((generation, _)) = self.current().await? else { return Ok(CountDown::NotCounting) };
        self.count_down_in(generation, participant).await
    }

    /// [`count_down`](Self::count_down) in `generation`, found current.
    async fn count_down_in(&self, generation: u64, participant: &str) -> Result<CountDown> {
        let dir = generation_dir(&self.path, generation);
        let node = paths::join(&dir, participant);
        let token = uuid::Uuid::new_v4().simple().to_string();
        let sent = std::sync::atomic::AtomicBool::new(false);
        let (dir, node, token, sent) = (dir.as_str(), node.as_str(), token.as_bytes(), &sent);
        let outcome = self
            .fw
            .request("count_down", node, |conn| async move {
                // one round trip: our node, then the generation as it is after it
                let create = conn.create(node, token, CreateMode::Persistent, None);
                let ours = conn.get_data(node);
                let count = conn.get_data(dir);
                let counted = conn.children(dir);
                let retried = sent.swap(true, std::sync::atomic::Ordering::SeqCst);
                let (created, ours, count, counted) = tokio::join!(create, ours, count, counted);
                let first = match created {
                    Ok(_) => true,
                    // a retry finds our own node from an attempt whose reply was lost
                    Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => {
                        retried && ours.as_ref().is_ok_and(|(data, _)| data == token)
                    }
                    Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => return Ok(None),
                    Err(e) => return Err(e),
                };
                let (Some((count, _)), Some(counted)) = (count.if_exists()?, counted.if_exists()?) else {
                    return Ok(None);
                };
                Ok(Some((first, count, counted.len() as u64)))
            })
            .await?;
        let Some((first, count, counted)) = outcome else { return Ok(CountDown::NotCounting) };
        let remaining = Generation { count: decode(dir, &count)?, counted }.remaining();
        Ok(if first {
            CountDown::Counted { generation, remaining }
        } else {
            CountDown::AlreadyCounted { generation, remaining }
        })
    }

    /// How many count-downs the current generation still misses: 0 when it is open or no
    /// count was ever set.
    ///
    /// # Errors
    /// [`Error::CorruptData`]; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn count(&self) -> Result<u64> {
        loop {
            let Some((generation, _)) = self.current().await? else { return Ok(0) };
            if let Some((g, _)) = self.read_generation(&generation_dir(&self.path, generation), false).await? {
                return Ok(g.remaining());
            }
            // that generation was replaced meanwhile: look at the new one
        }
    }

    /// The current generation (1 for the first count set; it grows by one with every count
    /// set), or `None` when no count was ever set.
    ///
    /// # Errors
    /// [`Error::CorruptData`]; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn generation(&self) -> Result<Option<u64>> {
        Ok(self.current().await?.map(|(generation, _)| generation))
    }

    /// Waits until the generation current now is open (at once when no count was ever set, or
    /// it is open already).
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`wait_timeout`](Self::wait_timeout) with the time left.
    ///
    /// # Errors
    /// [`Error::ZooKeeper`] with `NoNode` when the latch is deleted while waiting;
    /// [`Error::CorruptData`]; the framework's errors ([`Error::Closed`],
    /// [`Error::RetriesExhausted`] when the connection stays down longer than the retry policy
    /// allows...).
    ///
    /// # Cancel safety
    /// Cancel safe: waiting leaves nothing on the server but a watch.
    #[doc(alias = "await")]
    pub async fn wait(&self) -> Result<()> {
        if let Some(left) = deadline::scope_left() {
            return self.wait_timeout(left).await;
        }
        self.wait_until(None).await.map(drop)
    }

    /// Waits at most `timeout` until the generation current now is open.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// [`Error::Timeout`] when it was still counting down at the deadline; as
    /// [`wait`](Self::wait) otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe.
    #[doc(alias = "await")]
    pub async fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        deadline::timed(self.fw.operation_timeout(), timeout, |at| async move {
            Ok(self.wait_until(Some(at)).await?.then_some(()))
        })
        .await
    }

    async fn wait_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let Some((generation, _)) = self.current().await? else { return Ok(true) };
        let dir = generation_dir(&self.path, generation);
        loop {
            let session = self.fw.status().session_id;
            let Some((g, watcher)) = self.read_generation(&dir, true).await? else {
                // a generation's directory goes only after a later one was set, and a later
                // one is set only once this one opened
                return match self.current().await? {
                    Some((now, _)) if now > generation => Ok(true),
                    _ => Err(Error::ZooKeeper(ZooKeeperError::NoNode)),
                };
            };
            if g.remaining() == 0 {
                return Ok(true);
            }
            let Some(watcher) = watcher else { continue };
            if wait(&self.fw, watcher, deadline, session).await == Wake::Deadline {
                return Ok(false);
            }
        }
    }

    /// The latch's current generation and its data version; `None` when there is no latch.
    async fn current(&self) -> Result<Option<(u64, i32)>> {
        let path = self.path.as_str();
        let read =
            self.fw.request("get_data", path, |conn| async move { conn.get_data(path).await.if_exists() }).await?;
        read.map(|(data, stat)| Ok((decode(path, &data)?, stat.version))).transpose()
    }

    /// The count and count-downs of the generation at `dir` (one round trip), with a watch on
    /// the count-downs when `watch`; `None` when the directory is gone.
    async fn read_generation(&self, dir: &str, watch: bool) -> Result<Option<(Generation, Option<OneShotWatch>)>> {
        let read = self
            .fw
            .request("read", dir, |conn| async move {
                let conn = &conn;
                let counted = async {
                    if watch {
                        conn.watch_children(dir).await.map(|(list, w)| (list, Some(w)))
                    } else {
                        conn.children(dir).await.map(|list| (list, None))
                    }
                };
                let (count, counted) = tokio::join!(conn.get_data(dir), counted);
                Ok(count.if_exists()?.zip(counted.if_exists()?))
            })
            .await?;
        read.map(|((count, _), (counted, watcher))| {
            Ok((Generation { count: decode(dir, &count)?, counted: counted.len() as u64 }, watcher))
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests;
