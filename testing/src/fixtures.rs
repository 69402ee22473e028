//! The fixtures of the integration tests (of zk-recipes, its CLI and this kit): a connected
//! [`Framework`] with the test defaults, unique names, waiting for a condition or a future with
//! a deadline, and walking what a recipe left behind.
//!
//! ```no_run
//! # async fn demo() {
//! use std::time::Duration;
//! use zk_recipes_testing::fixtures::{eventually, framework, shared_server, unique};
//!
//! let cs = shared_server().await;
//! let fw = framework(&cs).await;
//! let path = format!("/{}", unique("demo"));
//! fw.create(&path, b"x", zk_recipes::CreateMode::Ephemeral).await.unwrap();
//! eventually(Duration::from_secs(20), "the node is there", || async {
//!     fw.exists(&path).await.unwrap().is_some()
//! })
//! .await;
//! # }
//! ```

use std::fmt::Display;
use std::future::Future;
use std::panic::Location;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use zk_recipes::{Framework, FrameworkBuilder, RetryNTimes};

use crate::{four_letter_word, TestingCluster};

/// The session timeout of [`framework`]: 4 s, the test servers' maximum.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
/// The connection timeout of [`framework`].
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// How often [`eventually`] and [`settle`] look again.
pub const POLL: Duration = Duration::from_millis(10);
/// How long [`settle`] waits at most.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(20);

/// The connect string of the one server this test binary shares (see
/// [`crate::shared_server`]).
///
/// # Panics
/// If the server does not start.
pub async fn shared_server() -> String {
    crate::shared_server().await.expect("shared ZooKeeper server")
}

/// The connect string of a second server this test binary shares, one that allows TTL nodes
/// ([`TestingServerBuilder::extended_types`](crate::TestingServerBuilder::extended_types);
/// started on first use).
///
/// # Panics
/// If the server does not start.
pub async fn shared_ttl_server() -> String {
    static SERVER: tokio::sync::OnceCell<crate::TestingServer> = tokio::sync::OnceCell::const_new();
    let server = SERVER.get_or_init(|| async {
        crate::TestingServer::builder().extended_types(true).start().await.expect("ZooKeeper server with TTL nodes")
    });
    server.await.connect_string().to_string()
}

/// A connected framework for tests: [`SESSION_TIMEOUT`], [`CONNECTION_TIMEOUT`], retries
/// every 100 ms (20 times). To a kit server's TLS port (the [`shared_server`] under
/// `ZKR_TEST_TLS=1`, or any server started with `.tls()`), it connects over TLS with the
/// server's CA and client certificate (mutual TLS).
///
/// # Panics
/// If it does not connect.
pub async fn framework(cs: &str) -> Framework {
    framework_with(cs, |builder| builder).await
}

/// As [`framework`], with the builder changed by `configure` first (a longer session, default
/// data, another retry policy…).
///
/// # Panics
/// If it does not connect.
pub async fn framework_with(cs: &str, configure: impl FnOnce(FrameworkBuilder) -> FrameworkBuilder) -> Framework {
    let builder = Framework::builder()
        .connect_string(cs)
        .session_timeout(SESSION_TIMEOUT)
        .connection_timeout(CONNECTION_TIMEOUT)
        .retry_policy(RetryNTimes::new(20, Duration::from_millis(100)));
    configure(kit_tls(builder, cs)).connect().await.expect("connect")
}

/// `builder` with TLS to the kit server whose TLS port `cs` names first (with its CA and
/// client certificate); `builder` as it is for any other server.
#[cfg(feature = "tls")]
fn kit_tls(builder: FrameworkBuilder, cs: &str) -> FrameworkBuilder {
    let first = cs.split([',', '/']).next().unwrap_or_default();
    match crate::tls::secure_port(first) {
        Some((_, certs)) => builder.tls(tls_settings(&certs)),
        None => builder,
    }
}

/// Without the `tls` feature no kit server serves TLS.
#[cfg(not(feature = "tls"))]
fn kit_tls(builder: FrameworkBuilder, _cs: &str) -> FrameworkBuilder {
    builder
}

/// Client TLS settings for a server with `certs`: their CA, and their client certificate.
///
/// # Panics
/// If the files cannot be read.
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub fn tls_settings(certs: &crate::TestCertificates) -> zk_recipes::TlsConfig {
    zk_recipes::TlsConfig::from_ca_file(certs.ca_path())
        .and_then(|tls| tls.with_client_identity_files(certs.client_cert_path(), certs.client_key_path()))
        .expect("test certificates")
}

