//! ZooKeeper's four-letter-word admin commands (`srvr`, `stat`, `mntr`, `ruok`, ...) over TCP.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{Error, Result};

/// How long [`four_letter_word`] waits for the whole exchange.
pub const FOUR_LETTER_WORD_TIMEOUT: Duration = Duration::from_secs(5);

/// The role a server reports on the `Mode:` line of `srvr` or `stat`.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMode {
    /// A single server without an ensemble.
    Standalone,
    /// The leader of an ensemble.
    Leader,
    /// A voting follower of an ensemble.
    Follower,
    /// A non-voting observer of an ensemble.
    Observer,
    /// A server that lost its quorum and serves reads only (`readonlymode.enabled`).
    ReadOnly,
    /// Any other mode string.
    Other(String),
}

impl ServerMode {
    /// Reads the `Mode:` line of a `srvr` or `stat` answer. `None` when there is none, which is
    /// what a server says while it is not serving requests (during startup or an election).
    pub fn parse(answer: &str) -> Option<ServerMode> {
        let mode = answer.lines().find_map(|line| line.strip_prefix("Mode:"))?.trim();
        Some(match mode {
            "standalone" => ServerMode::Standalone,
            "leader" => ServerMode::Leader,
            "follower" => ServerMode::Follower,
            "observer" => ServerMode::Observer,
            "read-only" => ServerMode::ReadOnly,
            other => ServerMode::Other(other.to_string()),
        })
    }

    /// Whether this is a member of a working ensemble: leader or follower.
    pub fn is_quorum_member(&self) -> bool {
        matches!(self, ServerMode::Leader | ServerMode::Follower)
    }
}

/// Sends the four-letter word `word` to the server at `addr` (`"host:port"`) and returns its
/// whole answer, waiting at most [`FOUR_LETTER_WORD_TIMEOUT`].
///
/// The server must allow the word (`4lw.commands.whitelist`); the kit's servers allow all.
///
/// # Errors
/// - [`Error::InvalidArgument`] if `word` is not four ASCII letters.
/// - [`Error::Io`] if the connection is refused or breaks.
/// - [`Error::Timeout`] if the answer does not complete in time (a paused server accepts the
///   connection but never answers).
///
/// # Cancel safety
/// Cancel safe: dropping the future closes the connection.
pub async fn four_letter_word(addr: &str, word: &str) -> Result<String> {
    four_letter_word_with_timeout(addr, word, FOUR_LETTER_WORD_TIMEOUT).await
}

/// [`four_letter_word`] with a chosen timeout.
///
/// # Errors
/// As [`four_letter_word`], with [`Error::Timeout`] carrying `timeout`.
///
/// # Cancel safety
/// Cancel safe.
pub async fn four_letter_word_with_timeout(addr: &str, word: &str, timeout: Duration) -> Result<String> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return Err(Error::InvalidArgument(format!("{word:?} is not a four-letter word")));
    }
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(word.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => Err(Error::Timeout(timeout)),
        Ok(Err(e)) => Err(Error::io(format!("four-letter word {word} to {addr}: {e}"))),
        Ok(Ok(answer)) => Ok(String::from_utf8_lossy(&answer).into_owned()),
    }
}

/// The mode the server at `addr` reports in its `srvr` answer; `None` while it is not serving.
///
/// # Errors
/// As [`four_letter_word_with_timeout`].
///
/// # Cancel safety
/// Cancel safe.
pub async fn server_mode(addr: &str, timeout: Duration) -> Result<Option<ServerMode>> {
    let answer = four_letter_word_with_timeout(addr, "srvr", timeout).await?;
    Ok(ServerMode::parse(&answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mode_lines() {
        let answer = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\n\
                      Received: 1\nMode: follower\nNode count: 5\n";
        assert_eq!(ServerMode::parse(answer), Some(ServerMode::Follower));
        assert_eq!(ServerMode::parse("Mode: standalone\n"), Some(ServerMode::Standalone));
        assert_eq!(ServerMode::parse("Mode: read-only\n"), Some(ServerMode::ReadOnly));
        assert_eq!(ServerMode::parse("This ZooKeeper instance is not currently serving requests\n"), None);
        assert!(ServerMode::Leader.is_quorum_member());
        assert!(!ServerMode::Standalone.is_quorum_member());
    }

    #[tokio::test]
    async fn rejects_bad_words() {
        let err = four_letter_word("127.0.0.1:1", "status").await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)));
    }
}
