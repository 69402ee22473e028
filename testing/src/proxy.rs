//! A TCP proxy between clients and one server, to cut, blackhole or delay a link on purpose
//! (network partitions and lost replies, for real).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::Result;

/// What the proxy does with the bytes of its connections.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyMode {
    /// Forward both ways.
    Pass,
    /// Drop every byte both ways, keep the sockets open (a partition: the peer hears nothing,
    /// and neither side sees the connection close).
    Blackhole,
    /// Forward requests, drop the server's replies (a request is applied, its reply lost).
    DropReplies,
    /// Forward both ways after this delay per chunk.
    Delay(Duration),
}

/// Rewrites the first message a client sends on each connection: given the bytes read so far,
/// `None` while the message is incomplete, else how many bytes it took and what to send instead
/// (see `links.rs`: the address a ZooKeeper server announces to a peer).
pub(crate) type Rewrite = Arc<dyn Fn(&[u8]) -> Option<(usize, Vec<u8>)> + Send + Sync>;

#[derive(Debug, Clone, Copy)]
struct Control {
    mode: ProxyMode,
    /// Connections opened before the latest cut close.
    cuts: u64,
}

/// A TCP proxy on 127.0.0.1 in front of one server. Point a client's connect string at
/// [`connect_string`](Self::connect_string); then [`set_mode`](Self::set_mode) to partition the
/// link, or [`cut`](Self::cut) to close its connections. Dropping the proxy closes everything.
#[derive(Debug)]
pub struct TcpProxy {
    addr: String,
    control: Arc<watch::Sender<Control>>,
    accept: JoinHandle<()>,
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.control.send_modify(|c| c.cuts += 1);
        #[cfg(feature = "tls")]
        crate::tls::forget_secure_port(&self.addr);
    }
}

impl TcpProxy {
    /// Starts a proxy to `upstream` (`host:port`) on a free loopback port. In front of a kit
    /// server's TLS port, [`fixtures::framework`](crate::fixtures::framework) connects through
    /// it over TLS.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when it cannot listen.
    pub async fn start(upstream: &str) -> Result<TcpProxy> {
        Self::start_rewriting(upstream, None).await
    }

    /// As [`start`](Self::start), with the first message of each connection rewritten.
    pub(crate) async fn start_rewriting(upstream: &str, rewrite: Option<Rewrite>) -> Result<TcpProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?.to_string();
        // in front of a kit server's TLS port, the proxy is one too (for fixtures and expiry)
        #[cfg(feature = "tls")]
        if let Some((plain, certs)) = crate::tls::secure_port(upstream) {
            crate::tls::register_secure_port(addr.clone(), plain, certs);
        }
        let control = Arc::new(watch::Sender::new(Control { mode: ProxyMode::Pass, cuts: 0 }));
        let upstream = upstream.to_string();
        let ctl = control.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let rx = ctl.subscribe();
                let rewrite = rewrite.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        relay(client, server, rx, rewrite).await;
                    }
                });
            }
        });
        Ok(TcpProxy { addr, control, accept })
    }

    /// The proxy's `127.0.0.1:<port>`.
    pub fn connect_string(&self) -> &str {
        &self.addr
    }

    /// Changes what happens to the bytes of all connections, current and future.
    pub fn set_mode(&self, mode: ProxyMode) {
        self.control.send_modify(|c| c.mode = mode);
    }

    /// The current mode.
    pub fn mode(&self) -> ProxyMode {
        self.control.borrow().mode
    }

    /// Closes every current connection (clients see the connection drop and reconnect).
    pub fn cut(&self) {
        self.control.send_modify(|c| c.cuts += 1);
    }
}

async fn relay(client: TcpStream, server: TcpStream, control: watch::Receiver<Control>, rewrite: Option<Rewrite>) {
    let born = control.borrow().cuts;
    let (mut cr, cw) = client.into_split();
    let (sr, mut sw) = server.into_split();
    if let Some(rewrite) = rewrite {
        if first_message(&mut cr, &mut sw, &control, &rewrite).await.is_err() {
            return;
        }
    }
    let up = pump(cr, sw, control.clone(), born, false);
    let down = pump(sr, cw, control, born, true);
    tokio::select! {
        _ = up => {},
        _ = down => {},
    }
}

/// Reads the client's first message, rewrites it and sends it on (when the link passes).
async fn first_message<R, W>(
    from: &mut R,
    to: &mut W,
    control: &watch::Receiver<Control>,
    rewrite: &Rewrite,
) -> std::io::Result<()>
where
    R: AsyncReadExt + Unpin,
    W: AsyncWriteExt + Unpin,
{
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 4096];
    let (taken, message) = loop {
        if let Some(done) = rewrite(&seen) {
            break done;
        }
        match from.read(&mut buf).await? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => seen.extend_from_slice(&buf[..n]),
        }
    };
    if control.borrow().mode == ProxyMode::Pass {
        to.write_all(&message).await?;
        to.write_all(&seen[taken..]).await?;
    }
    Ok(())
}

/// Copies one direction until either side closes or the connection is cut.
async fn pump<R, W>(mut from: R, mut to: W, mut control: watch::Receiver<Control>, born: u64, replies: bool)
where
    R: AsyncReadExt + Unpin,
    W: AsyncWriteExt + Unpin,
{
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            changed = control.changed() => {
                if changed.is_err() || control.borrow().cuts != born {
                    return;
                }
                continue;
            },
        };
        let Control { mode, cuts } = *control.borrow();
        if cuts != born {
            return;
        }
        match mode {
            ProxyMode::Pass => {}
            ProxyMode::Blackhole => continue,
            ProxyMode::DropReplies if replies => continue,
            ProxyMode::DropReplies => {}
            ProxyMode::Delay(d) => tokio::time::sleep(d).await,
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
