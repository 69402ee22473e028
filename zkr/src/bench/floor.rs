//! The floors: plain ZooKeeper requests of one session, without any recipe. One client doing
//! them back to back measures what the server (its commit path: the leader, the quorum, the
//! transaction log's fsync) allows one session, which every recipe's critical path contains.
//!
//! - `raw`: create an ephemeral node and delete it (2 writes per operation); with 1 client it
//!   is the **create+delete floor**, the reference of the locks (a hand-off needs a delete
//!   and the next holder's create is on the path too).
//! - `raw_set`: a versioned `setData` of one node (1 write per operation), each write
//!   expecting the version the previous one returned; with 1 client it is the **setData
//!   floor**, the reference of the counters (an increment is one versioned write).
//! - `raw_seq`: an ephemeral sequential create pipelined with a listing, then the delete.
//! - `raw_entity`: the requests of one uncontended per-entity sale and nothing else: an
//!   ephemeral sequential create in the task's own lock directory, pipelined with that
//!   directory's listing and a read of the task's stock node, then one `multi` setting the
//!   stock (versioned) and deleting the node — what the `entity` recipe sends when nobody
//!   contends, without a lock's logic. Its rate over the pipelined limit is the ceiling of
//!   any Curator-compatible lock on that workload (a lock must list after its create to know
//!   it holds, and a decrement reads before it writes).
//!
//! With N clients each client has its own node. `--peer zookeeper-client` runs `raw` and
//! `raw_set` on a session as zookeeper-client's users get it (Nagle's algorithm on).

use zk_recipes::zk::{Acls, Client, LockClient, LockOptions, LockPrefix};
use zk_recipes::CreateMode;
use zk_recipes::Framework;
use zk_recipes::ZooKeeperError;

use super::stock::{parse, STOCK};
use super::{fail, Failure};

/// Which floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    CreateDelete,
    Set,
    Seq,
    Entity,
}

/// One client's floor loop.
pub(crate) struct Raw {
    client: Client,
    kind: Kind,
    /// The node (create+delete, set), the directory (seq) or the lock directory (entity).
    path: String,
    /// The version the next versioned set expects.
    version: i32,
}

/// Creates the run's directory `dir` (persistent) unless it exists.
pub(crate) async fn ensure_dir(fw: &Framework, dir: &str) -> Result<(), Failure> {
    match fw.create(dir, b"", CreateMode::Persistent).await {
        Ok(_) | Err(zk_recipes::Error::ZooKeeper(ZooKeeperError::NodeExists)) => Ok(()),
        Err(e) => Err(fail(e)),
    }
}

impl Raw {
    /// Prepares client `k`'s loop under `dir` (created when missing): its node for `set`.
    pub async fn new(kind: Kind, client: Client, fw: &Framework, dir: &str, k: usize) -> Result<Raw, Failure> {
        ensure_dir(fw, dir).await?;
        let (path, version) = match kind {
            Kind::CreateDelete => (format!("{dir}/raw-{k}"), 0),
            Kind::Seq => (dir.to_string(), 0),
            Kind::Entity => {
                let lock_dir = format!("{dir}/e-{k}");
                ensure_dir(fw, &lock_dir).await?;
                let options = zk_recipes::zk::CreateMode::Persistent.with_acls(Acls::anyone_all());
                client.create(&stock_of(&lock_dir), STOCK.to_string().as_bytes(), &options).await.map_err(fail)?;
                (lock_dir, 0)
            }
            Kind::Set => {
                let path = format!("{dir}/set-{k}");
                let options = zk_recipes::zk::CreateMode::Persistent.with_acls(Acls::anyone_all());
                let (stat, _) = client.create(&path, &0u64.to_be_bytes(), &options).await.map_err(fail)?;
                (path, stat.version)
            }
        };
        Ok(Raw { client, kind, path, version })
    }

    /// One operation (one create+delete pair, one versioned set, one sequential round).
    pub async fn once(&mut self) -> zk_recipes::Result<()> {
        match self.kind {
            Kind::CreateDelete => {
                let options = zk_recipes::zk::CreateMode::Ephemeral.with_acls(Acls::anyone_all());
                self.client.create(&self.path, b"", &options).await?;
                self.client.delete(&self.path, None).await?;
            }
            Kind::Set => {
                let data = (i64::from(self.version) + 1).to_be_bytes();
                let stat = self.client.set_data(&self.path, &data, Some(self.version)).await?;
                self.version = stat.version;
            }
            Kind::Seq => {
                let prefix = format!("{}/n-", self.path);
                let options = zk_recipes::zk::CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
                let create = self.client.create(&prefix, b"", &options);
                let list = self.client.list_children(&self.path);
                let (created, listed) = tokio::join!(create, list);
                let (_, seq) = created?;
                listed?;
                self.client.delete(&format!("{prefix}{seq}"), None).await?;
            }
            Kind::Entity => {
                let (prefix, stock) = (format!("{}/_c_raw-lock-", self.path), stock_of(&self.path));
                let options = zk_recipes::zk::CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
                let create = self.client.create(&prefix, b"", &options);
                let list = self.client.list_children(&self.path);
                let read = self.client.get_data(&stock);
                let (created, listed, read) = tokio::join!(create, list, read);
                let (_, seq) = created?;
                listed?;
                let (data, stat) = read?;
                let left = parse(&stock, &data)?;
                let mut multi = self.client.new_multi_writer();
                multi.add_delete(&format!("{prefix}{seq}"), None)?;
                multi.add_set_data(&stock, (left - 1).to_string().as_bytes(), Some(stat.version))?;
                multi.commit().await.map_err(|e| zk_recipes::Error::from(zk_recipes::zk::Error::from(e)))?;
            }
        }
        Ok(())
    }

    /// Removes what the loop left (the `set` node; the others delete their nodes as they go).
    pub async fn finish(self) {
        match self.kind {
            Kind::Set => {
                let _ = self.client.delete(&self.path, None).await;
            }
            Kind::Entity => {
                let _ = self.client.delete(&stock_of(&self.path), None).await;
                let _ = self.client.delete(&self.path, None).await;
            }
            Kind::CreateDelete | Kind::Seq => {}
        }
    }
}

/// The stock node of a `raw_entity` task: beside its lock directory.
fn stock_of(lock_dir: &str) -> String {
    format!("{lock_dir}-stock")
}

/// zookeeper-client's own lock recipe on `dir`, in Curator's layout (`lock-` nodes, container
/// parents): the peer `zookeeper-client` of the mutex and entity recipes. Dropping the lock
/// releases it (its delete is ordered before the session's next request).
pub(crate) async fn zk_client_lock<'c>(client: &'c Client, dir: &str) -> zk_recipes::Result<LockClient<'c>> {
    let options = LockOptions::new(Acls::anyone_all())
        .with_ancestor_options(zk_recipes::zk::CreateMode::Container.with_acls(Acls::anyone_all()))?;
    Ok(client.lock(LockPrefix::new_curator(dir, "lock-")?, b"", options).await?)
}
