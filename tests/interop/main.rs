//! Interop with a real Apache Curator 5.4 on the same paths, one test binary so that one
//! Curator JVM (`CuratorPeer::shared`) and one shared ZooKeeper server serve every test: locks
//! ([`locks`]), SharedCount and barriers ([`coordination`]), leader latch and atomic counters
//! ([`leader_atomic`]), a `CuratorCache` next to our tree cache ([`cache`]), and group members
//! ([`group`]), service discovery ([`discovery`]), locks with a server TTL
//! ([`ttl_locks`]), a mutex over mutual TLS ([`tls`]), leader selectors ([`selector`]),
//! multi-locks ([`multilock`]), shared and atomic byte values ([`values`]), persistent and TTL
//! nodes across session losses ([`persistent`]), and lock revocation ([`revocation`]).

mod cache;
mod compression;
mod compression_recipes;
mod coordination;
mod discovery;
mod group;
mod leader_atomic;
mod locks;
mod multilock;
mod persistent;
mod revocation;
mod selector;
mod tls;
mod ttl_locks;
mod values;

use std::sync::Arc;

use zk_recipes_testing::curator::CuratorPeer;

/// The binary's one Curator JVM (started on first use; its start-up timings printed once).
async fn peer() -> Arc<CuratorPeer> {
    static REPORTED: std::sync::Once = std::sync::Once::new();
    let peer = CuratorPeer::shared().await.expect("Curator peer starts (bash scripts/setup.sh installs it)");
    REPORTED.call_once(|| println!("Curator peer (pid {:?}) started: {:?}", peer.pid(), peer.timings()));
    peer
}

/// Sends one peer command (its words joined by spaces) and returns the answer's payload.
///
/// # Panics
/// When the peer answers `ERR` or is gone.
async fn cmd(peer: &CuratorPeer, words: &[&str]) -> String {
    let line = words.join(" ");
    peer.call(&line).await.unwrap_or_else(|e| panic!("peer command `{line}`: {e}"))
}

/// Lowercase hex of `data`, `-` for none (the peer's data words).
fn hex(data: &[u8]) -> String {
    if data.is_empty() {
        return "-".into();
    }
    data.iter().map(|b| format!("{b:02x}")).collect()
}
