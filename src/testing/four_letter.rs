//! ZooKeeper's four-letter words (`srvr`, `cons`, `ruok`, ...).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{Error, Result};

/// Sends a four-letter word to `addr` (`host:port`) and returns the answer.
///
/// # Errors
/// [`Error::Io`] when the server cannot be reached, [`Error::Timeout`] after 3 s.
///
/// # Cancel safety
/// Cancel safe.
pub async fn four_letter_word(addr: &str, word: &str) -> Result<String> {
    let limit = Duration::from_secs(3);
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(word.as_bytes()).await?;
        let mut out = String::new();
        stream.read_to_string(&mut out).await?;
        Ok::<_, std::io::Error>(out)
    };
    match tokio::time::timeout(limit, exchange).await {
        Err(_) => Err(Error::Timeout(limit)),
        Ok(Err(e)) => Err(Error::Io(format!("{word} to {addr}: {e}"))),
        Ok(Ok(out)) => Ok(out),
    }
}

/// The `Mode:` a server reports (`standalone`, `leader`, `follower`), or `None` when it does
/// not serve.
pub async fn server_mode(addr: &str) -> Option<String> {
    let out = four_letter_word(addr, "srvr").await.ok()?;
    out.lines().find_map(|l| l.strip_prefix("Mode: ")).map(|m| m.trim().to_string())
}
