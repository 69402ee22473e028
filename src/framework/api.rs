//! The rest of ZooKeeper's API through the framework — namespace, retry loop and session
//! re-creation included: `multiRead`, `sync`, ACLs, TTL and container nodes, ephemerals,
//! descendant counts, `whoami`. Calls a server may lack answer [`Error::ServerUnsupported`] from
//! the session's [`Capabilities`](super::Capabilities) before anything is sent (an older
//! server closes the connection after refusing an operation).

use std::time::Duration;

use crate::framework::{Acl, AuthUser, Stat};

use super::paths::validate_path;
use super::session::Framework;
use super::CreatedNode;
use crate::error::{Error, Result, ServerFeature, ZooKeeperError};

/// The largest time to live ZooKeeper accepts (40 bits of milliseconds, about 34 years).
const MAX_TTL_MILLIS: u128 = 0xFF_FFFF_FFFF;

/// What a server with TTL nodes turned off makes of a TTL create.
pub(crate) const TTL_UNSUPPORTED: Error = Error::ServerUnsupported(ServerFeature::TtlNodes);

/// Checks a time to live: at least 1 ms, at most what ZooKeeper encodes (2^40 - 1 ms).
pub(crate) fn validate_ttl(ttl: Duration) -> Result<()> {
    let ms = ttl.as_millis();
    if ms == 0 || ms > MAX_TTL_MILLIS {
        return Err(Error::invalid("ttl", format!("a TTL must be between 1 ms and {MAX_TTL_MILLIS} ms, not {ttl:?}")));
    }
    Ok(())
}

/// Checks a create with a time to live: a valid TTL on a persistent mode.
pub(crate) fn validate_ttl_create(path: &str, mode: crate::CreateMode, ttl: Duration) -> Result<()> {
    validate_ttl(ttl)?;
    if !matches!(mode, crate::CreateMode::Persistent | crate::CreateMode::PersistentSequential) {
        return Err(Error::invalid("mode", format!("{path}: a TTL goes with a persistent mode, not {mode:?}")));
    }
    Ok(())
}

/// One read of a [`Framework::multi_read`].
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::ops::{ReadOp, ReadResult};
///
/// let answers = fw.multi_read(&[ReadOp::Data("/config/a"), ReadOp::Children("/services")]).await?;
/// for answer in answers {
///     match answer {
///         ReadResult::Data(data, stat) => println!("{} bytes, version {}", data.len(), stat.version),
///         ReadResult::Children(names) => println!("children: {names:?}"),
///         ReadResult::Failed(error) => println!("this read failed: {error}"),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOp<'a> {
    /// A node's data and stat.
    Data(&'a str),
    /// A node's children's names.
    Children(&'a str),
}

impl ReadOp<'_> {
    pub(crate) fn path(&self) -> &str {
        match self {
            ReadOp::Data(path) | ReadOp::Children(path) => path,
        }
    }
}

/// The answer to one [`ReadOp`], in the order of the reads.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::ops::{ReadOp, ReadResult};
///
/// // both reads are answered as of one point in the server's history
/// let answers = fw.multi_read(&[ReadOp::Data("/a"), ReadOp::Data("/b")]).await?;
/// let versions: Vec<Option<i32>> = answers
///     .iter()
///     .map(|a| match a {
///         ReadResult::Data(_, stat) => Some(stat.version),
///         _ => None,
///     })
///     .collect();
/// println!("{versions:?}");
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadResult {
    /// The data and stat of a [`ReadOp::Data`].
    Data(Vec<u8>, Stat),
    /// The children's names of a [`ReadOp::Children`].
    Children(Vec<String>),
    /// This read failed on its own (`NoNode`, `NoAuth`...); the others are answered.
    Failed(ZooKeeperError),
}

