//! A proxy that makes a server look older than it is: requests of chosen operations reach it
//! with an operation code no server knows, so it answers them as a server without those
//! operations does (`Unimplemented`, then it closes the connection).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::error::Result;

/// `addWatch` (persistent watches, ZooKeeper 3.6).
pub const ADD_WATCH: i32 = 106;
/// `multiRead` (ZooKeeper 3.6).
pub const MULTI_READ: i32 = 22;
/// `whoami` (ZooKeeper 3.7).
pub const WHO_AM_I: i32 = 107;
/// What a refused request's operation code becomes: no server knows it.
const UNKNOWN: i32 = 999;

/// A proxy on 127.0.0.1 in front of one server that refuses some operations on its behalf
/// ([`ADD_WATCH`], [`MULTI_READ`], [`WHO_AM_I`] or any other operation code): a ZooKeeper 3.8
/// behind it looks like a 3.5 server to a client (refuse `ADD_WATCH`, `MULTI_READ` and
/// `WHO_AM_I`), or like a ZooKeeper-compatible server that lacks one operation. Dropping it
/// closes its connections.
///
/// ```no_run
/// # async fn demo(cs: &str) -> zk_recipes_testing::Result<()> {
/// use zk_recipes_testing::{refusing, RefusingProxy};
/// let old = RefusingProxy::start(cs, &[refusing::ADD_WATCH, refusing::MULTI_READ]).await?;
/// let _connect_to = old.connect_string();
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RefusingProxy {
    addr: String,
    accept: JoinHandle<()>,
}

impl Drop for RefusingProxy {
    fn drop(&mut self) {
        // the connections' tasks belong to the accepting task: they end with it
        self.accept.abort();
    }
}

impl RefusingProxy {
    /// Starts a proxy to `upstream` (`host:port`) that refuses the `refused` operation codes.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when it cannot listen.
    pub async fn start(upstream: &str, refused: &[i32]) -> Result<RefusingProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?.to_string();
        let upstream = upstream.to_string();
        let refused = refused.to_vec();
        let accept = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else { continue };
                let (from_client, to_client) = client.into_split();
                let (mut from_server, mut to_server_half) = server.into_split();
                let mut to_client = to_client;
                connections.spawn(async move {
                    let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
                });
                let refused = refused.clone();
                connections.spawn(async move {
                    let _ = rewrite(from_client, &mut to_server_half, &refused).await;
                });
            }
        });
        Ok(RefusingProxy { addr, accept })
    }

    /// The proxy's `127.0.0.1:<port>`.
    pub fn connect_string(&self) -> &str {
        &self.addr
    }
}

/// Forwards the client's frames (a 4-byte length, then — after the connect request — xid
/// and operation code), rewriting refused operation codes.
async fn rewrite<R, W>(mut from: R, to: &mut W, refused: &[i32]) -> std::io::Result<()>
where
    R: AsyncReadExt + Unpin,
    W: AsyncWriteExt + Unpin,
{
    let mut first = true;
    loop {
        let len = from.read_i32().await?;
        let mut frame = vec![0; len.max(0) as usize];
        from.read_exact(&mut frame).await?;
        if !first && frame.len() >= 8 && refused.iter().any(|op| frame[4..8] == op.to_be_bytes()) {
            frame[4..8].copy_from_slice(&UNKNOWN.to_be_bytes());
        }
        first = false;
        to.write_i32(len).await?;
        to.write_all(&frame).await?;
    }
}
