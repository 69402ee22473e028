//! The peer's `shedlock.*` commands: a participant that behaves as ShedLock's ZooKeeper
//! provider does (`ShedLockCommands.java`, compiled with the peer).

use std::time::Duration;

use super::parse::{millis, parse_num, words};
use super::CuratorPeer;
use crate::{Error, Result};

impl CuratorPeer {
    /// `shedlock.lock`: tries the ShedLock lock whose node is `lock_path` (`<root>/<name>`) as
    /// ShedLock's provider does, as holder `hid` of client `cid`, with the peer's clock moved by `clock_offset_ms`.
    /// `Some(lock_until)` (the instant written, as stored) when taken, `None` when held by
    /// someone else.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `cid` has no client, `hid` holds a lock already, or ZooKeeper
    /// failed; [`Error::InvalidArgument`] for an argument with whitespace.
    pub async fn shedlock_lock(
        &self,
        cid: &str,
        hid: &str,
        lock_path: &str,
        at_most_for: Duration,
        at_least_for: Duration,
        clock_offset_ms: i64,
    ) -> Result<Option<String>> {
        let (most, least, offset) =
            (millis(at_most_for).to_string(), millis(at_least_for).to_string(), clock_offset_ms.to_string());
        let answer = self.call(&words(&["shedlock.lock", cid, hid, lock_path, &most, &least, &offset])?).await?;
        match answer.split_once(' ') {
            Some(("true", until)) => Ok(Some(until.to_string())),
            None if answer == "false" => Ok(None),
            _ => Err(Error::Peer(format!("shedlock.lock: unexpected answer {answer:?}"))),
        }
    }

    /// `shedlock.unlock`: ShedLock's unlock of the lock `hid` holds — an unversioned
    /// `setData` of `max(now, taken + at_least_for)`. Returns the instant written.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` holds no lock or ZooKeeper failed.
    pub async fn shedlock_unlock(&self, cid: &str, hid: &str) -> Result<String> {
        self.call(&words(&["shedlock.unlock", cid, hid])?).await
    }

    /// `shedlock.islocked`: ShedLock's reading of the node `lock_path` (empty or unparsable
    /// data counts as locked), by the peer's clock moved by `clock_offset_ms`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when the node is missing or ZooKeeper failed.
    pub async fn shedlock_is_locked(&self, cid: &str, lock_path: &str, clock_offset_ms: i64) -> Result<bool> {
        let offset = clock_offset_ms.to_string();
        let answer = self.call(&words(&["shedlock.islocked", cid, lock_path, &offset])?).await?;
        super::parse::parse_bool(&answer)
    }

    /// `shedlock.format`: how ShedLock writes the instant `epoch_ms` (three fractional digits).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when the peer is gone.
    pub async fn shedlock_format(&self, epoch_ms: i64) -> Result<String> {
        self.call(&words(&["shedlock.format", &epoch_ms.to_string()])?).await
    }

    /// `shedlock.parse`: Java's `Instant.parse` of `text` (what ShedLock reads), in ms since
    /// the epoch; `None` when it does not parse.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when the peer is gone; [`Error::InvalidArgument`] for text with
    /// whitespace.
    pub async fn shedlock_parse(&self, text: &str) -> Result<Option<i64>> {
        match self.call(&words(&["shedlock.parse", text])?).await?.as_str() {
            "unparsable" => Ok(None),
            ms => parse_num(ms).map(Some),
        }
    }
}
