//! Node data compression: Curator's `CompressionProvider` and its gzip default, in the same
//! bytes, so that a node compressed by one side reads on the other.
//!
//! Where it applies: [`Framework::compressed`] (one handle, Curator's `.compressed()` /
//! `.decompressed()` on one call) and [`FrameworkBuilder::enable_compression`] (every handle,
//! Curator 5.8's `enableCompression()`); [`Framework::uncompressed`] opts one handle out again
//! (Curator's `.uncompressed()` / `.undecompressed()`).
//!
//! [`FrameworkBuilder::enable_compression`]: super::FrameworkBuilder::enable_compression

use std::borrow::Cow;
use std::sync::Arc;

use flate2::{Compress, Compression, Crc, Decompress, FlushCompress, FlushDecompress, Status};

use super::Framework;
use crate::error::{Error, Result};

/// Compresses node data on its way to ZooKeeper and decompresses it on the way back:
/// Curator's `CompressionProvider`.
///
/// [`GzipCompression`] is the default (Curator's `GzipCompressionProvider`); install another
/// with [`FrameworkBuilder::compression_provider`](crate::FrameworkBuilder::compression_provider).
/// Both methods get the node's path (relative to the namespace), so a provider can compress
/// some subtrees only — Curator's advice for "filtered" compression with the framework-wide
/// switch.
///
/// # Errors
/// A provider reports data it cannot read as [`Error::CorruptData`] (built with
/// [`Error::corrupt_data`]); the framework returns it from the read as is, and never panics.
///
/// # Examples
/// ```
/// use zk_recipes::{CompressionProvider, Error, Result};
///
/// /// Compresses nothing, but marks what it wrote with a leading byte.
/// #[derive(Debug)]
/// struct Tagged;
///
/// impl CompressionProvider for Tagged {
///     fn compress(&self, _path: &str, data: &[u8]) -> Result<Vec<u8>> {
///         Ok([&[0x7f][..], data].concat())
///     }
///     fn decompress(&self, path: &str, data: &[u8]) -> Result<Vec<u8>> {
///         match data.split_first() {
///             Some((0x7f, rest)) => Ok(rest.to_vec()),
///             _ => Err(Error::corrupt_data(path, "not tagged")),
///         }
///     }
/// }
///
/// let t = Tagged;
/// assert_eq!(t.decompress("/a", &t.compress("/a", b"x")?)?, b"x");
/// assert!(t.decompress("/a", b"x").is_err());
/// # Ok::<(), Error>(())
/// ```
pub trait CompressionProvider: Send + Sync + 'static {
    /// The bytes to store for `data` at `path`.
    ///
    /// # Errors
    /// Whatever the provider cannot compress; the write is not sent.
    fn compress(&self, path: &str, data: &[u8]) -> Result<Vec<u8>>;

    /// The data stored as `compressed` at `path`.
    ///
    /// # Errors
    /// [`Error::CorruptData`] for bytes that are not what [`compress`](Self::compress) writes.
    fn decompress(&self, path: &str, compressed: &[u8]) -> Result<Vec<u8>>;
}

