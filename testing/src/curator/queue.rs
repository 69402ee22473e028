//! The peer's `queue.*` commands: Curator's `SimpleDistributedQueue`, `DistributedQueue`,
//! `DistributedIdQueue`, `DistributedPriorityQueue` and `DistributedDelayQueue` (raw byte
//! items, puts in the foreground).

use std::time::Duration;

use super::parse::{hex, millis, parse_num, unhex, words};
use super::CuratorPeer;
use crate::{Error, Result};

/// Which Curator queue a `queue.*` command uses, and the put's argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CuratorQueueKind {
    /// `SimpleDistributedQueue` (`qn-` nodes).
    Simple,
    /// `DistributedQueue` (`queue-` nodes).
    Distributed,
    /// `DistributedIdQueue`, with the item's id.
    Id(String),
    /// `DistributedPriorityQueue`, with the item's priority.
    Priority(i32),
    /// `DistributedDelayQueue`, with the item's time (ms since the epoch).
    Delay(u64),
}

impl CuratorQueueKind {
    fn name(&self) -> &'static str {
        match self {
            CuratorQueueKind::Simple => "simple",
            CuratorQueueKind::Distributed => "distributed",
            CuratorQueueKind::Id(_) => "id",
            CuratorQueueKind::Priority(_) => "priority",
            CuratorQueueKind::Delay(_) => "delay",
        }
    }

    fn arg(&self) -> String {
        match self {
            CuratorQueueKind::Simple | CuratorQueueKind::Distributed => "-".into(),
            CuratorQueueKind::Id(id) => id.clone(),
            CuratorQueueKind::Priority(p) => p.to_string(),
            CuratorQueueKind::Delay(at) => at.to_string(),
        }
    }
}

impl CuratorPeer {
    /// `queue.put`: puts `items` through client `cid` into the queue at `path`: a simple queue
    /// offers each; the other kinds write one node (`putMulti` for several items; an id queue
    /// takes the first item only).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator refuses; [`Error::InvalidArgument`] for no items or an
    /// empty one.
    pub async fn queue_put(&self, cid: &str, path: &str, kind: &CuratorQueueKind, items: &[&[u8]]) -> Result<()> {
        if items.is_empty() || items.iter().any(|i| i.is_empty()) {
            return Err(Error::InvalidArgument("queue_put needs non-empty items".into()));
        }
        let items: Vec<String> = items.iter().map(|i| hex(i)).collect();
        let arg = kind.arg();
        self.call(&words(&["queue.put", cid, path, kind.name(), &arg, &items.join(",")])?).await.map(drop)
    }

    /// `queue.simple.poll`: Curator's `SimpleDistributedQueue.poll(timeout)`: the item, `None`
    /// when the timeout passed.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator fails.
    pub async fn queue_simple_poll(&self, cid: &str, path: &str, timeout: Duration) -> Result<Option<Vec<u8>>> {
        let answer = self.call(&words(&["queue.simple.poll", cid, path, &millis(timeout).to_string()])?).await?;
        if answer == "none" {
            return Ok(None);
        }
        Ok(Some(unhex(&answer)?.unwrap_or_default()))
    }

    /// `queue.consume.start`: starts a Curator consumer of `kind` (its put argument is
    /// ignored) on `path`, in lock-safe mode with `lock_path`, kept as holder `hid`; it records
    /// every item it is handed (see [`queue_consumed`](Self::queue_consumed)).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` is in use or Curator fails; [`Error::InvalidArgument`] for
    /// the simple kind (it has no consumer).
    pub async fn queue_consume_start(
        &self,
        cid: &str,
        hid: &str,
        path: &str,
        kind: &CuratorQueueKind,
        lock_path: Option<&str>,
    ) -> Result<()> {
        if *kind == CuratorQueueKind::Simple {
            return Err(Error::InvalidArgument("a simple queue has no Curator consumer".into()));
        }
        let cmd = words(&["queue.consume.start", cid, hid, path, kind.name(), lock_path.unwrap_or("-")])?;
        self.call(&cmd).await.map(drop)
    }

    /// `queue.consume.items`: every item the consumer `hid` was handed so far, in order.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no consumer or the answer does not parse.
    pub async fn queue_consumed(&self, cid: &str, hid: &str) -> Result<Vec<Vec<u8>>> {
        let answer = self.call(&words(&["queue.consume.items", cid, hid])?).await?;
        let mut it = answer.split(' ');
        let n: usize = parse_num(it.next().unwrap_or_default())?;
        let items = it.map(|w| Ok(unhex(w)?.unwrap_or_default())).collect::<Result<Vec<_>>>()?;
        if items.len() != n {
            return Err(Error::Peer(format!("expected {n} items, got {answer:?}")));
        }
        Ok(items)
    }

    /// `queue.consume.close`: closes the consumer `hid`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no consumer.
    pub async fn queue_consume_close(&self, cid: &str, hid: &str) -> Result<()> {
        self.call(&words(&["queue.consume.close", cid, hid])?).await.map(drop)
    }

    /// `queue.remove`: Curator's `DistributedIdQueue.remove(id)`: how many items it removed.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator fails.
    pub async fn queue_remove(&self, cid: &str, path: &str, id: &str) -> Result<usize> {
        parse_num(&self.call(&words(&["queue.remove", cid, path, id])?).await?)
    }
}
