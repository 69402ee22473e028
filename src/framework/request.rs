//! The one way to the server: [`Conn`], one attempt's typed requests in this crate's own types.
//!
//! Every request the framework and its recipes send goes through a `Conn` handed to them by the
//! retry loop ([`Framework::request`], [`Framework::request_write`]): the loop brings the
//! deadline, the retry policy, the connection wait, the metrics and the logs; the `Conn` brings
//! what applies to each request — the namespace (its client is rooted there), the handle's ACL
//! for the nodes it creates, and the request-size limit
//! ([`FrameworkBuilder::max_request_size`](super::FrameworkBuilder::max_request_size)). A
//! request over the limit is never sent: the server would close the connection, and every hold
//! of the process with it. Its error, [`Error::TooLarge`], is not retried.
//!
//! A request is sent when its method is called, not when its future is first polled: requests
//! made one after the other go out in that order, in one round trip when they are awaited
//! together (`tokio::join!`), and a request made after another sees its effect (a listing made
//! after a create shows the node).

use std::future::Future;
use std::time::Duration;

use zookeeper_client::{Client, Error as ZkError, MultiReadResult};

use super::persistent::PersistentWatch;
use super::session::Framework;
use super::stat::Stat;
use super::watches::OneShotWatch;
use super::{Acl, AuthUser, CreateMode, CreatedNode, ReadOp, ReadResult};
use crate::error::{Error, Result};

/// What the server reads of a request, in bytes (jute's encoding, the 4-byte length in front
/// not counted): what a server's `jute.maxbuffer` bounds.
#[derive(Debug, Clone, Copy)]
struct Size(usize);

impl Size {
    /// A request's header: its xid and its type.
    const HEADER: Size = Size(8);
    /// A `multi`'s header before each operation and at its end: type, done flag, error.
    const MULTI_HEADER: usize = 4 + 1 + 4;

    fn int(self) -> Size {
        Size(self.0.saturating_add(4))
    }

    fn long(self) -> Size {
        Size(self.0.saturating_add(8))
    }

    fn flag(self) -> Size {
        Size(self.0.saturating_add(1))
    }

    /// A string or a buffer: its length, then its bytes.
    fn bytes(self, len: usize) -> Size {
        Size(self.0.saturating_add(4).saturating_add(len))
    }

    fn plus(self, other: usize) -> Size {
        Size(self.0.saturating_add(other))
    }
}

/// A write of a `multi`, as [`Conn::multi`] takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WriteOp<'a> {
    /// The node's version is `version`.
    Check { path: &'a str, version: i32 },
    /// Creates `path` (a sequential mode appends the sequence) with `data` as given.
    Create { path: &'a str, data: &'a [u8], mode: CreateMode, ttl: Option<Duration> },
    /// Sets `path`'s data (at `version`, if given).
    SetData { path: &'a str, data: &'a [u8], version: Option<i32> },
    /// Deletes `path` (at `version`, if given).
    Delete { path: &'a str, version: Option<i32> },
    /// Creates `path`, empty and persistent, with the framework's ACL whatever the handle's:
    /// a node the framework shares between handles (a transaction marker, their parent).
    CreateShared { path: &'a str },
}

impl WriteOp<'_> {
    pub(crate) fn path(&self) -> &str {
        match self {
            WriteOp::Check { path, .. }
            | WriteOp::Create { path, .. }
            | WriteOp::SetData { path, .. }
            | WriteOp::Delete { path, .. }
            | WriteOp::CreateShared { path } => path,
        }
    }
}

/// One operation's answer in a committed `multi`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteAnswer {
    Check,
    Created(CreatedNode),
    Set(Stat),
    Deleted,
    /// An answer of a kind this client does not know.
    Unknown,
}

/// Why a `multi` was not applied.
#[derive(Debug)]
pub(crate) enum MultiError {
    /// The request failed as a whole (connection loss, a refused size...): retry as any request.
    Request(Error),
    /// The server refused the operation at `index` (counted from 0); none was applied.
    Refused { index: usize, error: crate::ZooKeeperError },
}

/// A change of the ensemble's members, as [`Conn::reconfig`] takes it: servers as their
/// `server.N=...` lines, leaving servers by id.
#[derive(Debug, Clone, Copy)]
pub(crate) enum EnsembleChange<'a> {
    /// Servers join and leave; the others stay.
    Incremental { joining: &'a [String], leaving: &'a [String] },
    /// The ensemble becomes exactly these servers.
    Replace { members: &'a [String] },
}

