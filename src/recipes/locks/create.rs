//! Our contender node: created (protected, sequential) by the engine itself, on the first
//! attempt together with the first listing; and deleted if the acquire is abandoned — the one
//! place where cancellation is handled ([`Pending`]).

use std::time::Duration;

use super::driver::Request;
use super::listings::{list_and_read, Listed};
use super::local_queue::CreateOrder;
use super::session::SessionLocks;
use crate::error::{Error, Result};
use crate::framework::{Conn, CreateMode, CreatedNode, Framework, ProtectedName, Stat};

/// Deletes our node if the acquire is abandoned (cancelled, timed out, failed) before it is
/// handed to a guard: by path when we know it, else by the protection prefix.
pub(super) struct Pending<'a> {
    fw: &'a Framework,
    name: Option<ProtectedName>,
    node: Option<(String, i64)>,
    armed: bool,
}

impl<'a> Pending<'a> {
    pub(super) fn new(fw: &'a Framework) -> Self {
        Pending { fw, name: None, node: None, armed: false }
    }

    /// A create of `name` is about to be sent: from here on, a drop deletes what it made.
    fn arm(&mut self, name: &ProtectedName) {
        if self.name.is_none() {
            self.name = Some(name.clone());
        }
        self.armed = true;
    }

    /// The create made `path`, owned by the session `owner`.
    fn created(&mut self, path: String, owner: i64) {
        self.node = Some((path, owner));
    }

    /// Our node is the caller's now (a guard's, or gone): a drop deletes nothing.
    pub(super) fn forget_node(&mut self) {
        self.node = None;
        self.armed = false;
    }

    /// Our node's path, taken: the caller deletes it.
    pub(super) fn take_node(&mut self) -> Option<String> {
        self.node.take().map(|(path, _)| path)
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match (self.node.take(), self.name.take()) {
            (Some((path, owner)), _) => self.fw.delete_in_background(path, Some(owner)),
            (None, Some(name)) => self.fw.delete_protected_in_background(name),
            (None, None) => {}
        }
    }
}

/// Creates our node with `data` (the request's, as the framework stores it); on the first
/// attempt together with the listing (one round trip). Also
/// returns the session our node belongs to: its ephemeral owner, or for a TTL node (which
/// has none) the session that created it.
///
/// `order`: the local queue's create order, given up once our create says that our node exists.
pub(super) async fn create_node(
    fw: &Framework,
    req: &Request<'_>,
    data: &[u8],
    name: &ProtectedName,
    pending: &mut Pending<'_>,
    pipelined: bool,
    order: &mut Option<CreateOrder>,
) -> Result<(CreatedNode, i64, Option<Listed>)> {
    let ttl = req.driver.server_ttl();
    let mode = if ttl.is_some() { CreateMode::PersistentSequential } else { CreateMode::EphemeralSequential };
    let owner = |stat: &Stat, session: i64| if ttl.is_some() { session } else { stat.ephemeral_owner };
    let mut maybe_created = false;
    if pipelined && fw.wait_connected(Duration::ZERO).await.is_ok() {
        let conn = fw.conn()?;
        pending.arm(name);
        let path = name.path();
        let create = placed(conn.create(&path, data, mode, ttl), order);
        match create_and_list(fw, &conn, req, create).await? {
            (Ok(node), listed) => {
                let owner = owner(&node.stat, conn.session_id());
                pending.created(node.path.clone(), owner);
                return Ok((node, owner, listed.ok()));
            }
            (Err(Error::ZooKeeper(crate::ZooKeeperError::NoNode)), _) => {}
            (Err(e), _) if e.is_retryable() => maybe_created = true,
            (Err(e), _) => return Err(e),
        }
    }
    pending.arm(name);
    let session = fw.status().session_id;
    let node = fw.create_protected_name_ttl(name, data, mode, ttl, maybe_created).await?;
    let owner = owner(&node.stat, session);
    pending.created(node.path.clone(), owner);
    Ok((node, owner, None))
}

/// The answer of a create.
type Created = Result<CreatedNode>;

/// Our create (sent already: its future is made), then a listing sent behind it on the same
/// session (zookeeper-client sends requests in the order their futures are made): our own
/// with the prefetch read behind it, or one shared with the local contenders of the directory
/// (`listings.rs`).
async fn create_and_list(
    fw: &Framework,
    conn: &Conn,
    req: &Request<'_>,
    create: impl std::future::Future<Output = Created>,
) -> Result<(Created, Result<Listed>)> {
    match req.driver.prefetch() {
        Some(read) => {
            let listed = list_and_read(conn, req.dir, read);
            let (created, listed) = fw.answered(async { tokio::join!(create, listed) }).await?;
            Ok((created, listed.map(|(l, p)| (l, Some(p)))))
        }
        None => {
            let listed = SessionLocks::of(fw).listings.list(conn, req.dir);
            let (created, listed) = fw.answered(async { tokio::join!(create, listed) }).await?;
            Ok((created, listed.map(|l| (l, None))))
        }
    }
}

/// Our create's answer; the local queue's create order is given up once it says that our
/// node exists (its sequence is below every create sent after). Kept when it failed: our node
/// is created again (or found) with the order held, so that no later local acquire's create
/// (a pipelined one right after a reconnect, while our retry still looks for the node it may
/// have made) sorts before ours.
async fn placed<T>(create: impl std::future::Future<Output = Result<T>>, order: &mut Option<CreateOrder>) -> Result<T> {
    let created = create.await;
    if created.is_ok() {
        drop(order.take());
    }
    created
}

/// Creates one protected node (any mode; its data as the framework stores it) cancel-safely: if the future is dropped, whatever
/// was created is deleted in the background.
pub(crate) async fn create_owned(
    fw: &Framework,
    dir: &str,
    name: &str,
    data: &[u8],
    mode: CreateMode,
) -> Result<CreatedNode> {
    let protected = ProtectedName::new(dir, name);
    let data = fw.encode(&protected.path(), data)?;
    let mut pending = Pending::new(fw);
    pending.arm(&protected);
    let node = fw.create_protected_name(&protected, &data, mode, false).await?;
    pending.forget_node();
    Ok(node)
}
