//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use zk_recipes_testing::{four_letter_word, TestingCluster};

/// The connect string of the one server this test binary shares (started on first use,
/// stopped when the test process exits).
pub async fn shared_server() -> String {
    zk_recipes_testing::shared_server().await.expect("shared ZooKeeper server")
}

/// A name unique within this test process and across runs on one server.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst), fastrand_suffix())
}

fn fastrand_suffix() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64 % 1_000_000).unwrap_or(0)
}

/// A local port with nothing listening on it.
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// The index of the cluster server that holds a connection of `session_id` (via `cons`).
pub async fn server_of_session(cluster: &TestingCluster, session_id: i64) -> Option<usize> {
    let needle = format!("sid=0x{:x}", session_id);
    for i in 0..cluster.len() {
        let Ok(addr) = cluster.server_connect_string(i) else { continue };
        if let Ok(out) = four_letter_word(addr, "cons").await {
            if out.contains(&needle) {
                return Some(i);
            }
        }
    }
    None
}

/// A framework for tests: 4 s sessions (the test servers' maximum), 5 s connection timeout,
/// retries every 100 ms.
pub async fn framework(cs: &str) -> zk_recipes::Framework {
    zk_recipes::Framework::builder()
        .connect_string(cs)
        .session_timeout(std::time::Duration::from_secs(4))
        .connection_timeout(std::time::Duration::from_secs(5))
        .retry_policy(zk_recipes::RetryNTimes::new(20, std::time::Duration::from_millis(100)))
        .connect()
        .await
        .expect("connect")
}

/// Polls `condition` every 10 ms until it holds; panics with `what` after 20 s.
pub async fn eventually<F: FnMut() -> bool>(what: &str, mut condition: F) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// For each TCP socket of this process whose peer is `server` (`host:port`): whether Nagle's
/// algorithm is off on it (`TCP_NODELAY`).
#[cfg(target_os = "linux")]
pub fn nodelay_of_sockets_to(server: &str) -> Vec<bool> {
    use std::os::fd::AsRawFd;
    let server: std::net::SocketAddr = server.parse().expect("host:port");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        // a duplicate of the descriptor, owned by a std stream, so that it cannot go away under us
        // SAFETY: dup of a number; -1 (not an open descriptor) is checked.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            continue;
        }
        // SAFETY: `dup` is a fresh descriptor owned by nobody else.
        let stream = unsafe { <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(dup) };
        if stream.peer_addr().ok() != Some(server) {
            continue;
        }
        let mut on: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: the pointers are to live locals of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&mut on as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        out.push(rc == 0 && on != 0);
    }
    out
}