/// Gzip, byte for byte as Curator's `GzipCompressionProvider` writes it: the default
/// [`CompressionProvider`].
///
/// The output is one gzip member (RFC 1952) with the fixed 10-byte header Curator writes
/// (`1f 8b 08 00`, no modification time, no extra flags, OS byte 0 — what Curator 5.0 to 5.5
/// write; Curator 5.6 and later write 255 there on Java 16 and later, and every reader skips
/// it), the DEFLATE stream at the default level, then the CRC-32 and the length. Empty data
/// compresses to the same 20 bytes as in Curator. The DEFLATE stream comes from a pure-Rust
/// encoder (flate2's default backend): for short data it is the same bytes as Java's zlib
/// writes, for longer data it may be other (equally valid) bytes; each side reads the other's.
///
/// Reading follows Curator's reader: the header's optional fields are skipped, and anything
/// that is not exactly one well-formed gzip member — other data, a truncated stream, bytes
/// after the member, a wrong CRC or length — is [`Error::CorruptData`]. In particular data
/// that was written *uncompressed* does not read through a compressing framework: Curator
/// (up to 5.9, with `.decompressed()` or `enableCompression()`) throws a `ZipException`
/// ("Not in GZip format") there and has no fallback; this type answers
/// [`Error::CorruptData`] in the same place. Read such nodes with an
/// [`uncompressed`](Framework::uncompressed) handle.
///
/// # Examples
/// ```
/// use zk_recipes::{CompressionProvider, ErrorKind, GzipCompression};
///
/// let gzip = GzipCompression::default();
/// let stored = gzip.compress("/config", b"hello hello hello")?;
/// assert_eq!(&stored[..2], &[0x1f, 0x8b]); // the gzip magic
/// assert_eq!(gzip.decompress("/config", &stored)?, b"hello hello hello");
///
/// let plain = gzip.decompress("/config", b"hello").unwrap_err();
/// assert_eq!(plain.kind(), ErrorKind::CorruptData);
/// # Ok::<(), zk_recipes::Error>(())
/// ```
///
/// # A cap on what a node inflates to
/// DEFLATE shrinks repetitive data up to about 1,000 times, so a node of ZooKeeper's
/// default `jute.maxbuffer` (1 MiB) can hold a "gzip bomb" of a gigabyte. Reading stops at
/// [`limit`](Self::limit) decompressed bytes — [`DEFAULT_LIMIT`](Self::DEFAULT_LIMIT)
/// (16 MiB, sixteen times the largest node a default server stores) unless
/// [`with_limit`](Self::with_limit) chose another — and answers [`Error::CorruptData`]: no
/// more than the limit (plus one buffer step) is ever allocated, and nothing panics. Curator
/// has no such cap; data it writes is at most the limit of the node it came from, well below.
///
/// ```
/// use zk_recipes::{CompressionProvider, ErrorKind, GzipCompression};
///
/// let small = GzipCompression::with_limit(1024);
/// let bomb = small.compress("/bomb", &vec![0u8; 1 << 20])?; // 1 MiB of zeros, ~1 KiB stored
/// assert_eq!(small.decompress("/bomb", &bomb).unwrap_err().kind(), ErrorKind::CorruptData);
/// assert_eq!(GzipCompression::default().decompress("/bomb", &bomb)?.len(), 1 << 20);
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GzipCompression {
    limit: usize,
}

impl Default for GzipCompression {
    fn default() -> Self {
        GzipCompression { limit: Self::DEFAULT_LIMIT }
    }
}

impl GzipCompression {
    /// The default cap on decompressed data: 16 MiB.
    pub const DEFAULT_LIMIT: usize = 16 << 20;

    /// Gzip that refuses to decompress more than `limit` bytes of one node's data
    /// ([`Error::CorruptData`] beyond it). Compressing is not limited.
    ///
    /// # Examples
    /// ```
    /// use zk_recipes::{Framework, GzipCompression};
    ///
    /// let builder = Framework::builder()
    ///     .connect_string("zk1:2181")
    ///     .enable_compression()
    ///     .compression_provider(GzipCompression::with_limit(2 << 20)); // 2 MiB
    /// # drop(builder);
    /// ```
    pub const fn with_limit(limit: usize) -> Self {
        GzipCompression { limit }
    }

    /// The cap on decompressed data, in bytes.
    pub const fn limit(&self) -> usize {
        self.limit
    }
}

/// The header Curator writes: magic, DEFLATE, no flags, no time, no extra flags, OS 0.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0];
/// An empty DEFLATE stream (one final fixed-Huffman block) as zlib writes it.
const EMPTY_DEFLATE: [u8; 2] = [3, 0];
const TRAILER: usize = 8;
/// The header's flags (RFC 1952 2.3.1).
const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;

impl CompressionProvider for GzipCompression {
    fn compress(&self, path: &str, data: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(HEADER.len() + data.len() / 2 + 64 + TRAILER);
        out.extend_from_slice(&HEADER);
        if data.is_empty() {
            out.extend_from_slice(&EMPTY_DEFLATE);
        } else {
            deflate(path, data, &mut out)?;
        }
        let mut crc = Crc::new();
        crc.update(data);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE is the length modulo 2^32 (RFC 1952); node data is far below it
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        Ok(out)
    }

