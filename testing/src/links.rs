//! The links between the servers of a local [`TestingCluster`](super::TestingCluster) started
//! with [`peer_proxies`](super::TestingClusterBuilder::peer_proxies): a [`TcpProxy`] for each
//! direction of each pair of servers, on the quorum port and on the election port, so that a
//! test can partition servers from each other while their clients stay connected.
//!
//! Server `i`'s `zoo.cfg` names its own quorum and election ports as they are (it listens on
//! them) and each peer `j` by the ports of the proxies `i → j`: every connection `i` opens to
//! `j` goes through a proxy, whichever of them opens it.
//!
//! One catch: when a server with a lower id opens an election connection, the higher one drops
//! it and connects back to the address the lower one announced in its first message — its own
//! real port, around every proxy. The election proxies `i → j` therefore rewrite that address
//! to the proxy `j → i`.

use std::sync::{Arc, Mutex, OnceLock};

use super::config::Peer;
use super::proxy::{ProxyMode, Rewrite, TcpProxy};
use crate::Result;

/// The proxies of one direction of one pair of servers.
#[derive(Debug)]
struct Link {
    from: usize,
    to: usize,
    quorum: TcpProxy,
    election: TcpProxy,
}

/// Every link between the servers, and which servers are cut off.
#[derive(Debug)]
pub(crate) struct PeerLinks {
    links: Vec<Link>,
    isolated: Mutex<Vec<bool>>,
}

impl PeerLinks {
    /// Starts the proxies between `peers` (the real ports).
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when a proxy cannot listen.
    pub async fn start(peers: &[Peer]) -> Result<PeerLinks> {
        // the election port of each link, known once all are listening
        let ports: Arc<OnceLock<Vec<(usize, usize, u16)>>> = Arc::default();
        let mut links = Vec::new();
        for from in 0..peers.len() {
            for (to, peer) in peers.iter().enumerate().filter(|(to, _)| *to != from) {
                let back = ports.clone();
                let rewrite: Rewrite = Arc::new(move |seen: &[u8]| {
                    let port = back.get()?.iter().find(|(f, t, _)| (*f, *t) == (to, from)).map(|l| l.2)?;
                    announce_via(seen, port)
                });
                links.push(Link {
                    from,
                    to,
                    quorum: TcpProxy::start(&format!("127.0.0.1:{}", peer.quorum_port)).await?,
                    election: TcpProxy::start_rewriting(&format!("127.0.0.1:{}", peer.election_port), Some(rewrite))
                        .await?,
                });
            }
        }
        let _ = ports.set(links.iter().map(|l| (l.from, l.to, port(&l.election))).collect());
        Ok(PeerLinks { links, isolated: Mutex::new(vec![false; peers.len()]) })
    }

    /// The ensemble as server `me` is to see it: itself as it is, each peer behind the proxies
    /// `me → peer`.
    pub fn view(&self, me: usize, peers: &[Peer]) -> Vec<Peer> {
        peers
            .iter()
            .enumerate()
            .map(|(j, p)| match self.links.iter().find(|l| l.from == me && l.to == j) {
                Some(link) => Peer {
                    id: p.id,
                    quorum_port: port(&link.quorum),
                    election_port: port(&link.election),
                    client_port: p.client_port,
                },
                None => *p,
            })
            .collect()
    }

    /// Cuts server `i` off its peers (`true`: every byte between them dropped, sockets kept
    /// open, as a network partition does) or lets it hear them again (`false`). A link passes
    /// only when neither of its ends is cut off.
    pub fn isolate(&self, i: usize, cut_off: bool) {
        let mut isolated = self.isolated.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(flag) = isolated.get_mut(i) {
            *flag = cut_off;
        }
        for link in &self.links {
            let mode = if isolated[link.from] || isolated[link.to] { ProxyMode::Blackhole } else { ProxyMode::Pass };
            link.quorum.set_mode(mode);
            link.election.set_mode(mode);
        }
    }
}

fn port(proxy: &TcpProxy) -> u16 {
    proxy.connect_string().rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0)
}

/// Rewrites the first message of an election connection (ZooKeeper's `InitialMessage`: a
/// negative protocol version, the sender's id, the length and text of its election address) to
/// announce `127.0.0.1:port` instead; an older message without an address passes unchanged.
/// `None` while `seen` holds less than the whole message.
fn announce_via(seen: &[u8], port: u16) -> Option<(usize, Vec<u8>)> {
    let version = i64::from_be_bytes(seen.get(..8)?.try_into().ok()?);
    if version >= 0 {
        return Some((0, Vec::new()));
    }
    let len = i32::from_be_bytes(seen.get(16..20)?.try_into().ok()?);
    let end = 20 + usize::try_from(len).ok()?;
    seen.get(20..end)?;
    let address = format!("127.0.0.1:{port}");
    let mut message = seen[..16].to_vec();
    message.extend_from_slice(&i32::try_from(address.len()).unwrap_or(0).to_be_bytes());
    message.extend_from_slice(address.as_bytes());
    Some((end, message))
}

#[cfg(test)]
mod tests {
    use super::announce_via;

    #[test]
    fn the_announced_address_is_rewritten() {
        let mut m = (-65535i64).to_be_bytes().to_vec();
        m.extend_from_slice(&7i64.to_be_bytes());
        m.extend_from_slice(&15i32.to_be_bytes());
        m.extend_from_slice(b"127.0.0.1:12345");
        assert_eq!(announce_via(&m[..30], 9), None, "incomplete");
        m.extend_from_slice(b"rest");
        let (taken, out) = announce_via(&m, 9).unwrap();
        assert_eq!(taken, 35);
        assert_eq!(&out[..16], &m[..16]);
        assert_eq!(&out[16..20], &11i32.to_be_bytes());
        assert_eq!(&out[20..], b"127.0.0.1:9");
        assert_eq!(announce_via(&7i64.to_be_bytes(), 9), Some((0, Vec::new())), "an old message passes");
    }
}
