//! `entity`: a lock per entity (per SKU, per order, per account), the shape services use.
//!
//! One session, T tasks, each looping: pick one of P entities (uniformly, or Zipf-skewed with
//! `--skew zipf`), take that entity's mutex, decrement its stock under the lock (a read and a
//! versioned write of one node: the stock-oversell scenario), release. Most acquires are
//! uncontended; what they measure is how well one session pipelines many short locks.
//! zk-recipes reads the stock with the acquire (`InterProcessMutex::acquire_and_read`: the read
//! pipelined behind the listing that says it holds) and commits the decrement and the release
//! together (`LockGuard::commit_and_release`, without a marker: one write for both);
//! zookeeper-client's lock reads after it holds, writes, then releases.
//!
//! Layout under the run's directory: `stock/<k>` (persistent, ASCII decimal, starting at
//! [`STOCK`]) and the lock paths `lock/<k>` (containers, created before the run as in a service
//! that has run a while: the window measures locking, not each directory's first creation). After the window every entity's stock must equal
//! [`STOCK`] less the decrements its tasks made: an entity that does not is a violation, as is
//! a versioned write refused (somebody else wrote while we held).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use zk_recipes::ZooKeeperError;

use futures_util::future::join_all;
use tokio::time::Instant;
use zk_recipes::zk::Client;
use zk_recipes::CreateMode;
use zk_recipes::{Error, Framework, InterProcessMutex};

use super::floor::{ensure_dir, zk_client_lock};
use super::stock::{parse, STOCK};
use super::{fail, Failure, Shared};

/// What the tasks of one run share: the entities, their locks and what was sold of each.
pub(crate) struct Entities {
    dir: String,
    /// One mutex handle per entity (zk-recipes), shared by the tasks: every acquire is a hold
    /// of its own whoever calls it.
    locks: Vec<InterProcessMutex>,
    sold: Vec<AtomicI64>,
    /// Cumulative weights of the Zipf skew (rank k has weight 1/(k+1)); `None`: uniform.
    zipf: Option<Vec<f64>>,
}

/// How a task takes an entity's lock and writes its stock.
enum Peer {
    /// zk-recipes' `InterProcessMutex`, the stock through the framework.
    Recipes(Framework),
    /// zookeeper-client's own lock recipe (`Client::lock`) and plain requests.
    ZkClient(Client),
}

/// One task's loop state.
pub(crate) struct EntityTask {
    entities: Arc<Entities>,
    peer: Peer,
    rng: fastrand::Rng,
}

/// Entity `k`'s stock node under the run's directory `dir`.
fn stock_path(dir: &str, k: usize) -> String {
    format!("{dir}/stock/{k}")
}

/// Entity `k`'s lock directory under the run's directory `dir`.
fn lock_path(dir: &str, k: usize) -> String {
    format!("{dir}/lock/{k}")
}

/// The skew of the entity picked: `uniform` or `zipf` (exponent 1).
fn zipf_weights(skew: &str, paths: usize) -> Result<Option<Vec<f64>>, Failure> {
    match skew {
        "uniform" => Ok(None),
        "zipf" => {
            let mut total = 0.0;
            let cdf = (0..paths)
                .map(|k| {
                    total += 1.0 / (k as f64 + 1.0);
                    total
                })
                .collect();
            Ok(Some(cdf))
        }
        other => Err((2, format!("--skew must be uniform or zipf, not {other:?}"))),
    }
}

