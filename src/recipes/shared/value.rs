//! `SharedValue`: bytes in one node that every participant reads, watches and
//! compare-and-sets by version. `SharedCount` is built on it.

use std::time::Duration;

use crate::framework::Stat;
use crate::ZooKeeperError;
use futures_core::Stream;

use super::cas::{self, Cas, VersionedValue};
use crate::error::{Error, Result};
use crate::framework::backoff::Backoff;
use crate::framework::wait::wait;
use crate::framework::{paths, CreateMode, Framework, IfExists, OneShotWatch};

/// Bytes shared through one node: Curator's `SharedValue`.
///
/// Every participant reads ([`get`](Self::get)), writes ([`set`](Self::set)), writes only if
/// nobody wrote since its read ([`compare_and_set`](Self::compare_and_set), which also returns
/// the value that won, or [`try_set`](Self::try_set); both compare the node version), and
/// follows changes ([`changes`](Self::changes)).
///
/// # Curator compatibility
/// One PERSISTENT node at `path` holding the raw bytes, created with the seed by
/// [`start`](Self::start) when missing (missing parents are containers); conditional writes
/// use the node version, as Curator's `trySetValue`. A Curator `SharedValue` on the same path
/// shares the value.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::SharedValue;
/// let config = SharedValue::new(&fw, "/config/mode", b"normal".to_vec())?;
/// config.start().await?;
/// let current = config.get().await?;
/// if !config.try_set(&current, b"maintenance").await? {
///     // someone else wrote first: read again and decide
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SharedValue {
    fw: Framework,
    path: String,
    seed: Vec<u8>,
}

