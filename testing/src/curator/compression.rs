//! The peer's `gzip.*` commands: Curator's compressed writes and reads
//! (`CompressionCommands.java`, compiled with the peer).

use super::parse::{hex, parse_num, unhex, words};
use super::CuratorPeer;
use crate::{Error, Result};

impl CuratorPeer {
    /// `gzip.create`: client `cid` creates `path` with `data` through Curator's
    /// `.compressed()` (missing parents as containers).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws, e.g. `NodeExistsException`.
    pub async fn gzip_create(&self, cid: &str, path: &str, data: &[u8]) -> Result<()> {
        self.call(&words(&["gzip.create", cid, path, &hex(data)])?).await.map(drop)
    }

    /// `gzip.create.protected`: client `cid` creates a protected ephemeral-sequential node
    /// `path` + sequence (`<parent>/_c_<uuid>-<name><seq>`) holding `data` through
    /// `.compressed()` — what Curator 5.8's `LeaderLatch` writes under `enableCompression()`.
    /// Returns the created path.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws.
    pub async fn gzip_create_protected(&self, cid: &str, path: &str, data: &[u8]) -> Result<String> {
        self.call(&words(&["gzip.create.protected", cid, path, &hex(data)])?).await
    }

    /// `gzip.set`: client `cid` sets the data of `path` through `.compressed()`. Returns the
    /// new data version.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws, e.g. `NoNodeException`.
    pub async fn gzip_set(&self, cid: &str, path: &str, data: &[u8]) -> Result<i32> {
        parse_num(&self.call(&words(&["gzip.set", cid, path, &hex(data)])?).await?)
    }

    /// `gzip.get`: client `cid` reads `path` through `.decompressed()`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when Curator throws: `NoNodeException`, or for data that is not gzip
    /// Curator's `ZipException` / `EOFException` (its message names the class).
    pub async fn gzip_get(&self, cid: &str, path: &str) -> Result<Vec<u8>> {
        self.bytes(&words(&["gzip.get", cid, path])?).await
    }

    /// `gzip.compress`: the bytes Curator's `GzipCompressionProvider` writes for `data`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when the peer is gone.
    pub async fn gzip_compress(&self, data: &[u8]) -> Result<Vec<u8>> {
        self.bytes(&words(&["gzip.compress", &hex(data)])?).await
    }

    /// `gzip.decompress`: what Curator's `GzipCompressionProvider` reads from `stored`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] with Curator's exception for data that is not gzip.
    pub async fn gzip_decompress(&self, stored: &[u8]) -> Result<Vec<u8>> {
        self.bytes(&words(&["gzip.decompress", &hex(stored)])?).await
    }

    async fn bytes(&self, command: &str) -> Result<Vec<u8>> {
        let answer = self.call(command).await?;
        unhex(&answer)?.ok_or_else(|| Error::Peer(format!("no data in the answer {answer:?}")))
    }
}