impl Entities {
    /// Creates the run's `paths` stock nodes and lock directories under `dir` (pipelined,
    /// untimed).
    pub async fn prepare(fw: &Framework, dir: &str, paths: usize, skew: &str) -> Result<Arc<Entities>, Failure> {
        if paths == 0 {
            return Err((2, "--paths must be >= 1".into()));
        }
        let zipf = zipf_weights(skew, paths)?;
        ensure_dir(fw, dir).await?;
        ensure_dir(fw, &format!("{dir}/stock")).await?;
        ensure_dir(fw, &format!("{dir}/lock")).await?;
        // each entity's stock node and its lock directory (a container), which exists as in a
        // service that has run a while: the window measures locking, not each directory's
        // first creation
        let stock = STOCK.to_string();
        let created = join_all((0..paths).map(|k| {
            let (stock_path, lock_path) = (stock_path(dir, k), lock_path(dir, k));
            let stock = stock.as_bytes();
            async move {
                let stock_node = fw.create(&stock_path, stock, CreateMode::Persistent);
                let lock_dir = fw.create(&lock_path, b"", CreateMode::Container);
                tokio::try_join!(stock_node, lock_dir)
            }
        }))
        .await;
        created.into_iter().collect::<Result<Vec<_>, _>>().map_err(fail)?;
        let locks = (0..paths)
            .map(|k| InterProcessMutex::new(fw, &lock_path(dir, k)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| (2, e.to_string()))?;
        let sold = (0..paths).map(|_| AtomicI64::new(0)).collect();
        Ok(Arc::new(Entities { dir: dir.to_string(), locks, sold, zipf }))
    }

    /// Task `idx`'s loop over these entities, on zk-recipes or on a zookeeper-client session.
    pub fn task(self: &Arc<Self>, fw: &Framework, plain: Option<Client>, idx: usize) -> EntityTask {
        let peer = match plain {
            Some(client) => Peer::ZkClient(client),
            None => Peer::Recipes(fw.clone()),
        };
        EntityTask { entities: self.clone(), peer, rng: fastrand::Rng::with_seed(idx as u64) }
    }

    fn stock(&self, k: usize) -> String {
        stock_path(&self.dir, k)
    }

    /// Every entity's stock read back: the entities whose stock is not [`STOCK`] less what was
    /// sold of them (printed on stderr). Then the stock nodes and the lock directories are
    /// deleted (best effort: a directory not empty yet is a container the server reaps).
    pub async fn verify_and_clean(&self, fw: &Framework) -> Result<u64, Failure> {
        let read = join_all((0..self.sold.len()).map(|k| async move { fw.get_data(&self.stock(k)).await })).await;
        let mut bad = 0;
        for (k, r) in read.into_iter().enumerate() {
            let (data, _) = r.map_err(fail)?;
            let left = parse(&self.stock(k), &data).map_err(fail)?;
            let sold = self.sold[k].load(Ordering::SeqCst);
            if STOCK - left != sold {
                eprintln!("entity {k}: stock {left}, but {sold} sold of {STOCK}");
                bad += 1;
            }
        }
        let _ = join_all((0..self.sold.len()).map(|k| async move {
            let (stock, lock_dir) = (self.stock(k), lock_path(&self.dir, k));
            tokio::join!(fw.delete(&stock), fw.delete(&lock_dir))
        }))
        .await;
        let _ = fw.delete(&format!("{}/stock", self.dir)).await;
        Ok(bad)
    }
}

impl EntityTask {
    /// Another task (number `idx`) on the same entities and session.
    pub fn fork(&self, idx: usize) -> EntityTask {
        let peer = match &self.peer {
            Peer::Recipes(fw) => Peer::Recipes(fw.clone()),
            Peer::ZkClient(client) => Peer::ZkClient(client.clone()),
        };
        EntityTask { entities: self.entities.clone(), peer, rng: fastrand::Rng::with_seed(idx as u64) }
    }

    /// The shared entities (for the check after the window).
    pub fn entities(&self) -> &Arc<Entities> {
        &self.entities
    }

    fn pick(&mut self) -> usize {
        let n = self.entities.sold.len();
        match &self.entities.zipf {
            None => self.rng.usize(0..n),
            Some(cdf) => {
                let x = self.rng.f64() * cdf[n - 1];
                cdf.partition_point(|&c| c < x).min(n - 1)
            }
        }
    }

    /// One sale: lock an entity, decrement its stock, release. Returns when it started holding.
    pub async fn once(&mut self, shared: &Shared) -> zk_recipes::Result<Instant> {
        let k = self.pick();
        let stock = self.entities.stock(k);
        let held;
        let written = match &self.peer {
            Peer::Recipes(fw) => {
                // the stock read pipelined behind the listing that says we hold
                let (guard, read) = self.entities.locks[k].acquire_and_read(&stock).await?;
                held = Instant::now();
                let read = read.ok_or(Error::ZooKeeper(ZooKeeperError::NoNode))?;
                let left = parse(&stock, &read.value)?;
                // the decrement and the release in one commit (one write, where a set then a
                // release are two); at most once, without a marker node
                let sell = fw.transaction().set_data(&stock, (left - 1).to_string().as_bytes(), Some(read.version));
                match guard.commit_and_release(sell.without_marker()).await {
                    Err(Error::Transaction { source, .. }) => Err(Error::ZooKeeper(source)),
                    other => other.map(drop),
                }
            }
            Peer::ZkClient(client) => {
                let lock = zk_client_lock(client, &lock_path(&self.entities.dir, k)).await?;
                held = Instant::now();
                let (data, stat) = client.get_data(&stock).await?;
                let left = parse(&stock, &data)?;
                let written = client.set_data(&stock, (left - 1).to_string().as_bytes(), Some(stat.version)).await;
                drop(lock);
                written.map(drop).map_err(Error::from)
            }
        };
        match written {
            Ok(()) => {
                self.entities.sold[k].fetch_add(1, Ordering::SeqCst);
                Ok(held)
            }
            Err(Error::ZooKeeper(ZooKeeperError::BadVersion)) => {
                eprintln!("entity {k}: a versioned write under the lock was refused (another writer)");
                shared.violations.fetch_add(1, Ordering::SeqCst);
                Ok(held)
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::zipf_weights;

    #[test]
    fn skews() {
        assert!(zipf_weights("uniform", 3).unwrap().is_none());
        let cdf = zipf_weights("zipf", 3).unwrap().unwrap();
        assert_eq!(cdf.len(), 3);
        assert!((cdf[2] - (1.0 + 0.5 + 1.0 / 3.0)).abs() < 1e-9);
        assert_eq!(zipf_weights("pareto", 3).unwrap_err().0, 2);
    }
}
