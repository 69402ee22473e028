//! [`CreateMode`]: how a node is created, as this crate's own type.

/// How [`Framework::create`](crate::Framework::create) and a
/// [`Transaction`](crate::Transaction) create a node: ZooKeeper's create modes. A node with a
/// time to live is created with [`create_with_ttl`](crate::Framework::create_with_ttl) in
/// `Persistent` or `PersistentSequential` mode.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::CreateMode;
///
/// let job = fw.create("/jobs/job-", b"payload", CreateMode::PersistentSequential).await?;
/// let me = fw.create("/workers/w1", b"", CreateMode::Ephemeral).await?;
/// println!("{} and {}", job.path, me.path);
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateMode {
    /// A node that stays until deleted.
    Persistent,
    /// A persistent node whose name gets a 10-digit sequence number appended, unique under
    /// its parent.
    PersistentSequential,
    /// A node deleted when the session that created it ends.
    Ephemeral,
    /// An ephemeral node with a sequence number appended.
    EphemeralSequential,
    /// A container: the server deletes it some time after its last child is gone (ZooKeeper
    /// 3.5.1+).
    Container,
}

impl CreateMode {
    /// The client library's mode.
    /// Whether the node goes with its session.
    pub(crate) fn is_ephemeral(self) -> bool {
        matches!(self, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }

    /// Whether the server appends a sequence to the name.
    pub(crate) fn is_sequential(self) -> bool {
        matches!(self, CreateMode::PersistentSequential | CreateMode::EphemeralSequential)
    }

    pub(crate) fn to_client(self) -> zookeeper_client::CreateMode {
        use zookeeper_client::CreateMode as Client;
        match self {
            CreateMode::Persistent => Client::Persistent,
            CreateMode::PersistentSequential => Client::PersistentSequential,
            CreateMode::Ephemeral => Client::Ephemeral,
            CreateMode::EphemeralSequential => Client::EphemeralSequential,
            CreateMode::Container => Client::Container,
        }
    }
}
