//! Expiring a live session on purpose.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::error::{Error, Result};
use zk_recipes::{ConnectionState, Framework};

/// ZooKeeper's `closeSession` op code.
const CLOSE_SESSION: i32 = -11;

/// Makes the server expire `framework`'s current session now, the way Curator's old
/// `KillSession` did: a second client connects with the same session id and password and
/// closes the session. A framework connected to a kit server's TLS port is expired through
/// that server's plaintext port. Returns once the framework has noticed the loss (its state went
/// `LOST`); it then builds a new session by itself. Called while the framework is still
/// building the session that replaces one it just lost, it waits for that session and expires
/// it: each call is one loss.
///
/// # Notable behaviors
/// A plain "connect, then close" races the framework, which reconnects at once when the
/// server hands its session to the impostor, and often takes it back before the close is
/// sent. So the impostor talks to the server through a one-shot relay that sends the
/// `closeSession` request right behind the impostor's connect request, in the same write: the
/// server closes the session before anyone else can reopen it.
///
/// # Errors
/// [`Error::Closed`] for a closed framework, [`Error::Io`] when the server cannot be reached,
/// [`Error::Timeout`] if the framework did not notice within 30 s.
///
/// # Cancel safety
/// Cancelling after the relay sent its requests still expires the session.
pub async fn expire_session(framework: &Framework) -> Result<()> {
    let server = first_server(framework.connect_string())
        .ok_or_else(|| Error::InvalidArgument(format!("no server in {:?}", framework.connect_string())))?;
    // the impostor speaks plaintext: to a kit server's TLS port, through its plaintext port
    #[cfg(feature = "tls")]
    let server = crate::tls::secure_port(&server).map_or(server, |(plain, _)| plain);
    expire_session_at(framework, &server).await
}

/// As [`expire_session`], with the impostor connecting to `server` (`host:port`, plaintext)
/// instead of the framework's first server: for a framework connected over TLS, the plaintext
/// client port of the same server or ensemble (sessions are the ensemble's, whatever the port).
///
/// # Errors
/// As [`expire_session`].
///
/// # Cancel safety
/// As [`expire_session`].
pub async fn expire_session_at(framework: &Framework, server: &str) -> Result<()> {
    let timeout = framework.negotiated_session_timeout()?;
    let server = server.to_owned();
    let mut rx = framework.status_watch();
    let limit = Duration::from_secs(30);
    let deadline = tokio::time::Instant::now() + limit;
    // A framework that lost its session a moment ago (an earlier expiry it is still recovering
    // from) is building the next one: that is the session to expire, not the dead one, whose
    // close the server ignores and whose loss the framework already counted.
    let rebuilt = rx.wait_for(|s| s.closed || s.state != ConnectionState::Lost);
    match tokio::time::timeout_at(deadline, rebuilt).await {
        Ok(Ok(s)) if !s.closed => {}
        Ok(_) => return Err(Error::Closed),
        Err(_) => return Err(Error::Timeout(limit)),
    }
    let before = *rx.borrow_and_update();
    // The server finishes the impostor's connect before it reads the close, so the framework,
    // moved off its session by the impostor, can reconnect to it in between and keep it: then
    // try again, at once.
    loop {
        let attempt = *rx.borrow_and_update();
        if attempt.closed {
            return Err(Error::Closed);
        }
        if attempt.losses > before.losses || attempt.session_id != before.session_id {
            return Ok(()); // an earlier attempt's close took effect late
        }
        let session = framework.session_info()?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let relay_addr = listener.local_addr()?.to_string();
        let relay = tokio::spawn(relay_once(listener, server.clone()));
        let impostor = zookeeper_client::Client::connector()
            .with_session(session)
            .with_session_timeout(timeout)
            .with_fail_eagerly()
            .connect(&relay_addr);
        // The impostor may or may not see its session before the close: either is fine.
        drop(tokio::time::timeout(Duration::from_secs(5), impostor).await);
        relay.abort();
        let settled = rx.wait_for(|s| {
            s.closed || s.losses > before.losses || (s.suspensions > attempt.suspensions && s.state.is_connected())
        });
        match tokio::time::timeout(Duration::from_secs(2), settled).await {
            Ok(Ok(s)) if s.closed => return Err(Error::Closed),
            Ok(Ok(s)) if s.losses > before.losses => return Ok(()),
            Ok(Ok(_)) => tracing::debug!("the framework took its session back from the impostor; expiring it again"),
            Ok(Err(_)) => return Err(Error::Closed),
            Err(_) => tracing::debug!("session survived the impostor; expiring it again"),
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Timeout(limit));
        }
    }
}

fn first_server(connect_string: &str) -> Option<String> {
    let hosts = connect_string.split('/').next()?;
    let first = hosts.split(',').next()?.trim();
    let first = first.strip_prefix("tcp://").unwrap_or(first);
    let first = first.strip_prefix("tcp+tls://").unwrap_or(first);
    (!first.is_empty()).then(|| first.to_string())
}

/// Accepts one client, forwards its first frame (the connect request) followed by a
/// `closeSession` request, then relays both ways until either side closes.
async fn relay_once(listener: TcpListener, server: String) -> std::io::Result<()> {
    let (mut client, _) = listener.accept().await?;
    let mut upstream = TcpStream::connect(&server).await?;
    let len = client.read_i32().await?;
    let mut frame = vec![0u8; usize::try_from(len).unwrap_or(0)];
    client.read_exact(&mut frame).await?;
    let mut out = Vec::with_capacity(frame.len() + 16);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&frame);
    out.extend_from_slice(&8i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes()); // xid
    out.extend_from_slice(&CLOSE_SESSION.to_be_bytes());
    upstream.write_all(&out).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}