impl SharedValue {
    /// A shared value at `path`; `seed` is written by [`start`](Self::start) when the node
    /// does not exist yet.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path (or the root).
    pub fn new(fw: &Framework, path: &str, seed: impl Into<Vec<u8>>) -> Result<Self> {
        paths::validate_recipe_path(path)?;
        Ok(Self { fw: fw.clone(), path: path.to_string(), seed: seed.into() })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    pub(crate) fn framework(&self) -> &Framework {
        &self.fw
    }

    /// Creates the node with the seed if it does not exist (an existing value is kept).
    ///
    /// # Errors
    /// The framework's errors ([`Error::Closed`], [`Error::RetriesExhausted`], `NoAuth`...).
    ///
    /// # Cancel safety
    /// Cancel safe in the sense that nothing is left half-done: the node may or may not have
    /// been created.
    pub async fn start(&self) -> Result<()> {
        let seed = self.fw.encode(&self.path, &self.seed)?;
        match self.fw.create_if_absent(&self.path, &seed, CreateMode::Persistent).await {
            Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The current bytes and their version, read from the server.
    ///
    /// # Errors
    /// `NoNode` as [`Error::ZooKeeper`] when the node does not exist (call
    /// [`start`](Self::start) first); the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    #[doc(alias = "getValue")]
    #[doc(alias = "getVersionedValue")]
    pub async fn get(&self) -> Result<VersionedValue<Vec<u8>>> {
        let (value, stat) = self.fw.get_data(&self.path).await?;
        Ok(VersionedValue { version: stat.version, value })
    }

    /// Writes `value` whatever the current one (Curator's `setValue`); creates the node when
    /// it is missing.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    #[doc(alias = "setValue")]
    pub async fn set(&self, value: &[u8]) -> Result<()> {
        loop {
            if self.fw.set_data(&self.path, value, None).await.if_exists()?.is_some() {
                return Ok(());
            }
            let stored = self.fw.encode(&self.path, value)?;
            match self.fw.create_if_absent(&self.path, &stored, CreateMode::Persistent).await {
                Ok(_) => return Ok(()),
                Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes `new` only if the node is still at `previous.version`, and tells what won when
    /// someone else wrote first:
    /// * `Ok(Ok(written))`: written; `written` is `new` with the node's new version, ready for
    ///   the next `compare_and_set`.
    /// * `Ok(Err(current))`: someone wrote in between; `current` is the value and version on
    ///   the server now, ready for the next attempt.
    ///
    /// One round trip when written; a refusal reads the node in a second one (as Curator's
    /// `trySetValue` does before returning false). An increment loop from the last result
    /// needs no other read.
    ///
    /// A reply lost to a connection loss is handled as in [`try_set`](Self::try_set): exactly.
    ///
    /// # Errors
    /// * `NoNode` as [`Error::ZooKeeper`] when the write was refused because the node does not
    ///   exist (or it was deleted right after the refusal): there is no current value to give.
    ///   Unlike [`set`](Self::set), `compare_and_set` never creates the node; call
    ///   [`start`](Self::start) (or `set`) first.
    /// * [`Error::OutcomeUnknown`] when a lost reply leaves it open whether our write was
    ///   applied (see [`try_set`](Self::try_set)).
    /// * The framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    pub async fn compare_and_set(
        &self,
        previous: &VersionedValue<Vec<u8>>,
        new: &[u8],
    ) -> Result<std::result::Result<VersionedValue<Vec<u8>>, VersionedValue<Vec<u8>>>> {
        Ok(match self.compare_and_set_version(previous.version, new).await? {
            Ok(version) => Ok(VersionedValue { version, value: new.to_vec() }),
            Err(current) => Err(current),
        })
    }

    /// [`compare_and_set`](Self::compare_and_set) from a version: `Ok(Ok(new version))` or
    /// `Ok(Err(current))`.
    pub(crate) async fn compare_and_set_version(
        &self,
        version: i32,
        new: &[u8],
    ) -> Result<std::result::Result<i32, VersionedValue<Vec<u8>>>> {
        match cas::compare_and_set(&self.fw, &self.path, version, new, true).await? {
            Cas::Written(version) => Ok(Ok(version)),
            Cas::Refused(Some(Ok(current))) => Ok(Err(current)),
            // not read (not expected when asked for), or the refusal arrived and the read's
            // reply did not: read again
            Cas::Refused(None) => Ok(Err(self.get().await?)),
            Cas::Refused(Some(Err(e))) if e.is_retryable() => Ok(Err(self.get().await?)),
            Cas::Refused(Some(Err(e))) => Err(e),
        }
    }

    /// Writes `new` only if the node is still at `previous.version` (Curator's
    /// `trySetValue`): `Ok(true)` when written, `Ok(false)` when someone wrote in between (or
    /// deleted the node). Read again with [`get`](Self::get) and retry, or use
    /// [`compare_and_set`](Self::compare_and_set), which returns the current value with the
    /// refusal.
    ///
    /// A reply lost to a connection loss is handled exactly: the write is sent again with the
    /// same version check, which tells whether the first one was applied (then the node has
    /// moved on from `previous.version`) — except when the node moved on to bytes that could
    /// be ours, and then [`Error::OutcomeUnknown`] says so instead of guessing.
    ///
    /// # Errors
    /// [`Error::OutcomeUnknown`] as above; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    #[doc(alias = "trySetValue")]
    pub async fn try_set(&self, previous: &VersionedValue<Vec<u8>>, new: &[u8]) -> Result<bool> {
        self.try_set_version(previous.version, new).await
    }

    pub(crate) async fn try_set_version(&self, version: i32, new: &[u8]) -> Result<bool> {
        Ok(matches!(cas::compare_and_set(&self.fw, &self.path, version, new, false).await?, Cas::Written(_)))
    }

    /// The value as it changes: the first item is the value when the stream is first polled,
    /// then one item per observed change (new data or a new version, also a deletion and
    /// re-creation). Changes that follow each other faster than a read are coalesced: every
    /// item is newer than the one before, intermediate values may be skipped (as with any
    /// ZooKeeper watch).
    ///
    /// A `Stream` rather than a `watch::Receiver` although only the latest value matters:
    /// each item is a read of the server's value (errors included) made while the stream is
    /// polled, so a value nobody follows costs no watch and no background task.
    ///
    /// # Notable behaviors
    /// * The watch is re-armed after every event, after reconnection and after a new session
    ///   (a session loss wakes the stream, which reads again): the stream survives them, and
    ///   yields only if the value actually changed meanwhile.
    /// * A missing node yields nothing; its creation yields the value.
    /// * Errors of the framework (such as [`Error::RetriesExhausted`] while the server is
    ///   unreachable) are yielded as items and the stream goes on (with a growing pause, at
    ///   most 2 s). The stream ends when the framework is closed.
    /// * Dropping the stream stops following the node; nothing is left on the server.
    #[doc(alias = "addListener")]
    pub fn changes(&self) -> impl Stream<Item = Result<VersionedValue<Vec<u8>>>> + Send + 'static {
        value_changes(self.fw.clone(), self.path.clone(), |_, bytes| Ok(bytes.to_vec()))
    }
}

/// What a read for the change stream saw.
enum Seen {
    Value(Vec<u8>, Stat, OneShotWatch),
    Missing(OneShotWatch),
    /// Created between our read and our watch: read again at once.
    Appeared,
}

/// The change stream of the node at `path`, decoding each new value with `decode`.
pub(crate) fn value_changes<T, D>(
    fw: Framework,
    path: String,
    decode: D,
) -> impl Stream<Item = Result<VersionedValue<T>>> + Send + 'static
where
    T: Send + 'static,
    D: Fn(&str, &[u8]) -> Result<T> + Send + 'static,
{
    async_stream::stream! {
        // the last modification yielded (`mzxid` changes with every write and every creation)
        let mut last: Option<i64> = None;
        let mut pause = Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
        loop {
            let session = fw.status().session_id;
            let seen = fw
                .request("watch", &path, |conn| {
                    let path = path.as_str();
                    async move {
                        match conn.watch_data(path).await {
                            Ok((data, stat, watcher)) => Ok(Seen::Value(data, stat, watcher)),
                            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => match conn.watch_exists(path).await? {
                                (None, watcher) => Ok(Seen::Missing(watcher)),
                                (Some(_), _) => Ok(Seen::Appeared),
                            },
                            Err(e) => Err(e),
                        }
                    }
                })
                .await;
            let watcher = match seen {
                Err(Error::Closed) => break,
                Err(e) => {
                    yield Err(e);
                    tokio::select! {
                        _ = pause.sleep() => {}
                        _ = fw.closed() => break,
                    }
                    continue;
                }
                Ok(Seen::Appeared) => continue,
                Ok(Seen::Missing(watcher)) => watcher,
                Ok(Seen::Value(data, stat, watcher)) => {
                    if last != Some(stat.mzxid) {
                        last = Some(stat.mzxid);
                        let value = fw.decode(&path, data).and_then(|data| decode(&path, &data));
                        yield value.map(|value| VersionedValue { version: stat.version, value });
                    }
                    watcher
                }
            };
            pause.reset();
            // any wake-up (event, session change, close) leads to a fresh read
            wait(&fw, watcher, None, session).await;
        }
    }
}
