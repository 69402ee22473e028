//! [`Stat`]: a node's metadata, as this crate's own type (the client library's is converted at
//! the edge, so that its upgrades are not ours to publish).

/// A node's metadata: ZooKeeper's `Stat`, field for field.
///
/// `czxid` is what the recipes use as a fencing token: the zxid of the node's creation,
/// strictly increasing over time across the ensemble.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// let (data, stat) = fw.get_data("/config/limits").await?;
/// println!("{} bytes, version {}, created at zxid {}", data.len(), stat.version, stat.czxid);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Stat {
    /// The zxid of the change that created the node.
    pub czxid: i64,
    /// The zxid of the change that last modified the node's data.
    pub mzxid: i64,
    /// When the node was created, in milliseconds since the epoch (the server's clock).
    pub ctime: i64,
    /// When the node's data was last modified, in milliseconds since the epoch.
    pub mtime: i64,
    /// How many times the node's data was changed (its data version).
    pub version: i32,
    /// How many times the node's children were changed.
    pub cversion: i32,
    /// How many times the node's ACL was changed.
    pub aversion: i32,
    /// The session that owns the node when it is ephemeral; 0 otherwise.
    pub ephemeral_owner: i64,
    /// The length of the node's data.
    pub data_length: i32,
    /// How many children the node has.
    pub num_children: i32,
    /// The zxid of the change that last modified the node's children.
    pub pzxid: i64,
}

impl Stat {
    /// The client library's stat as ours.
    pub(crate) fn from_client(s: &zookeeper_client::Stat) -> Stat {
        Stat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: s.ephemeral_owner,
            data_length: s.data_length,
            num_children: s.num_children,
            pzxid: s.pzxid,
        }
    }
}