/// One attempt's way to the server (see the module docs): the current session's client, and the
/// handle whose ACL and limits its requests follow. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Conn {
    fw: Framework,
    client: Client,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("session", &format_args!("{:#x}", self.session_id())).finish()
    }
}

/// Where ZooKeeper keeps the ensemble's configuration (outside any namespace).
const CONFIG_NODE: &str = "/zookeeper/config";

/// The client's error as ours.
fn ours(e: ZkError) -> Error {
    Error::from_client(e)
}

impl Conn {
    pub(crate) fn new(fw: &Framework, client: Client) -> Conn {
        Conn { fw: fw.clone(), client }
    }

    /// The id of the session the requests go out on.
    pub(crate) fn session_id(&self) -> i64 {
        self.client.session_id().0
    }

    /// The length of `path` as the server reads it: with the namespace in front.
    fn wire_len(&self, path: &str) -> usize {
        match (self.fw.namespace(), path) {
            (Some(ns), "/") => ns.len(),
            (Some(ns), path) => ns.len().saturating_add(path.len()),
            (None, path) => path.len(),
        }
    }

    /// [`Error::TooLarge`] for a request of `size` to `path` over the limit.
    fn fits(&self, path: &str, size: Size) -> Result<()> {
        let limit = self.fw.max_request_size();
        if size.0 > limit {
            tracing::debug!(path, size = size.0, limit, "a request over the size limit: not sent");
            return Err(Error::TooLarge { path: path.to_string(), size: size.0, limit });
        }
        Ok(())
    }

    /// A request whose body is `path` and then `rest` bytes.
    fn fits_path(&self, path: &str, rest: usize) -> Result<()> {
        self.fits(path, Size::HEADER.bytes(self.wire_len(path)).plus(rest))
    }

    /// The size of a create's body (`CreateRequest`, or `CreateTTLRequest` with a TTL).
    fn create_size(&self, path: &str, data: usize, acl: &[zookeeper_client::Acl], ttl: bool) -> Size {
        let acl =
            acl.iter().fold(Size(4), |size, entry| size.int().bytes(entry.scheme().len()).bytes(entry.id().len()));
        let size = Size(0).bytes(self.wire_len(path)).bytes(data).plus(acl.0).int();
        if ttl {
            size.long()
        } else {
            size
        }
    }

