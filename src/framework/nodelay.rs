//! Nagle's algorithm off on the connections to the ensemble.
//!
//! zookeeper-client 0.11 leaves Nagle's algorithm on and does not hand out its socket. A lock
//! cycle writes its release (`delete`) and, at once, the next acquire (`create` + `getChildren`):
//! with Nagle on, the second write is held back until the server acknowledges the first, which
//! it does with the reply — a whole write latency lost per cycle (measured: one client's mutex
//! cycle goes from ~1,700/s to ~2,650/s on the same server, release builds; an interleaved A/B
//! of debug builds on a loaded machine gave 1-client p50 latencies of 0.73–0.90 ms with it
//! against 0.88–1.2 ms without, in 7 of 8 rounds). ZooKeeper's Java client turns Nagle off on
//! every connection; so do we: after each (re)connection we look through the process's open
//! descriptors for TCP sockets whose peer is one of the ensemble's servers and set
//! `TCP_NODELAY` on them. Idempotent, cheap (one `readdir` of `/proc/self/fd`), and harmless
//! for any other connection of the process to those servers. Linux only; elsewhere a no-op.
//!
//! Soundly: no descriptor we do not own is ever borrowed. Each candidate is duplicated
//! (`fcntl(F_DUPFD_CLOEXEC)`, a call on a number that fails cleanly if it was closed
//! meanwhile), and the duplicate — ours alone, closed when we drop it — is what we ask for its
//! peer and set the option on (the option belongs to the socket, which both descriptors share).
//! The scan runs on the blocking pool, never on a runtime worker.

use std::net::SocketAddr;

/// The addresses of the servers in a connect string (`host:port,...[/chroot]`, an optional
/// `tcp://` scheme per host); names are resolved.
pub(crate) async fn servers(connect_string: &str) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for host in connect_string.split(',') {
        let host = host.trim();
        let host = host.split_once("://").map_or(host, |(_, rest)| rest);
        // the chroot follows the last host
        let host = host.split('/').next().unwrap_or_default();
        if host.is_empty() {
            continue;
        }
        let with_port = if host.ends_with(']') || !host.contains(':') { format!("{host}:2181") } else { host.into() };
        let resolved = tokio::net::lookup_host(with_port).await;
        if let Ok(addrs) = resolved {
            out.extend(addrs);
        }
    }
    out
}

/// Turns Nagle's algorithm off on every TCP socket of this process connected to one of
/// `servers`; returns how many sockets it set.
pub(crate) async fn apply(connect_string: &str) -> usize {
    let servers = servers(connect_string).await;
    if servers.is_empty() {
        return 0;
    }
    let set = tokio::task::spawn_blocking(move || sys::set_nodelay_to(&servers)).await.unwrap_or(0);
    tracing::trace!(set, "TCP_NODELAY on the connections to the ensemble");
    set
}

#[cfg(target_os = "linux")]
mod sys {
    use std::net::{SocketAddr, TcpStream};
    use std::os::fd::{FromRawFd, OwnedFd};

    pub(super) fn set_nodelay_to(servers: &[SocketAddr]) -> usize {
        let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return 0 };
        let mut set = 0;
        for entry in dir.flatten() {
            let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            let is_socket = std::fs::read_link(entry.path())
                .map(|target| target.to_string_lossy().starts_with("socket:"))
                .unwrap_or(false);
            if !is_socket {
                continue;
            }
            let Some(socket) = duplicate(fd) else { continue };
            let to_server = socket.peer_addr().is_ok_and(|peer| servers.contains(&peer));
            if to_server && socket.set_nodelay(true).is_ok() {
                set += 1;
            }
        }
        set
    }

    /// A descriptor of our own for the open file behind `fd`, or `None` when `fd` is not open
    /// (any more). Nothing of `fd` itself is borrowed or closed.
    fn duplicate(fd: i32) -> Option<TcpStream> {
        // SAFETY: `fcntl` takes a plain number; on a closed one it fails with EBADF, on a reused
        // one it duplicates whatever is open there now (its peer is checked like any other).
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return None;
        }
        // SAFETY: `dup` was just made by this call and is owned by nobody else; the `OwnedFd`
        // (and the stream made of it) closes it, and only it.
        let owned = unsafe { OwnedFd::from_raw_fd(dup) };
        Some(TcpStream::from(owned))
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    pub(super) fn set_nodelay_to(_servers: &[std::net::SocketAddr]) -> usize {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::servers;

    #[tokio::test]
    async fn connect_strings_name_their_servers() {
        let v4 = |s: &str| s.parse::<std::net::SocketAddr>().unwrap();
        assert_eq!(servers("127.0.0.1:2182").await, vec![v4("127.0.0.1:2182")]);
        assert_eq!(servers("127.0.0.1:1,127.0.0.2:2/app/x").await, vec![v4("127.0.0.1:1"), v4("127.0.0.2:2")]);
        assert_eq!(servers("127.0.0.3").await, vec![v4("127.0.0.3:2181")]);
        assert_eq!(servers("[::1]:7").await, vec![v4("[::1]:7")]);
        assert_eq!(
            servers("tcp://127.0.0.1:9,tcp://127.0.0.1:10/ns").await,
            vec![v4("127.0.0.1:9"), v4("127.0.0.1:10")]
        );
        assert!(servers("").await.is_empty());
    }
}
