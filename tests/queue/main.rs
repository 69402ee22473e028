//! Queues against a real ZooKeeper server: every kind's order and API ([`basics`]), bad input
//! and back-pressure ([`limits`]), Curator 5.4 producers and consumers on the same queues
//! ([`interop`], one Curator JVM for the binary), exactly-once consumption by 8 consumers
//! while sessions expire and a server is killed ([`faults`], a 3-node ensemble of its own),
//! and a 65,536-item queue that drains ([`load`]).

mod basics;
mod faults;
mod interop;
mod limits;
mod load;

use std::sync::Arc;
use std::time::Duration;

use zk_recipes_testing::curator::CuratorPeer;

/// How long a test waits for anything that should happen.
const WAIT: Duration = Duration::from_secs(20);

/// The binary's one Curator JVM (started on first use).
async fn peer() -> Arc<CuratorPeer> {
    CuratorPeer::shared().await.expect("Curator peer starts (bash scripts/setup.sh installs it)")
}

/// `n` distinct items `<prefix>-<i>`.
fn items(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("{prefix}-{i}").into_bytes()).collect()
}
