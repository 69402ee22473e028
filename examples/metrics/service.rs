//! The service of the `metrics` example: it takes a lock, leads, and watches a tree, with the
//! library's metrics on a Prometheus endpoint. tests/observability runs this same code in
//! child processes and scrapes them.

use std::error::Error;
use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use zk_recipes::CreateMode;
use zk_recipes::{Cache, ConnectionState, Framework, InterProcessMutex, LeaderLatch};

/// What one run of the service does.
#[derive(Debug, Clone)]
pub struct Options {
    /// The ensemble.
    pub connect: String,
    /// Where the Prometheus endpoint listens (`GET /metrics`, or any path).
    pub listen: SocketAddr,
    /// The service's nodes: `<root>/lock`, `<root>/leader`, `<root>/tree`.
    pub root: String,
    /// This instance's participant id.
    pub id: String,
    /// How many times to take the lock (and write a node of the tree while holding it).
    pub rounds: u32,
    /// After the rounds, keep serving the endpoint (and leading or waiting to) until killed.
    pub serve: bool,
    /// After the rounds, have the server expire our session once (through the testing kit's
    /// `expire_session`: a demonstration of what an expiry looks like on the dashboards).
    pub expire: bool,
}

/// Runs the service; returns after the rounds unless `serve`.
///
/// Prints `acquisitions N` once the rounds are done, `expired` after the forced expiry, and
/// `serving` when it serves on (the test waits for these lines).
pub async fn run(opts: Options) -> Result<(), Box<dyn Error>> {
    PrometheusBuilder::new().with_http_listener(opts.listen).install()?;
    println!("metrics on http://{}/metrics", opts.listen);
    let fw =
        Framework::builder().connect_string(&opts.connect).session_timeout(Duration::from_secs(10)).connect().await?;
    let (lock_path, leader_path, tree) =
        (format!("{}/lock", opts.root), format!("{}/leader", opts.root), format!("{}/tree", opts.root));
    let mutex = InterProcessMutex::new(&fw, &lock_path)?;
    let latch = LeaderLatch::new(&fw, &leader_path, &opts.id)?;
    latch.start().await?;
    let cache = Cache::tree(&fw, &tree).build()?;
    cache.start().await?;
    for round in 0..opts.rounds {
        let guard = mutex.acquire().await?;
        // the protected work: write one of our nodes in the watched tree, fenced by the token
        let node = format!("{tree}/{}-{}", opts.id, round % 3);
        let data = guard.fencing_token().to_string();
        match fw.exists(&node).await? {
            Some(_) => drop(fw.set_data(&node, data.as_bytes(), None).await?),
            None => drop(fw.create(&node, data.as_bytes(), CreateMode::Persistent).await?),
        }
        guard.release().await?;
    }
    println!("acquisitions {}", opts.rounds);
    if opts.expire {
        zk_recipes_testing::expire_session(&fw).await?;
        let mut status = fw.status_watch();
        status.wait_for(|s| s.state == ConnectionState::Reconnected).await?;
        println!("expired");
    }
    if opts.serve {
        println!("serving");
        std::future::pending::<()>().await;
    }
    latch.close().await?;
    cache.close().await?;
    fw.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}

/// The Prometheus text the endpoint at `addr` serves now.
///
/// # Errors
/// When the endpoint cannot be reached or answers something else than `200`.
pub async fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(format!("the endpoint answered {head:?}")));
    }
    Ok(body.to_string())
}

/// A free loopback port (bound, then let go).
///
/// # Errors
/// When nothing can be bound.
pub fn free_port() -> std::io::Result<SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()
}