    /// Creates `path` with `data` (as given: the caller compresses what is to be compressed),
    /// in `mode`, with a time to live for a persistent mode; the handle's ACL. A sequential
    /// mode appends the sequence: the node's path is returned with its stat.
    ///
    /// # Errors
    /// [`Error::TooLarge`] (nothing sent); the server's answer (`NodeExists`, `NoNode` for a
    /// missing parent...).
    pub(crate) fn create<'a>(
        &'a self,
        path: &'a str,
        data: &[u8],
        mode: CreateMode,
        ttl: Option<Duration>,
    ) -> impl Future<Output = Result<CreatedNode>> + Send + 'a {
        let sent = self.send_create(path, data, mode, ttl);
        async move {
            let (stat, sequence) = sent?.await.map_err(ours)?;
            let path = if mode.is_sequential() { format!("{path}{sequence}") } else { path.to_string() };
            Ok(CreatedNode { path, stat: Stat::from_client(&stat) })
        }
    }

    #[allow(clippy::type_complexity)]
    fn send_create<'a>(
        &'a self,
        path: &'a str,
        data: &[u8],
        mode: CreateMode,
        ttl: Option<Duration>,
    ) -> Result<
        impl Future<Output = std::result::Result<(zookeeper_client::Stat, zookeeper_client::CreateSequence), ZkError>>
            + Send
            + 'a,
    > {
        let acl = self.fw.acl_for(path).map_err(ours)?;
        self.fits(path, Size::HEADER.plus(self.create_size(path, data.len(), acl.list(), ttl.is_some()).0))?;
        let options = match ttl {
            Some(ttl) => acl.options(mode.to_client()).with_ttl(ttl),
            None => acl.options(mode.to_client()),
        };
        Ok(self.client.create(path, data, &options))
    }

    /// [`create`](Self::create), creating missing parents (as containers, the framework's
    /// ACL) when the parent is absent. A server that refuses TTL nodes answers `Unimplemented`
    /// before it looks for the parent, so no parent is made then.
    pub(crate) async fn create_with_parents(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        ttl: Option<Duration>,
    ) -> Result<CreatedNode> {
        match self.create(path, data, mode, ttl).await {
            Err(Error::ZooKeeper(crate::ZooKeeperError::NoNode)) => {
                self.make_parents(super::paths::parent(path)).await?;
                self.create(path, data, mode, ttl).await
            }
            other => other,
        }
    }

    /// Creates `dir` and its missing ancestors as containers (`mkdir -p`), re-creating a
    /// namespace node that vanished.
    pub(crate) async fn make_parents(&self, dir: &str) -> Result<()> {
        self.fw.make_parents(&self.client, dir).await.map_err(ours)
    }

    /// Sets `path`'s data to `data` (as given), at `version` if given; the node's new stat.
    ///
    /// # Errors
    /// [`Error::TooLarge`] (nothing sent); the server's answer (`NoNode`, `BadVersion`).
    pub(crate) fn set_data<'a>(
        &'a self,
        path: &'a str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'a {
        let sent = self.fits_path(path, 4 + data.len() + 4).map(|()| self.client.set_data(path, data, version));
        async move { Ok(Stat::from_client(&sent?.await.map_err(ours)?)) }
    }

    /// Deletes `path` (at `version`, if given).
    ///
    /// # Errors
    /// [`Error::TooLarge`] for a path over the limit; the server's answer (`NoNode`,
    /// `NotEmpty`, `BadVersion`).
    pub(crate) fn delete<'a>(
        &'a self,
        path: &'a str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + 'a {
        let sent = self.fits_path(path, 4).map(|()| self.client.delete(path, version));
        async move { sent?.await.map_err(ours) }
    }

    /// Applies `ops` together or not at all (ZooKeeper's `multi`), measured as one request.
    ///
    /// # Errors
    /// [`MultiError::Request`] with [`Error::TooLarge`] (nothing sent) or the request's
    /// failure; [`MultiError::Refused`] for the operation the server refused.
    pub(crate) fn multi<'a>(
        &'a self,
        ops: &[WriteOp<'_>],
    ) -> impl Future<Output = std::result::Result<Vec<WriteAnswer>, MultiError>> + Send + 'a {
        let sent = self.send_multi(ops);
        async move {
            let answers = match sent.map_err(MultiError::Request)?.await {
                Ok(answers) => answers,
                Err(zookeeper_client::MultiWriteError::OperationFailed { index, source }) => {
                    return Err(MultiError::Refused { index, error: crate::ZooKeeperError::from_client(&source) })
                }
                Err(zookeeper_client::MultiWriteError::RequestFailed { source }) => {
                    return Err(MultiError::Request(ours(source)))
                }
            };
            Ok(answers
                .into_iter()
                .map(|answer| match answer {
                    zookeeper_client::MultiWriteResult::Check => WriteAnswer::Check,
                    zookeeper_client::MultiWriteResult::Delete => WriteAnswer::Deleted,
                    zookeeper_client::MultiWriteResult::SetData { stat } => WriteAnswer::Set(Stat::from_client(&stat)),
                    zookeeper_client::MultiWriteResult::Create { path, stat } => {
                        WriteAnswer::Created(CreatedNode { path, stat: Stat::from_client(&stat) })
                    }
                    _ => WriteAnswer::Unknown,
                })
                .collect())
        }
    }

    #[allow(clippy::type_complexity)]
    fn send_multi<'a>(
        &'a self,
        ops: &[WriteOp<'_>],
    ) -> Result<
        impl Future<
                Output = std::result::Result<
                    Vec<zookeeper_client::MultiWriteResult>,
                    zookeeper_client::MultiWriteError,
                >,
            > + Send
            + 'a,
    > {
        let mut multi = self.client.new_multi_writer();
        let mut size = Size::HEADER.plus(Size::MULTI_HEADER);
        for op in ops {
            size = size.plus(Size::MULTI_HEADER);
            match *op {
                WriteOp::Check { path, version } => {
                    size = size.bytes(self.wire_len(path)).int();
                    multi.add_check_version(path, version).map_err(ours)?;
                }
                WriteOp::Create { path, data, mode, ttl } => {
                    let acl = self.fw.acl_for(path).map_err(ours)?;
                    size = size.plus(self.create_size(path, data.len(), acl.list(), ttl.is_some()).0);
                    let options = match ttl {
                        Some(ttl) => acl.options(mode.to_client()).with_ttl(ttl),
                        None => acl.options(mode.to_client()),
                    };
                    multi.add_create(path, data, &options).map_err(ours)?;
                }
                WriteOp::CreateShared { path } => {
                    let acl = self.fw.framework_acl_for(path).map_err(ours)?;
                    size = size.plus(self.create_size(path, 0, acl.list(), false).0);
                    multi
                        .add_create(path, &[], &acl.options(zookeeper_client::CreateMode::Persistent))
                        .map_err(ours)?;
                }
                WriteOp::SetData { path, data, version } => {
                    size = size.bytes(self.wire_len(path)).bytes(data.len()).int();
                    multi.add_set_data(path, data, version).map_err(ours)?;
                }
                WriteOp::Delete { path, version } => {
                    size = size.bytes(self.wire_len(path)).int();
                    multi.add_delete(path, version).map_err(ours)?;
                }
            }
        }
        self.fits(ops.first().map_or("/", WriteOp::path), size)?;
        Ok(multi.commit())
    }

    /// `path`'s data and stat.
    pub(crate) fn get_data<'a>(&'a self, path: &str) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + 'a {
        let sent = self.fits_path(path, 1).map(|()| self.client.get_data(path));
        async move {
            let (data, stat) = sent?.await.map_err(ours)?;
            Ok((data, Stat::from_client(&stat)))
        }
    }

    /// `path`'s data and stat, and a watch that fires when its data changes or it is deleted
    /// (none is left on a missing node: `NoNode`).
    pub(crate) fn watch_data<'a>(
        &'a self,
        path: &'a str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneShotWatch)>> + Send + 'a {
        let sent = self.fits_path(path, 1).map(|()| self.client.get_and_watch_data(path));
        async move {
            let (data, stat, watcher) = sent?.await.map_err(ours)?;
            Ok((data, Stat::from_client(&stat), OneShotWatch::new(watcher)))
        }
    }

    /// `path`'s stat, `None` when it does not exist.
    pub(crate) fn exists<'a>(&'a self, path: &str) -> impl Future<Output = Result<Option<Stat>>> + Send + 'a {
        let sent = self.fits_path(path, 1).map(|()| self.client.check_stat(path));
        async move { Ok(sent?.await.map_err(ours)?.as_ref().map(Stat::from_client)) }
    }

    /// `path`'s stat if it exists, and a watch that fires when it is created, changed or
    /// deleted.
    pub(crate) fn watch_exists<'a>(
        &'a self,
        path: &'a str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneShotWatch)>> + Send + 'a {
        let sent = self.fits_path(path, 1).map(|()| self.client.check_and_watch_stat(path));
        async move {
            let (stat, watcher) = sent?.await.map_err(ours)?;
            Ok((stat.as_ref().map(Stat::from_client), OneShotWatch::new(watcher)))
        }
    }

    /// The names of `path`'s children (unsorted).
    pub(crate) fn children<'a>(&'a self, path: &str) -> impl Future<Output = Result<Vec<String>>> + Send + 'a {
        let sent = self.fits_path(path, 1).map(|()| self.client.list_children(path));
        async move { sent?.await.map_err(ours) }
    }

    /// The names of `path`'s children, and a watch that fires when a child is created or
    /// deleted, or the node is deleted.
    pub(crate) fn watch_children<'a>(
        &'a self,
        path: &'a str,
    ) -> impl Future<Output = Result<(Vec<String>, OneShotWatch)>> + Send + 'a {
        let sent = self.fits_path(path, 1).map(|()| self.client.list_and_watch_children(path));
        async move {
            let (children, watcher) = sent?.await.map_err(ours)?;
            Ok((children, OneShotWatch::new(watcher)))
        }
    }

    /// Several reads answered together as of one point in the server's history (`multiRead`,
    /// ZooKeeper 3.6+), data as stored. A read that fails alone is a [`ReadResult::Failed`].
    pub(crate) fn multi_read<'a>(
        &'a self,
        reads: &[ReadOp<'_>],
    ) -> impl Future<Output = Result<Vec<ReadResult>>> + Send + 'a {
        let sent = self.send_multi_read(reads);
        async move {
            Ok(sent?
                .await
                .map_err(ours)?
                .into_iter()
                .map(|answer| match answer {
                    MultiReadResult::Data { data, stat } => ReadResult::Data(data, Stat::from_client(&stat)),
                    MultiReadResult::Children { children } => ReadResult::Children(children),
                    MultiReadResult::Error { err } => ReadResult::Failed(crate::ZooKeeperError::from_client(&err)),
                    _ => ReadResult::Failed(crate::ZooKeeperError::Other("multiRead: an unknown answer".into())),
                })
                .collect())
        }
    }

    fn send_multi_read<'a>(
        &'a self,
        reads: &[ReadOp<'_>],
    ) -> Result<impl Future<Output = std::result::Result<Vec<MultiReadResult>, ZkError>> + Send + 'a> {
        let mut reader = self.client.new_multi_reader();
        let mut size = Size::HEADER.plus(Size::MULTI_HEADER);
        for read in reads {
            size = size.plus(Size::MULTI_HEADER).bytes(self.wire_len(read.path())).flag();
            match read {
                ReadOp::Data(path) => reader.add_get_data(path).map_err(ours)?,
                ReadOp::Children(path) => reader.add_get_children(path).map_err(ours)?,
            }
        }
        self.fits(reads.first().map_or("/", ReadOp::path), size)?;
        Ok(reader.commit())
    }

    /// `path`'s ACL and stat.
    pub(crate) fn get_acl<'a>(&'a self, path: &'a str) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + 'a {
        let sent = self.fits_path(path, 0).map(|()| self.client.get_acl(path));
        async move {
            let (acl, stat) = sent?.await.map_err(ours)?;
            Ok((acl.iter().map(Acl::from_client).collect(), Stat::from_client(&stat)))
        }
    }

    /// Replaces `path`'s ACL, if its ACL version is `version` (`None`: any).
    pub(crate) fn set_acl<'a>(
        &'a self,
        path: &'a str,
        acl: &[Acl],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'a {
        let acl = Acl::to_client_list(acl);
        let entries = acl.iter().fold(4usize, |size, entry| {
            size.saturating_add(12).saturating_add(entry.scheme().len()).saturating_add(entry.id().len())
        });
        let sent = self.fits_path(path, entries.saturating_add(4)).map(|()| self.client.set_acl(path, &acl, version));
        async move { Ok(Stat::from_client(&sent?.await.map_err(ours)?)) }
    }

    /// The paths of this session's ephemeral nodes under the path prefix `prefix` (3.6+).
    pub(crate) fn ephemerals<'a>(&'a self, prefix: &'a str) -> impl Future<Output = Result<Vec<String>>> + Send + 'a {
        let sent = self.fits_path(prefix, 0).map(|()| self.client.list_ephemerals(prefix));
        async move { sent?.await.map_err(ours) }
    }

    /// How many nodes are below `path`, all depths (3.6+).
    pub(crate) fn descendants_count<'a>(&'a self, path: &'a str) -> impl Future<Output = Result<usize>> + Send + 'a {
        let sent = self.fits_path(path, 0).map(|()| self.client.count_descendants_number(path));
        async move { sent?.await.map_err(ours) }
    }

    /// The identities the session is authenticated as (`whoami`, 3.7+).
    pub(crate) fn whoami(&self) -> impl Future<Output = Result<Vec<AuthUser>>> + Send + '_ {
        let sent = self.client.list_auth_users();
        async move { Ok(sent.await.map_err(ours)?.iter().map(AuthUser::from_client).collect()) }
    }

    /// Brings the server this session is connected to up to date with the leader, before a read of the
    /// evidence of a write whose reply was lost (a transaction's marker, a protected node).
    ///
    /// After a lost reply the session may have moved to another server, and that write may still
    /// be on its way: proposed by the leader, not yet applied where we read. A read there misses
    /// it, and the write is sent a second time — applied twice. A `sync` is answered only once the
    /// server has applied everything the leader proposed before it; a request of the old
    /// connection that reaches the leader later is refused (`SessionMoved`, or `SessionExpired`
    /// for a session that ended). So a read after it tells the outcome for certain.
    pub(crate) async fn caught_up(&self, path: &str) -> Result<()> {
        self.sync(path).await
    }

    /// Waits until the server has caught up with the leader on `path` (ZooKeeper's `sync`).
    pub(crate) fn sync<'a>(&'a self, path: &'a str) -> impl Future<Output = Result<()>> + Send + 'a {
        let sent = self.fits_path(path, 0).map(|()| self.client.sync(path));
        async move { sent?.await.map_err(ours) }
    }

    /// Adds a persistent watch on `path` (`addWatch`, ZooKeeper 3.6+), recursive (the path and
    /// every node below it) or not (the node's data, existence and children). The path need
    /// not exist. The watch holds this session's client (see [`PersistentWatch`]).
    ///
    /// # Errors
    /// [`Error::TooLarge`] (nothing sent); the server's answer (`Unimplemented` from a server
    /// before 3.6, `NoAuth`...).
    pub(crate) fn add_watch<'a>(
        &'a self,
        path: &'a str,
        recursive: bool,
    ) -> impl Future<Output = Result<PersistentWatch>> + Send + 'a {
        let mode = match recursive {
            true => zookeeper_client::AddWatchMode::PersistentRecursive,
            false => zookeeper_client::AddWatchMode::Persistent,
        };
        let sent = self.fits_path(path, 4).map(|()| self.client.watch(path, mode));
        async move { Ok(PersistentWatch::new(sent?.await.map_err(ours)?, self.client.clone())) }
    }

    /// Creates `path`, empty, in `mode` (with a time to live when `ttl` is given), open to
    /// anyone whatever the handle's ACL: a probe of whether the server knows the mode, sent
    /// where the parent is missing so that nothing is made (a server that knows the mode
    /// answers `NoNode`).
    ///
    /// # Errors
    /// [`Error::TooLarge`] (nothing sent); the server's answer (`NoNode`, `Unimplemented`...)
    /// or the client's refusal of the arguments (`BadArguments`).
    pub(crate) fn create_open<'a>(
        &'a self,
        path: &'a str,
        mode: CreateMode,
        ttl: Option<Duration>,
    ) -> impl Future<Output = Result<()>> + Send + 'a {
        let acls = zookeeper_client::Acls::anyone_all();
        let size = Size::HEADER.plus(self.create_size(path, 0, &acls, ttl.is_some()).0);
        let options = mode.to_client().with_acls(acls);
        let options = match ttl {
            Some(ttl) => options.with_ttl(ttl),
            None => options,
        };
        let sent = self.fits(path, size).map(|()| self.client.create(path, &[], &options));
        async move { sent?.await.map(drop).map_err(ours) }
    }

    /// The ensemble's configuration (`/zookeeper/config`, whatever the namespace) and its
    /// stat.
    pub(crate) fn config(&self) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + '_ {
        let sent = self.client.get_config();
        async move {
            let (data, stat) = sent.await.map_err(ours)?;
            Ok((data, Stat::from_client(&stat)))
        }
    }

    /// Changes the ensemble's members (`reconfig`, ZooKeeper 3.5+), if its configuration is
    /// still the version `expected` (`None`: whatever it is); the new configuration and its
    /// stat.
    ///
    /// # Errors
    /// [`Error::TooLarge`] (nothing sent); the server's answer (`ReconfigDisabled`,
    /// `BadVersion`, `NoAuth`, `NewConfigNoQuorum`, `BadArguments`...).
    pub(crate) fn reconfig<'a>(
        &'a self,
        change: EnsembleChange<'a>,
        expected: Option<i64>,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + 'a {
        // a list is sent as one string, its non-empty items joined by commas
        let list = |servers: &[String]| {
            servers.iter().filter(|s| !s.is_empty()).map(|s| s.len().saturating_add(1)).sum::<usize>().saturating_sub(1)
        };
        let (update, size) = match change {
            EnsembleChange::Incremental { joining, leaving } => (
                zookeeper_client::EnsembleUpdate::Incremental {
                    joinings: joining.iter().map(String::as_str),
                    leavings: leaving.iter().map(String::as_str),
                },
                Size::HEADER.bytes(list(joining)).bytes(list(leaving)).int(),
            ),
            EnsembleChange::Replace { members } => (
                zookeeper_client::EnsembleUpdate::New { ensemble: members.iter().map(String::as_str) },
                Size::HEADER.int().int().bytes(list(members)),
            ),
        };
        let sent = self.fits(CONFIG_NODE, size.long()).map(|()| self.client.update_ensemble(update, expected));
        async move {
            let (data, stat) = sent?.await.map_err(ours)?;
            Ok((data, Stat::from_client(&stat)))
        }
    }
}
