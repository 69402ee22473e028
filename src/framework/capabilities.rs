//! What the connected server supports, probed once per session without writing anything.
//!
//! Each probe is a request the server answers without a change: a create under a parent that
//! does not exist (answered `NoNode` when the node type is known), a `multiRead` of a missing
//! node, a persistent watch on a missing path (removed at once), a `whoami`. A server that
//! does not know an operation answers `Unimplemented` — and servers before 3.6 then close the
//! connection — so the probes go from the oldest feature to the newest and stop at the first
//! refusal: what came later is not there either.

use std::sync::Arc;

use tokio::sync::OnceCell;

use super::request::Conn;
use super::session::Framework;
use super::{CreateMode, ReadOp};
use crate::error::{Error, Result};
use crate::ZooKeeperError;

/// What the server of the current session supports ([`Framework::capabilities`]).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// let caps = fw.capabilities().await?;
/// if !caps.ttl_nodes {
///     eprintln!("TTL nodes are off: start ZooKeeper with -Dzookeeper.extendedTypesEnabled=true");
/// }
/// println!("persistent watches: {}, multiRead: {}", caps.persistent_watches, caps.multi_read);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Capabilities {
    /// Container nodes (ZooKeeper 3.5.1+).
    pub containers: bool,
    /// Persistent nodes with a time to live (3.5.3+, and only when the server runs with
    /// `zookeeper.extendedTypesEnabled=true`).
    pub ttl_nodes: bool,
    /// `multiRead`: several reads in one request (3.6+).
    pub multi_read: bool,
    /// Persistent and persistent-recursive watches, `addWatch` (3.6+).
    pub persistent_watches: bool,
    /// `whoami`: the identities the session is authenticated as (3.7+).
    pub whoami: bool,
}

/// The capabilities of one session, probed on first use (kept in the session's extension
/// slot, so a new session probes again: it may be on another server).
#[derive(Debug, Default)]
pub(crate) struct Probed(OnceCell<Capabilities>);

/// A path whose parent does not exist, so that a create there changes nothing.
fn nowhere() -> String {
    format!("/zk-recipes-probe-{}/probe", uuid::Uuid::new_v4().simple())
}

/// Whether the server knows what was asked: `Ok(true)` for an answer that says so,
/// `Ok(false)` for `Unimplemented`, the error otherwise (the connection, say).
fn known<T>(answer: Result<T>) -> Result<bool> {
    match answer {
        Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(true),
        Err(Error::ZooKeeper(ZooKeeperError::Unimplemented)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Creating a node of `mode` (with a TTL when `ttl`) where its parent is missing: `NoNode`
/// means the type is known.
async fn creates(conn: &Conn, mode: CreateMode, ttl: bool) -> Result<bool> {
    let ttl = ttl.then_some(std::time::Duration::from_secs(60));
    match conn.create_open(&nowhere(), mode, ttl).await {
        // a server with TTL turned off may refuse the type as a bad argument
        Err(Error::ZooKeeper(ZooKeeperError::BadArguments(_))) if ttl.is_some() => Ok(false),
        answer => known(answer),
    }
}

async fn probe(conn: Conn) -> Result<Capabilities> {
    let mut found =
        Capabilities { containers: creates(&conn, CreateMode::Container, false).await?, ..Default::default() };
    if !found.containers {
        return Ok(found);
    }
    // TTL is optional even where the server has it: it is no step in the order
    found.ttl_nodes = creates(&conn, CreateMode::Persistent, true).await?;
    found.multi_read = known(conn.multi_read(&[ReadOp::Data(&nowhere())]).await)?;
    if !found.multi_read {
        return Ok(found);
    }
    // dropping the watch removes it from the server
    found.persistent_watches = known(conn.add_watch(&nowhere(), false).await)?;
    if !found.persistent_watches {
        return Ok(found);
    }
    found.whoami = known(conn.whoami().await)?;
    Ok(found)
}

impl Framework {
    /// What the server of the current session supports: probed once per session (the first
    /// call sends a few requests that change nothing), then answered from memory; a new
    /// session (after an expiry, perhaps on another server) probes again.
    ///
    /// Recipes use it to choose a code path or to answer [`Error::ServerUnsupported`] up front.
    ///
    /// # Errors
    /// What the framework's retry loop gives up with when the server cannot be asked
    /// ([`Error::ZooKeeper`](crate::Error::ZooKeeper) with a connection error, and the like), or
    /// [`Error::Closed`](crate::Error::Closed).
    ///
    /// # Cancel safety
    /// Cancel safe: the probes only read; a cancelled probe is sent again by the next call.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// if !fw.capabilities().await?.ttl_nodes {
    ///     eprintln!("this ensemble runs without zookeeper.extendedTypesEnabled");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// [`Error::ServerUnsupported`]: crate::Error::ServerUnsupported
    pub async fn capabilities(&self) -> Result<Capabilities> {
        let probed: Arc<Probed> = self.session_extension();
        probed.0.get_or_try_init(|| self.request("capabilities", "", probe)).await.copied()
    }
}
