//! One server shared by all tests of a test binary.

use tokio::sync::OnceCell;

use super::TestingServer;
use crate::error::Result;

/// Set to `1` to run a test binary's shared-server tests over mutual TLS, or to `cluster` to
/// run them over mutual TLS on a 3-node ensemble (see [`shared_server`]; needs the `tls`
/// feature).
pub const TLS_ENV: &str = "ZKR_TEST_TLS";

/// The connect string of a standalone server shared by every test of this process: started
/// on first use, killed by the kernel when the process exits (the server is spawned with a
/// parent-death signal). Tests that do not kill or pause a server should share it, each under
/// its own unique path or namespace; fault tests start their own.
///
/// With `ZKR_TEST_TLS=1` in the environment, the server requires mutual TLS and this is its
/// TLS port: [`fixtures::framework`](crate::fixtures::framework) connects to it with the
/// server's certificates, and [`expire_session`](crate::expire_session) goes through its
/// plaintext port. So a suite written for the shared server runs over TLS unchanged. With
/// `ZKR_TEST_TLS=cluster`, the same on a 3-node ensemble (the TLS ports of its servers).
///
/// # Errors
/// As [`TestingServer::start`]; [`Error::Unsupported`](crate::Error::Unsupported) for
/// `ZKR_TEST_TLS=1` or `cluster` when the kit is built without its `tls` feature.
pub async fn shared_server() -> Result<String> {
    static SHARED: OnceCell<TestingServer> = OnceCell::const_new();
    match std::env::var(TLS_ENV).as_deref() {
        Ok("1") => shared_tls(false).await,
        Ok("cluster") => shared_tls(true).await,
        _ => Ok(SHARED.get_or_try_init(TestingServer::start).await?.connect_string().to_owned()),
    }
}

/// The TLS connect string of a shared server (`cluster`: a shared 3-node ensemble) that
/// requires mutual TLS.
#[cfg(feature = "tls")]
async fn shared_tls(cluster: bool) -> Result<String> {
    use super::TestingCluster;
    static SERVER: OnceCell<TestingServer> = OnceCell::const_new();
    static CLUSTER: OnceCell<TestingCluster> = OnceCell::const_new();
    if cluster {
        let start = || async { TestingCluster::builder().tls()?.tls_client_auth(true).start().await };
        let cluster = CLUSTER.get_or_try_init(start).await?;
        return Ok(cluster.secure_connect_string().unwrap_or(cluster.connect_string()).to_owned());
    }
    let start = || async { TestingServer::builder().tls()?.tls_client_auth(true).start().await };
    let server = SERVER.get_or_try_init(start).await?;
    Ok(server.secure_connect_string().unwrap_or_else(|| server.connect_string().to_owned()))
}

/// Without the `tls` feature there are no TLS servers: `ZKR_TEST_TLS` is refused, not ignored
/// (a suite meant to run over TLS must not pass over plaintext).
#[cfg(not(feature = "tls"))]
async fn shared_tls(_cluster: bool) -> Result<String> {
    Err(crate::Error::Unsupported("ZKR_TEST_TLS needs zk-recipes-testing built with its `tls` feature"))
}

/// For examples and tools: `$ZK_CONNECT` when set, else a fresh embedded [`TestingServer`]
/// (returned too, so that it lives as long as the caller keeps it).
///
/// # Errors
/// As [`TestingServer::start`].
pub async fn server_or_env() -> Result<(Option<TestingServer>, String)> {
    match std::env::var("ZK_CONNECT") {
        Ok(hosts) if !hosts.trim().is_empty() => Ok((None, hosts)),
        _ => {
            let server = TestingServer::start().await?;
            let cs = server.connect_string().to_string();
            eprintln!("using an embedded ZooKeeper at {cs} (set ZK_CONNECT to use yours)");
            Ok((Some(server), cs))
        }
    }
}