    fn decompress(&self, path: &str, compressed: &[u8]) -> Result<Vec<u8>> {
        let corrupt = |reason: &str| Error::corrupt_data(path, format!("gzip: {reason}"));
        let start = header_len(compressed).map_err(corrupt)?;
        if compressed.len() < start + EMPTY_DEFLATE.len() + TRAILER {
            return Err(corrupt("too short"));
        }
        let end = compressed.len() - TRAILER;
        let data = inflate(&compressed[start..end], self.limit).map_err(|e| match e {
            Inflate::Corrupt(reason) => corrupt(reason),
            Inflate::TooLarge => corrupt(&format!("decompresses to more than the limit of {} bytes", self.limit)),
        })?;
        let le = |at: usize| {
            u32::from_le_bytes([compressed[at], compressed[at + 1], compressed[at + 2], compressed[at + 3]])
        };
        let mut crc = Crc::new();
        crc.update(&data);
        if le(end) != crc.sum() || le(end + 4) != data.len() as u32 {
            return Err(corrupt("wrong CRC or length in the trailer"));
        }
        Ok(data)
    }
}

/// Appends the raw DEFLATE stream of `data` at the default level (zlib's 6, as Java's).
fn deflate(path: &str, data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let mut deflater = Compress::new(Compression::default(), false);
    loop {
        out.reserve(out.len().max(64));
        let consumed = deflater.total_in() as usize;
        let status = deflater
            .compress_vec(&data[consumed..], out, FlushCompress::Finish)
            .map_err(|e| Error::corrupt_data(path, format!("gzip: {e}")))?;
        if status == Status::StreamEnd {
            return Ok(());
        }
    }
}

/// The length of the gzip header at the start of `bytes`, its optional fields included.
fn header_len(bytes: &[u8]) -> std::result::Result<usize, &'static str> {
    const SHORT: &str = "truncated header";
    if bytes.len() < 2 || bytes[..2] != HEADER[..2] {
        return Err(if bytes.len() < 2 { SHORT } else { "not in gzip format" });
    }
    if bytes.get(2) != Some(&8) {
        return Err(if bytes.len() < 3 { SHORT } else { "unsupported compression method" });
    }
    let flags = *bytes.get(3).ok_or(SHORT)?;
    let mut at = HEADER.len();
    if flags & FEXTRA != 0 {
        let extra = bytes.get(at..at + 2).ok_or(SHORT)?;
        at += 2 + usize::from(u16::from_le_bytes([extra[0], extra[1]]));
    }
    for field in [FNAME, FCOMMENT] {
        if flags & field != 0 {
            let rest = bytes.get(at..).ok_or(SHORT)?;
            at += rest.iter().position(|&b| b == 0).ok_or(SHORT)? + 1;
        }
    }
    if flags & FHCRC != 0 {
        let stored = bytes.get(at..at + 2).ok_or(SHORT)?;
        let mut crc = Crc::new();
        crc.update(&bytes[..at]);
        if u16::from_le_bytes([stored[0], stored[1]]) != (crc.sum() & 0xffff) as u16 {
            return Err("wrong header CRC");
        }
        at += 2;
    }
    if at > bytes.len() {
        return Err(SHORT);
    }
    Ok(at)
}

/// Why [`inflate`] stopped.
enum Inflate {
    Corrupt(&'static str),
    TooLarge,
}

/// Inflates one complete raw DEFLATE stream that fills `body` exactly, to at most `limit`
/// bytes: the buffer never grows past `limit + 1`.
fn inflate(body: &[u8], limit: usize) -> std::result::Result<Vec<u8>, Inflate> {
    let cap = limit.saturating_add(1);
    let mut inflater = Decompress::new(false);
    let mut out = Vec::with_capacity(body.len().saturating_mul(3).min(1 << 20).min(cap));
    loop {
        if out.len() == out.capacity() {
            let room = cap.saturating_sub(out.capacity());
            if room == 0 {
                return Err(Inflate::TooLarge);
            }
            out.reserve_exact(out.capacity().max(64).min(room));
        }
        let (read, written) = (inflater.total_in(), inflater.total_out());
        let status = inflater
            .decompress_vec(&body[read as usize..], &mut out, FlushDecompress::None)
            .map_err(|_| Inflate::Corrupt("invalid DEFLATE data"))?;
        if out.len() > limit {
            return Err(Inflate::TooLarge);
        }
        if status == Status::StreamEnd {
            break;
        }
        let stalled = inflater.total_in() == read && inflater.total_out() == written;
        if stalled && out.len() < out.capacity() {
            return Err(Inflate::Corrupt("truncated DEFLATE data"));
        }
    }
    if inflater.total_in() as usize != body.len() {
        return Err(Inflate::Corrupt("bytes after the gzip member"));
    }
    Ok(out)
}

/// The provider a framework was built with, shared by its handles.
#[derive(Clone)]
pub(crate) struct Codec(pub Arc<dyn CompressionProvider>);

impl Default for Codec {
    fn default() -> Self {
        Codec(Arc::new(GzipCompression::default()))
    }
}

impl std::fmt::Debug for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompressionProvider")
    }
}

