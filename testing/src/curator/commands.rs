//! The peer's commands, one method each (the module documentation of `curator` lists them).

use std::time::Duration;

use super::parse::{hex, millis, parse_atomic, parse_bool, parse_cache_content, parse_cache_events, parse_num, words};
use super::{AtomicResult, CuratorCacheEvent, CuratorCacheNode, CuratorPeer};
use crate::Result;

impl CuratorPeer {
    /// `ping`: checks that the JVM answers.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when it does not.
    pub async fn ping(&self) -> Result<()> {
        self.call("ping").await.map(drop)
    }

    /// `connect`: starts a Curator client `cid` with a 10 s session timeout and waits until it
    /// is connected. Returns its session id.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `cid` is taken or no connection is made within the session timeout.
    pub async fn connect(&self, cid: &str, connect_string: &str) -> Result<i64> {
        parse_num(&self.call(&words(&["connect", cid, connect_string])?).await?)
    }

    /// `connect` with an explicit session timeout. Returns the session id.
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::connect`].
    pub async fn connect_with_session_timeout(
        &self,
        cid: &str,
        connect_string: &str,
        session_timeout: Duration,
    ) -> Result<i64> {
        let ms = millis(session_timeout).to_string();
        parse_num(&self.call(&words(&["connect", cid, connect_string, &ms])?).await?)
    }

    /// `connect` over TLS: client `cid` trusts `certs`' CA and presents their client
    /// certificate (mutual TLS), through ZooKeeper's Netty client socket
    /// (`zookeeper.client.secure`, PEM key and trust stores). Give it a TLS connect string (for
    /// example [`TestingServer::secure_connect_string`](crate::TestingServer::secure_connect_string)).
    /// Returns the session id.
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::connect`].
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub async fn connect_tls(
        &self,
        cid: &str,
        connect_string: &str,
        session_timeout: Duration,
        certs: &crate::TestCertificates,
    ) -> Result<i64> {
        let ms = millis(session_timeout).to_string();
        let ca = certs.ca_path().display().to_string();
        let key_store = certs.client_key_store_path().display().to_string();
        parse_num(&self.call(&words(&["connect", cid, connect_string, &ms, &ca, &key_store])?).await?)
    }

    /// `close`: closes client `cid` (its session ends, its ephemeral nodes go) and forgets its
    /// holders.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) for an unknown client.
    pub async fn close(&self, cid: &str) -> Result<()> {
        self.call(&words(&["close", cid])?).await.map(drop)
    }

    /// `session`: the current ZooKeeper session id of client `cid` (compare with a node's
    /// `ephemeralOwner`).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) for an unknown client.
    pub async fn session_id(&self, cid: &str) -> Result<i64> {
        parse_num(&self.call(&words(&["session", cid])?).await?)
    }

    /// `mutex.acquire`: an `InterProcessMutex` on `path`, held by holder `hid` (re-entrant per
    /// holder). `Ok(false)` when `timeout` passed.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws or `hid` is in use for something else.
    pub async fn mutex_acquire(&self, cid: &str, hid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["mutex.acquire", cid, hid, path, &ms])?).await?)
    }

    /// `mutex.release`: releases one hold of holder `hid`; returns the holds left.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` holds no mutex.
    pub async fn mutex_release(&self, cid: &str, hid: &str) -> Result<u32> {
        parse_num(&self.call(&words(&["mutex.release", cid, hid])?).await?)
    }

    /// `rw.read.acquire`: the read lock of an `InterProcessReadWriteLock` on `path`.
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::mutex_acquire`].
    pub async fn rw_read_acquire(&self, cid: &str, hid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["rw.read.acquire", cid, hid, path, &ms])?).await?)
    }

    /// `rw.write.acquire`: the write lock of an `InterProcessReadWriteLock` on `path`.
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::mutex_acquire`].
    pub async fn rw_write_acquire(&self, cid: &str, hid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["rw.write.acquire", cid, hid, path, &ms])?).await?)
    }

    /// `rw.release`: releases the lock that holder `hid` acquired last; returns the number of
    /// read/write holds it still has.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` holds nothing.
    pub async fn rw_release(&self, cid: &str, hid: &str) -> Result<u32> {
        parse_num(&self.call(&words(&["rw.release", cid, hid])?).await?)
    }

    /// `rw.release <kind>`: releases one hold of the read (`write == false`) or write lock of
    /// holder `hid` (e.g. the write lock after a downgrade); returns the holds left.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` holds no such lock.
    pub async fn rw_release_kind(&self, cid: &str, hid: &str, write: bool) -> Result<u32> {
        let kind = if write { "write" } else { "read" };
        parse_num(&self.call(&words(&["rw.release", cid, hid, kind])?).await?)
    }

    /// `sem.acquire`: `count` leases of an `InterProcessSemaphoreV2` on `path` with
    /// `max_leases`, kept by holder `hid`. `Ok(false)` when `timeout` passed.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws or `hid` is in use for something else.
    pub async fn sem_acquire(
        &self,
        cid: &str,
        hid: &str,
        path: &str,
        max_leases: u32,
        count: u32,
        timeout: Duration,
    ) -> Result<bool> {
        let (max, n, ms) = (max_leases.to_string(), count.to_string(), millis(timeout).to_string());
        let answer = self.call(&words(&["sem.acquire", cid, hid, path, &max, &n, &ms])?).await?;
        if answer == "false" {
            Ok(false)
        } else {
            parse_num::<u32>(&answer).map(|_| true)
        }
    }

    /// `sem.release`: returns all leases of holder `hid`; returns how many.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` holds no semaphore.
    pub async fn sem_release(&self, cid: &str, hid: &str) -> Result<u32> {
        parse_num(&self.call(&words(&["sem.release", cid, hid])?).await?)
    }

    /// `semmutex.acquire`: an `InterProcessSemaphoreMutex` on `path` (not re-entrant).
    ///
    /// # Errors
    ///
    /// As [`CuratorPeer::mutex_acquire`].
    pub async fn semmutex_acquire(&self, cid: &str, hid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["semmutex.acquire", cid, hid, path, &ms])?).await?)
    }

    /// `semmutex.release`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` does not hold it.
    pub async fn semmutex_release(&self, cid: &str, hid: &str) -> Result<()> {
        self.call(&words(&["semmutex.release", cid, hid])?).await.map(drop)
    }

    /// `sharedcount.get`: the value of a `SharedCount` on `path` (seeded with 0 if missing).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws.
    pub async fn shared_count_get(&self, cid: &str, path: &str) -> Result<i32> {
        parse_num(&self.call(&words(&["sharedcount.get", cid, path])?).await?)
    }

    /// `sharedcount.add`: adds `delta` with a `trySetCount` loop; returns the new value.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws.
    pub async fn shared_count_add(&self, cid: &str, path: &str, delta: i32) -> Result<i32> {
        let delta = delta.to_string();
        parse_num(&self.call(&words(&["sharedcount.add", cid, path, &delta])?).await?)
    }

    /// `atomiclong.get`: a `DistributedAtomicLong` read.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws.
    pub async fn atomic_long_get(&self, cid: &str, path: &str) -> Result<AtomicResult<i64>> {
        parse_atomic(&self.call(&words(&["atomiclong.get", cid, path])?).await?)
    }

    /// `atomiclong.add`: `DistributedAtomicLong::add` with `RetryNTimes(1000, 1)`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws.
    pub async fn atomic_long_add(&self, cid: &str, path: &str, delta: i64) -> Result<AtomicResult<i64>> {
        let delta = delta.to_string();
        parse_atomic(&self.call(&words(&["atomiclong.add", cid, path, &delta])?).await?)
    }

    /// `atomicint.get`: a `DistributedAtomicInteger` read.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws.
    pub async fn atomic_int_get(&self, cid: &str, path: &str) -> Result<AtomicResult<i32>> {
        parse_atomic(&self.call(&words(&["atomicint.get", cid, path])?).await?)
    }

    /// `atomicint.add`: `DistributedAtomicInteger::add` with `RetryNTimes(1000, 1)`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws.
    pub async fn atomic_int_add(&self, cid: &str, path: &str, delta: i32) -> Result<AtomicResult<i32>> {
        let delta = delta.to_string();
        parse_atomic(&self.call(&words(&["atomicint.add", cid, path, &delta])?).await?)
    }

    /// `latch.start`: starts a `LeaderLatch` on `path` with `participant_id`, kept by `hid`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` is in use or Curator throws.
    pub async fn latch_start(&self, cid: &str, hid: &str, path: &str, participant_id: &str) -> Result<()> {
        self.call(&words(&["latch.start", cid, hid, path, participant_id])?).await.map(drop)
    }

    /// `latch.has`: whether the latch of `hid` has leadership now.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` has no latch.
    pub async fn latch_has(&self, cid: &str, hid: &str) -> Result<bool> {
        parse_bool(&self.call(&words(&["latch.has", cid, hid])?).await?)
    }

    /// `latch.await`: waits up to `timeout` for leadership.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` has no latch.
    pub async fn latch_await(&self, cid: &str, hid: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["latch.await", cid, hid, &ms])?).await?)
    }

    /// `latch.leader`: the participant id of the current leader (empty when there is none).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` has no latch or Curator throws.
    pub async fn latch_leader(&self, cid: &str, hid: &str) -> Result<String> {
        self.call(&words(&["latch.leader", cid, hid])?).await
    }

    /// `latch.ourpath`: the full path of the latch's own node.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` has no latch.
    pub async fn latch_our_path(&self, cid: &str, hid: &str) -> Result<String> {
        self.call(&words(&["latch.ourpath", cid, hid])?).await
    }

    /// `latch.close`: closes the latch (its node is deleted, leadership passes on).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` has no latch or Curator throws.
    pub async fn latch_close(&self, cid: &str, hid: &str) -> Result<()> {
        self.call(&words(&["latch.close", cid, hid])?).await.map(drop)
    }

    /// `dbarrier.enter`: enters a `DistributedDoubleBarrier` on `path` for `member_qty`
    /// members; `Ok(false)` when `timeout` passed first.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws or `hid` is in use for something else.
    pub async fn dbarrier_enter(
        &self,
        cid: &str,
        hid: &str,
        path: &str,
        member_qty: u32,
        timeout: Duration,
    ) -> Result<bool> {
        let (n, ms) = (member_qty.to_string(), millis(timeout).to_string());
        parse_bool(&self.call(&words(&["dbarrier.enter", cid, hid, path, &n, &ms])?).await?)
    }

    /// `dbarrier.leave`: leaves the double barrier entered by `hid`; `Ok(false)` on timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` did not enter one or Curator throws.
    pub async fn dbarrier_leave(&self, cid: &str, hid: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["dbarrier.leave", cid, hid, &ms])?).await?)
    }

    /// `barrier.set`: `DistributedBarrier::setBarrier` on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws.
    pub async fn barrier_set(&self, cid: &str, path: &str) -> Result<()> {
        self.call(&words(&["barrier.set", cid, path])?).await.map(drop)
    }

    /// `barrier.remove`: `DistributedBarrier::removeBarrier` on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws.
    pub async fn barrier_remove(&self, cid: &str, path: &str) -> Result<()> {
        self.call(&words(&["barrier.remove", cid, path])?).await.map(drop)
    }

    /// `barrier.wait`: waits up to `timeout` until the barrier on `path` is removed.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws.
    pub async fn barrier_wait(&self, cid: &str, path: &str, timeout: Duration) -> Result<bool> {
        let ms = millis(timeout).to_string();
        parse_bool(&self.call(&words(&["barrier.wait", cid, path, &ms])?).await?)
    }

    /// `node.create`: creates a persistent node at `path` with `data` (missing parents are
    /// created as persistent nodes with empty data, Curator's `creatingParentsIfNeeded`).
    /// Returns the new node's `czxid`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws, e.g. `NodeExistsException`.
    pub async fn node_create(&self, cid: &str, path: &str, data: &[u8]) -> Result<i64> {
        parse_num(&self.call(&words(&["node.create", cid, path, &hex(data)])?).await?)
    }

    /// `node.set`: sets the data of `path` (any version). Returns the new data version.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws, e.g. `NoNodeException`.
    pub async fn node_set(&self, cid: &str, path: &str, data: &[u8]) -> Result<i32> {
        parse_num(&self.call(&words(&["node.set", cid, path, &hex(data)])?).await?)
    }

    /// `node.delete`: deletes `path` (any version); with `recursive`, its descendants first
    /// (Curator's `deletingChildrenIfNeeded`).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when Curator throws, e.g. `NoNodeException`, or
    /// `NotEmptyException` without `recursive`.
    pub async fn node_delete(&self, cid: &str, path: &str, recursive: bool) -> Result<()> {
        let mut parts = vec!["node.delete", cid, path];
        if recursive {
            parts.push("recursive");
        }
        self.call(&words(&parts)?).await.map(drop)
    }

    /// `cache.start`: builds a `CuratorCache` on `path` (`CuratorCache.build(client, path)`,
    /// keeping data) with a listener that records its `initialized()` call, and starts it,
    /// kept by `hid`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` is in use or Curator throws.
    pub async fn cache_start(&self, cid: &str, hid: &str, path: &str) -> Result<()> {
        self.call(&words(&["cache.start", cid, hid, path])?).await.map(drop)
    }

    /// `cache.initialized`: whether the cache's listener has been told `initialized()`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` has no cache.
    pub async fn cache_initialized(&self, cid: &str, hid: &str) -> Result<bool> {
        parse_bool(&self.call(&words(&["cache.initialized", cid, hid])?).await?)
    }

    /// `cache.content`: every node the cache holds now, sorted by path.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` has no cache or the answer does not parse.
    pub async fn cache_content(&self, cid: &str, hid: &str) -> Result<Vec<CuratorCacheNode>> {
        parse_cache_content(&self.call(&words(&["cache.content", cid, hid])?).await?)
    }

    /// `cache.events`: the listener events since the previous call (or since `cache.start`),
    /// in the order Curator delivered them, including those of the initial load.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` has no cache or the answer does not parse.
    pub async fn cache_events(&self, cid: &str, hid: &str) -> Result<Vec<CuratorCacheEvent>> {
        parse_cache_events(&self.call(&words(&["cache.events", cid, hid])?).await?)
    }

    /// `cache.close`: closes the cache and forgets it.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`](crate::Error::Peer) when `hid` has no cache.
    pub async fn cache_close(&self, cid: &str, hid: &str) -> Result<()> {
        self.call(&words(&["cache.close", cid, hid])?).await.map(drop)
    }
}