/// A name unique within this test process and across runs on one server:
/// `{prefix}-{pid}-{counter}-{nanos}`.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64 % 1_000_000)
        .unwrap_or(0);
    format!("{prefix}-{}-{}-{nanos}", std::process::id(), N.fetch_add(1, Ordering::SeqCst))
}

/// A local port with nothing listening on it.
///
/// # Panics
/// If no loopback port can be bound.
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// Polls `condition` every [`POLL`] until it holds.
///
/// # Panics
/// If it does not hold within `timeout`: the message names `what` and the caller's line.
#[track_caller]
pub fn eventually<F, Fut>(timeout: Duration, what: impl Display, mut condition: F) -> impl Future<Output = ()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let at = Location::caller();
    async move {
        let deadline = tokio::time::Instant::now() + timeout;
        while !condition().await {
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out after {timeout:?} waiting for: {what} (at {at})"
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

/// `future`'s output, which must come within `limit`.
///
/// # Panics
/// If `future` is not done within `limit`: the message names the caller's line.
#[track_caller]
pub fn within<F: Future>(limit: Duration, future: F) -> impl Future<Output = F::Output> {
    let at = Location::caller();
    async move {
        tokio::time::timeout(limit, future).await.unwrap_or_else(|_| panic!("not done within {limit:?} (at {at})"))
    }
}

/// Whether a bounded wait (a recipe's `*_timeout`) finished in time: `true` for `Ok`,
/// `false` for [`Error::Timeout`](zk_recipes::Error::Timeout).
///
/// # Panics
/// On any other error: the message names it and the caller's line.
#[track_caller]
pub fn in_time<T>(result: zk_recipes::Result<T>) -> bool {
    match result {
        Ok(_) => true,
        Err(zk_recipes::Error::Timeout { .. }) => false,
        Err(e) => panic!("the wait failed: {e} (at {})", Location::caller()),
    }
}

/// A bounded wait's (a recipe's `*_timeout`) result with its deadline as `None`.
///
/// # Errors
/// Every error of `result` but [`Error::Timeout`](zk_recipes::Error::Timeout).
pub fn before_deadline<T>(result: zk_recipes::Result<T>) -> zk_recipes::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(zk_recipes::Error::Timeout { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A bounded wait's (a recipe's `*_timeout`) result as the boolean of before the 1.0 surface:
/// `Ok(true)` for `Ok`, `Ok(false)` for [`Error::Timeout`](zk_recipes::Error::Timeout), other
/// errors as they are.
///
/// # Errors
/// Every error of `result` but [`Error::Timeout`](zk_recipes::Error::Timeout).
pub fn finished<T>(result: zk_recipes::Result<T>) -> zk_recipes::Result<bool> {
    before_deadline(result).map(|value| value.is_some())
}

/// Waits until the background deletes of `fws` (after timeouts, cancellations, releases that
/// failed) are done.
///
/// # Panics
/// If they are not done within [`SETTLE_TIMEOUT`].
#[track_caller]
pub fn settle<'a>(fws: &'a [&'a Framework]) -> impl Future<Output = ()> + 'a {
    eventually(SETTLE_TIMEOUT, "background deletes finished", move || async move {
        fws.iter().all(|f| f.pending_background_deletes() == 0)
    })
}

/// Every ephemeral node under `path`, recursively (what a recipe left behind when none should
/// be left); nodes that go away during the walk are skipped.
///
/// # Errors
/// The first error of the walk other than a node gone.
pub async fn ephemerals(fw: &Framework, path: &str) -> zk_recipes::Result<Vec<String>> {
    use zk_recipes::Error;
    let mut found = Vec::new();
    let mut stack = vec![path.to_string()];
    while let Some(dir) = stack.pop() {
        let children = match fw.children(&dir).await {
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => continue,
            other => other?,
        };
        for c in children {
            let child = format!("{}/{c}", dir.trim_end_matches('/'));
            if fw.exists(&child).await?.is_some_and(|s| s.ephemeral_owner != 0) {
                found.push(child.clone());
            }
            stack.push(child);
        }
    }
    Ok(found)
}

/// The index of the server of `cluster` that holds a connection of `session_id` (asked with
/// the `cons` four-letter word); `None` when no server answers with it.
pub async fn server_of_session(cluster: &TestingCluster, session_id: i64) -> Option<usize> {
    let needle = format!("sid=0x{session_id:x}");
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