impl Framework {
    /// A handle on the same session whose data operations compress what they write and
    /// decompress what they read with the framework's
    /// [`CompressionProvider`] (gzip unless [`compression_provider`] chose another): Curator's
    /// `.compressed()` on `create`/`setData` and `.decompressed()` on `getData`.
    ///
    /// The handle is cheap (one `Arc` clone) and shares everything with `self`; dropping it
    /// closes nothing. It applies to [`create`](Self::create),
    /// [`create_protected`](Self::create_protected),
    /// [`create_with_ttl`](Self::create_with_ttl), [`get_data`](Self::get_data),
    /// [`multi_read`](Self::multi_read), [`set_data`](Self::set_data),
    /// [`update_many`](Self::update_many) and the creates and writes of a
    /// [`transaction`](Self::transaction). Errors of a data operation on it include those of
    /// the provider: [`Error::CorruptData`] for a node that is not compressed.
    ///
    /// [`compression_provider`]: crate::FrameworkBuilder::compression_provider
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::CreateMode;
    ///
    /// let gz = fw.compressed();
    /// gz.create("/config/big", &vec![b'x'; 100_000], CreateMode::Persistent).await?;
    /// let (data, _) = gz.get_data("/config/big").await?;  // decompressed
    /// assert_eq!(data.len(), 100_000);
    /// let (raw, _) = fw.uncompressed().get_data("/config/big").await?; // gzip bytes
    /// assert_eq!(&raw[..2], &[0x1f, 0x8b]);
    /// # Ok(()) }
    /// ```
    pub fn compressed(&self) -> Framework {
        Framework { compress: Some(true), ..self.clone() }
    }

    /// A handle on the same session whose data operations neither compress nor decompress,
    /// also when the framework was built with
    /// [`enable_compression`](crate::FrameworkBuilder::enable_compression): Curator's
    /// `.uncompressed()` and `.undecompressed()`. See [`compressed`](Self::compressed).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// // a node some other program wrote as plain text, read by a compressing framework
    /// let (text, _) = fw.uncompressed().get_data("/legacy/motd").await?;
    /// # drop(text); Ok(()) }
    /// ```
    pub fn uncompressed(&self) -> Framework {
        Framework { compress: Some(false), ..self.clone() }
    }

    /// Whether this handle's data operations compress: set by [`compressed`](Self::compressed)
    /// and [`uncompressed`](Self::uncompressed), else by
    /// [`enable_compression`](crate::FrameworkBuilder::enable_compression) (off by default).
    pub fn compression_enabled(&self) -> bool {
        self.compress.unwrap_or(self.inner.cfg.compression_enabled)
    }

    /// The provider when this handle compresses.
    pub(crate) fn codec(&self) -> Option<&dyn CompressionProvider> {
        self.compression_enabled().then(|| &*self.inner.cfg.compression.0)
    }

