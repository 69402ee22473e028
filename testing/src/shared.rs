//! One server shared by all tests of a test binary.

use tokio::sync::OnceCell;

use super::TestingServer;
use crate::error::Result;

/// The connect string of a standalone server shared by every test of this process: started
/// on first use, killed by the kernel when the process exits (the server is spawned with a
/// parent-death signal). Tests that do not kill or pause a server should share it, each under
/// its own unique path or namespace; fault tests start their own.
///
/// # Errors
/// As [`TestingServer::start`].
pub async fn shared_server() -> Result<String> {
    static SHARED: OnceCell<TestingServer> = OnceCell::const_new();
    let server = SHARED.get_or_try_init(TestingServer::start).await?;
    Ok(server.connect_string().to_string())
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
