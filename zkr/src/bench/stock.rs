//! The stock node of the per-entity rows (`entity` and its ceiling `raw_entity`): an ASCII
//! decimal count that each sale decrements.

use zk_recipes::Error;

/// Every entity's stock when a run starts.
pub(crate) const STOCK: i64 = 1_000_000_000;

/// A stock node's value.
///
/// # Errors
/// [`Error::CorruptData`] when `data` is not a decimal number.
pub(crate) fn parse(path: &str, data: &[u8]) -> zk_recipes::Result<i64> {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::corrupt_data(path, format!("{:?} is not a number", String::from_utf8_lossy(data))))
}