    /// `data` as this handle stores it at `path`.
    pub(crate) fn encode<'a>(&self, path: &str, data: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        match self.codec() {
            Some(codec) => codec.compress(path, data).map(Cow::Owned),
            None => Ok(Cow::Borrowed(data)),
        }
    }

    /// The data this handle reads from `stored` at `path`.
    pub(crate) fn decode(&self, path: &str, stored: Vec<u8>) -> Result<Vec<u8>> {
        match self.codec() {
            Some(codec) => codec.decompress(path, &stored),
            None => Ok(stored),
        }
    }

    /// [`decode`](Self::decode) for a recipe's node where empty data means "no data" also
    /// under compression: the parents the framework makes (containers, empty, never
    /// compressed — as Curator makes them), a node a recipe made empty. No compressed data is
    /// empty (gzip of nothing is 20 bytes), so nothing is taken for another.
    pub(crate) fn decode_or_empty(&self, path: &str, stored: Vec<u8>) -> Result<Vec<u8>> {
        if stored.is_empty() {
            return Ok(stored);
        }
        self.decode(path, stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn gz() -> GzipCompression {
        GzipCompression::default()
    }

    #[test]
    fn empty_is_curators_twenty_bytes() {
        let empty = gz().compress("/p", b"").unwrap();
        assert_eq!(empty, [31, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(gz().decompress("/p", &empty).unwrap(), b"");
        // Curator 5.6+ on Java 16+ writes OS 255: read all the same
        let mut java17 = empty.clone();
        java17[9] = 0xff;
        assert_eq!(gz().decompress("/p", &java17).unwrap(), b"");
    }

    #[test]
    fn round_trips() {
        for len in [1usize, 2, 100, 511, 512, 4096, 300_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let stored = gz().compress("/p", &data).unwrap();
            assert_eq!(&stored[..10], &HEADER);
            assert_eq!(gz().decompress("/p", &stored).unwrap(), data, "len {len}");
        }
    }

    #[test]
    fn reads_optional_header_fields() {
        // what GzBuilder writes with a name, a comment and extra bytes (and OS 255)
        use std::io::Write;
        let mut enc = flate2::GzBuilder::new()
            .filename("n")
            .comment("c")
            .extra(vec![1, 2, 3])
            .write(Vec::new(), Compression::best());
        enc.write_all(b"payload").unwrap();
        let stored = enc.finish().unwrap();
        assert_eq!(gz().decompress("/p", &stored).unwrap(), b"payload");
    }

    #[test]
    fn corrupt_data_is_a_typed_error() {
        let good = gz().compress("/p", b"some data to compress").unwrap();
        let mut bad_crc = good.clone();
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 1;
        let mut garbage = good.clone();
        garbage.insert(n - 8, 0);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("plain", b"plain text".to_vec()),
            ("empty", Vec::new()),
            ("one byte", vec![0x1f]),
            ("magic only", vec![0x1f, 0x8b]),
            ("bad method", vec![0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            ("header only", HEADER.to_vec()),
            ("truncated", good[..good.len() - 3].to_vec()),
            ("cut stream", [&good[..12], &good[good.len() - 8..]].concat()),
            ("bad crc", bad_crc),
            ("garbage", garbage),
            ("name unterminated", vec![0x1f, 0x8b, 8, FNAME, 0, 0, 0, 0, 0, 0, b'a', b'b']),
            ("extra too long", vec![0x1f, 0x8b, 8, FEXTRA, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8]),
        ];
        for (what, bytes) in cases {
            let e = gz().decompress("/p", &bytes).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::CorruptData, "{what}: {e}");
        }
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_limit() {
        // 64 MiB of zeros: about 64 KiB stored
        let bomb = gz().compress("/p", &vec![0u8; 64 << 20]).unwrap();
        assert!(bomb.len() < 100_000, "{}", bomb.len());
        let e = gz().decompress("/p", &bomb).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CorruptData, "{e}");
        assert!(e.to_string().contains("limit"), "{e}");
        for limit in [0, 1, 63, 64, 65, 1000] {
            let small = GzipCompression::with_limit(limit);
            let data = vec![7u8; 1000];
            let stored = small.compress("/p", &data).unwrap();
            let read = small.decompress("/p", &stored);
            if limit >= 1000 {
                assert_eq!(read.unwrap(), data);
            } else {
                assert_eq!(read.unwrap_err().kind(), ErrorKind::CorruptData, "limit {limit}");
            }
        }
        // exactly at the limit reads; empty data reads under a zero limit
        let exact = GzipCompression::with_limit(1 << 20);
        assert_eq!(exact.decompress("/p", &exact.compress("/p", &vec![1u8; 1 << 20]).unwrap()).unwrap().len(), 1 << 20);
        let zero = GzipCompression::with_limit(0);
        assert_eq!(zero.decompress("/p", &zero.compress("/p", b"").unwrap()).unwrap(), b"");
    }

    #[test]
    fn compresses_repetitive_data() {
        let data = vec![b'a'; 10_000];
        assert!(gz().compress("/p", &data).unwrap().len() < 100);
    }
}
