//! Nagle's algorithm off on the connections to the ensemble.
//!
//! zookeeper-client 0.11 leaves Nagle's algorithm on and does not hand out its socket. A lock
//! cycle writes its release (`delete`) and, at once, the next acquire (`create` + `getChildren`):
//! with Nagle on, the second write is held back until the server acknowledges the first, which
//! it does with the reply — a whole write latency lost per cycle (measured: one client's mutex
//! cycle goes from ~1,700/s to ~2,650/s on the same server). ZooKeeper's Java client turns Nagle
//! off on every connection; so do we: after each (re)connection we look through the process's
//! open descriptors for TCP sockets whose peer is one of the ensemble's servers and set
//! `TCP_NODELAY` on them. Idempotent, cheap (one `readdir` of `/proc/self/fd`), and harmless
//! for any other connection of the process to those servers. Linux only; elsewhere a no-op.

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
    let set = sys::set_nodelay_to(&servers);
    tracing::trace!(set, "TCP_NODELAY on the connections to the ensemble");
    set
}

#[cfg(target_os = "linux")]
mod sys {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

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
            // The descriptor may be closed (or reused) by another thread meanwhile: the calls
            // below then fail with EBADF/ENOTSOCK, or see another socket whose peer is checked.
            if peer(fd).is_some_and(|p| servers.contains(&p)) && nodelay(fd) {
                set += 1;
            }
        }
        set
    }

    fn peer(fd: i32) -> Option<SocketAddr> {
        // SAFETY: sockaddr_storage is plain data; getpeername writes at most `len` bytes into it.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: the pointers are to live locals of the sizes given.
        let rc = unsafe { libc::getpeername(fd, (&mut storage as *mut libc::sockaddr_storage).cast(), &mut len) };
        if rc != 0 {
            return None;
        }
        match i32::from(storage.ss_family) {
            libc::AF_INET => {
                // SAFETY: the family says the storage holds a sockaddr_in.
                let a: libc::sockaddr_in = unsafe { *(&storage as *const libc::sockaddr_storage).cast() };
                let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(a.sin_port))))
            }
            libc::AF_INET6 => {
                // SAFETY: the family says the storage holds a sockaddr_in6.
                let a: libc::sockaddr_in6 = unsafe { *(&storage as *const libc::sockaddr_storage).cast() };
                let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
                Some(SocketAddr::V6(SocketAddrV6::new(ip, u16::from_be(a.sin6_port), a.sin6_flowinfo, a.sin6_scope_id)))
            }
            _ => None,
        }
    }

    fn nodelay(fd: i32) -> bool {
        let on: libc::c_int = 1;
        // SAFETY: the option value is a live c_int of the size given.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        rc == 0
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