impl Framework {
    /// Several reads in one request (`multiRead`, ZooKeeper 3.6+), answered together as of
    /// one point in the server's history.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no reads; [`Error::InvalidPath`];
    /// [`Error::ServerUnsupported`] where the server has no `multiRead`; the errors of the retry
    /// loop. A read that fails alone is a [`ReadResult::Failed`]. On a
    /// [`compressed`](Self::compressed) handle, data is decompressed, and data that does not
    /// decompress fails the call as in [`get_data`](Self::get_data).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::ops::{ReadOp, ReadResult};
    /// let answers = fw.multi_read(&[ReadOp::Data("/config"), ReadOp::Children("/workers")]).await?;
    /// if let ReadResult::Children(workers) = &answers[1] {
    ///     println!("{} workers", workers.len());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn multi_read(&self, reads: &[ReadOp<'_>]) -> Result<Vec<ReadResult>> {
        if reads.is_empty() {
            return Err(Error::invalid("reads", "multi_read: no reads"));
        }
        for read in reads {
            validate_path(read.path())?;
        }
        if !self.capabilities().await?.multi_read {
            return Err(Error::ServerUnsupported(ServerFeature::MultiRead));
        }
        let answers = self.request("multi_read", "", |conn| async move { conn.multi_read(reads).await }).await?;
        answers
            .into_iter()
            .zip(reads)
            .map(|(answer, read)| match answer {
                ReadResult::Data(data, stat) => Ok(ReadResult::Data(self.decode(read.path(), data)?, stat)),
                other => Ok(other),
            })
            .collect()
    }

    /// Waits until the server this session is connected to has caught up with the leader on
    /// `path` (ZooKeeper's `sync`): a read after it sees every write committed before it.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; the errors of the retry loop.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn sync(&self, path: &str) -> Result<()> {
        validate_path(path)?;
        self.request("sync", path, |conn| async move { conn.sync(path).await }).await
    }

    /// The ACL of `path` and its stat.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; [`Error::ZooKeeper`] with `NoNode`; the errors of the retry loop.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        validate_path(path)?;
        self.request("get_acl", path, |conn| async move { conn.get_acl(path).await }).await
    }

    /// Replaces the ACL of `path`, if its ACL version (`aversion`) is `version` (`None`: any).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty ACL; [`Error::InvalidPath`];
    /// [`Error::ZooKeeper`] with `NoNode`, `BadVersion`, `NoAuth`, `InvalidAcl`; the errors of
    /// the retry loop.
    ///
    /// # Cancel safety
    /// Not cancel safe: the change may have been applied.
    pub async fn set_acl(&self, path: &str, acl: &[Acl], version: Option<i32>) -> Result<Stat> {
        validate_path(path)?;
        if acl.is_empty() {
            return Err(Error::invalid("acl", "set_acl: an empty ACL"));
        }
        self.request("set_acl", path, |conn| async move { conn.set_acl(path, acl, version).await }).await
    }

    /// Creates a persistent (or persistent sequential) node at `path` that the server deletes
    /// once it has had no child and no change for `ttl` (missing parents are made as
    /// containers). Needs `zookeeper.extendedTypesEnabled=true` on the server.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a TTL under 1 ms (zero included) or beyond ZooKeeper's largest, 2^40 − 1 ms (about 34
    /// years; `Duration::MAX` included), or on another mode; [`Error::ServerUnsupported`] where the server has TTL
    /// nodes off; otherwise as [`create`](Self::create) (which also says what a
    /// [`compressed`](Self::compressed) handle adds).
    ///
    /// # Cancel safety
    /// Not cancel safe: the node may have been created.
    pub async fn create_with_ttl(
        &self,
        path: &str,
        data: &[u8],
        mode: crate::CreateMode,
        ttl: Duration,
    ) -> Result<CreatedNode> {
        validate_path(path)?;
        validate_ttl_create(path, mode, ttl)?;
        if !self.capabilities().await?.ttl_nodes {
            return Err(TTL_UNSUPPORTED);
        }
        let data = &*self.encode(path, data)?;
        self.request_write(
            "create",
            path,
            |conn| async move { conn.create_with_parents(path, data, mode, Some(ttl)).await },
        )
        .await
    }

    /// Refreshes `path`'s modification time without changing its data — what keeps a TTL
    /// node (see [`create_with_ttl`](Self::create_with_ttl)) from being reaped. The data is
    /// written back only if nobody wrote it meanwhile (a write in between refreshed the node
    /// as well), so a concurrent change, such as a revocation request, is never overwritten.
    /// Returns the node's stat after the touch.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; `NoNode` (as [`Error::ZooKeeper`]) when the node is gone; the
    /// errors of the retry loop.
    ///
    /// # Cancel safety
    /// Cancel safe: the node is touched or not, its data never changes.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use std::time::Duration;
    /// use zk_recipes::CreateMode;
    /// fw.create_with_ttl("/jobs/alive", b"", CreateMode::Persistent, Duration::from_secs(30)).await?;
    /// fw.touch("/jobs/alive").await?; // another 30 s
    /// # Ok(()) }
    /// ```
    pub async fn touch(&self, path: &str) -> Result<Stat> {
        validate_path(path)?;
        self.request("touch", path, |conn| async move {
            let (data, stat) = conn.get_data(path).await?;
            match conn.set_data(path, &data, Some(stat.version)).await {
                Err(Error::ZooKeeper(ZooKeeperError::BadVersion)) => {
                    conn.exists(path).await?.ok_or(Error::ZooKeeper(ZooKeeperError::NoNode))
                }
                other => other,
            }
        })
        .await
    }

    /// The paths of this session's ephemeral nodes under `prefix` (a path prefix, not only
    /// a parent: `/locks/a` matches `/locks/a1/x`), relative to the namespace. ZooKeeper 3.6+.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; [`Error::ServerUnsupported`] on an older server; the errors of the
    /// retry loop.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn ephemerals(&self, prefix: &str) -> Result<Vec<String>> {
        validate_path(prefix)?;
        self.needs_3_6(ServerFeature::GetEphemerals).await?;
        self.request("ephemerals", prefix, |conn| async move { conn.ephemerals(prefix).await }).await
    }

    /// How many nodes are below `path` (all depths, `path` itself not counted). ZooKeeper
    /// 3.6+.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]; [`Error::ZooKeeper`] with `NoNode`; [`Error::ServerUnsupported`] on
    /// an older server; the errors of the retry loop.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn descendants_count(&self, path: &str) -> Result<usize> {
        validate_path(path)?;
        self.needs_3_6(ServerFeature::GetAllChildrenNumber).await?;
        self.request("descendants_count", path, |conn| async move { conn.descendants_count(path).await }).await
    }

    /// The identities this session is authenticated as (`whoami`, ZooKeeper 3.7+): the
    /// address it connects from (`ip`) and each scheme added with
    /// [`FrameworkBuilder::auth`](super::FrameworkBuilder::auth).
    ///
    /// # Errors
    /// [`Error::ServerUnsupported`] on an older server; the errors of the retry loop.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn whoami(&self) -> Result<Vec<AuthUser>> {
        if !self.capabilities().await?.whoami {
            return Err(Error::ServerUnsupported(ServerFeature::WhoAmI));
        }
        self.request("whoami", "", |conn| async move { conn.whoami().await }).await
    }

    /// [`Error::ServerUnsupported`] unless the server has the 3.6 operations (`multiRead` among them).
    async fn needs_3_6(&self, feature: ServerFeature) -> Result<()> {
        if self.capabilities().await?.multi_read {
            Ok(())
        } else {
            Err(Error::ServerUnsupported(feature))
        }
    }
}
