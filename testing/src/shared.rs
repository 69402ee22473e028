//! One server shared by all tests of a test binary.

use tokio::sync::OnceCell;

use super::{TestingCluster, TestingServer};
use crate::error::Result;

/// Set to `1` to run a test binary's shared-server tests over mutual TLS, or to `cluster` to
/// run them over mutual TLS on a 3-node ensemble (see [`shared_server`]).
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
/// As [`TestingServer::start`].
pub async fn shared_server() -> Result<String> {
    static SHARED: OnceCell<TestingServer> = OnceCell::const_new();
    static SHARED_CLUSTER: OnceCell<TestingCluster> = OnceCell::const_new();
    let tls = match std::env::var(TLS_ENV).as_deref() {
        Ok("cluster") => {
            let start = || async { TestingCluster::builder().tls()?.tls_client_auth(true).start().await };
            let cluster = SHARED_CLUSTER.get_or_try_init(start).await?;
            return Ok(cluster.secure_connect_string().unwrap_or(cluster.connect_string()).to_owned());
        }
        Ok(value) => value == "1",
        Err(_) => false,
    };
    let server = SHARED
        .get_or_try_init(|| async {
            match tls {
                true => TestingServer::builder().tls()?.tls_client_auth(true).start().await,
                false => TestingServer::start().await,
            }
        })
        .await?;
    Ok(server.secure_connect_string().unwrap_or_else(|| server.connect_string().to_string()))
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
