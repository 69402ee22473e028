//! The numbers a distributed atomic counter can hold, and how they are read from node data.

use crate::error::{Error, Result};

/// A number stored big-endian in a node (8 bytes for `i64`, 4 for `i32`), as Curator does.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::counter::{AtomicNumber, DistributedAtomicNumber};
///
/// // generic over Curator's two widths: i64 (DistributedAtomicLong) and i32 (…Integer)
/// async fn bump<T: AtomicNumber>(counter: &DistributedAtomicNumber<T>) -> zk_recipes::Result<T> {
///     Ok(counter.increment().await?.post_value)
/// }
/// let hits = DistributedAtomicNumber::<i64>::new(&fw, "/counters/hits")?;
/// println!("{}", bump(&hits).await?);
/// # Ok(()) }
/// ```
pub trait AtomicNumber: Copy + Eq + std::fmt::Debug + std::fmt::Display + Send + Sync + 'static {
    /// Bytes on the wire.
    const WIDTH: usize;
    /// Big-endian bytes.
    fn encode(self) -> Vec<u8>;
    /// From big-endian bytes of exactly [`WIDTH`](Self::WIDTH).
    fn decode(bytes: &[u8]) -> Option<Self>;
    /// `self + delta`, wrapping on overflow as Java does.
    fn wrapping_add(self, delta: Self) -> Self;
    /// `-self`, wrapping.
    fn wrapping_neg(self) -> Self;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
}

macro_rules! atomic_number {
    ($t:ty, $w:expr) => {
        impl AtomicNumber for $t {
            const WIDTH: usize = $w;
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn encode(self) -> Vec<u8> {
                self.to_be_bytes().to_vec()
            }
            fn decode(bytes: &[u8]) -> Option<Self> {
                bytes.try_into().ok().map(<$t>::from_be_bytes)
            }
            fn wrapping_add(self, delta: Self) -> Self {
                <$t>::wrapping_add(self, delta)
            }
            fn wrapping_neg(self) -> Self {
                <$t>::wrapping_neg(self)
            }
        }
    };
}

atomic_number!(i64, 8);
atomic_number!(i32, 4);

/// The number in `bytes` (node data at `path`): empty data is zero, any length other than
/// [`AtomicNumber::WIDTH`] is [`Error::CorruptData`].
pub(super) fn decode<T: AtomicNumber>(path: &str, bytes: &[u8]) -> Result<T> {
    if bytes.is_empty() {
        return Ok(T::ZERO);
    }
    T::decode(bytes).ok_or_else(|| Error::CorruptData {
        path: path.to_string(),
        reason: format!("expected {} bytes (big-endian), found {}", T::WIDTH, bytes.len()),
    })
}
