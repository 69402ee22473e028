//! `SharedCount`: a 32-bit counter in one node, in Curator's encoding.

use futures_core::Stream;

use super::cas::VersionedValue;
use super::value::{value_changes, SharedValue};
use crate::error::{Error, Result};
use crate::framework::Framework;

/// A shared 32-bit counter: Curator's `SharedCount`, a [`SharedValue`] holding an `i32`.
///
/// Increment safely with a loop of [`compare_and_set`](Self::compare_and_set): a refused write
/// returns the value that won, which is the next attempt's starting point, so the loop needs
/// no `get` (one round trip for a write, two for a refusal, as with Curator). Keep the last result to start the next increment from it (as Curator
/// keeps the last value it wrote or read); a stale one only costs a refused attempt.
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::SharedCount;
/// let count = SharedCount::new(&fw, "/counters/visits", 0)?;
/// count.start().await?;
/// let mut known = count.get().await?;
/// for _ in 0..3 {
///     // one increment
///     known = loop {
///         match count.compare_and_set(&known, known.value.wrapping_add(1)).await? {
///             Ok(written) => break written,
///             Err(current) => known = current, // someone else counted first
///         }
///     };
/// }
/// # Ok(()) }
/// ```
///
/// # Curator compatibility
/// One PERSISTENT node at `path` whose data is the count as 4 bytes, big-endian, signed
/// (Java's `ByteBuffer.putInt`); conditional writes use the node version, as Curator's
/// `trySetCount`. Data of any other length is reported as [`Error::CorruptData`], never
/// guessed at. A Curator `SharedCount` on the same path counts with us.
#[derive(Debug, Clone)]
pub struct SharedCount {
    value: SharedValue,
}

impl SharedCount {
    /// A shared count at `path`; `seed` is written by [`start`](Self::start) when the node
    /// does not exist yet.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path (or the root).
    pub fn new(fw: &Framework, path: &str, seed: i32) -> Result<Self> {
        Ok(Self { value: SharedValue::new(fw, path, seed.to_be_bytes())? })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// Creates the node with the seed if it does not exist (an existing count is kept).
    ///
    /// # Errors
    /// The framework's errors ([`Error::Closed`], [`Error::RetriesExhausted`], `NoAuth`...).
    ///
    /// # Cancel safety
    /// Cancel safe in the sense that nothing is left half-done: the node may or may not have
    /// been created.
    pub async fn start(&self) -> Result<()> {
        self.value.start().await
    }

    /// The current count and its version, read from the server.
    ///
    /// # Errors
    /// [`Error::CorruptData`] when the node does not hold exactly 4 bytes; `NoNode` as
    /// [`Error::ZooKeeper`] when it does not exist; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    #[doc(alias = "getCount")]
    #[doc(alias = "getVersionedValue")]
    pub async fn get(&self) -> Result<VersionedValue<i32>> {
        let raw = self.value.get().await?;
        Ok(VersionedValue { version: raw.version, value: decode(self.path(), &raw.value)? })
    }

    /// Writes `count` whatever the current one (Curator's `setCount`); creates the node when
    /// it is missing.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    #[doc(alias = "setCount")]
    pub async fn set(&self, count: i32) -> Result<()> {
        self.value.set(&count.to_be_bytes()).await
    }

    /// Writes `new` only if the node is still at `previous.version`: `Ok(Ok(written))` when
    /// written (`new` with the node's new version, one round trip), `Ok(Err(current))` when
    /// someone wrote in between (`current`: the count and version on the server now, read after
    /// the refusal). See [`SharedValue::compare_and_set`]; the
    /// type docs show the increment loop.
    ///
    /// # Errors
    /// * [`Error::CorruptData`] when the write was refused and the node does not hold exactly
    ///   4 bytes.
    /// * `NoNode` as [`Error::ZooKeeper`] when the write was refused because the node does not
    ///   exist: call [`start`](Self::start) first.
    /// * [`Error::OutcomeUnknown`] when a lost reply leaves it open whether our write was
    ///   applied (see [`SharedValue::try_set`]).
    /// * The framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    pub async fn compare_and_set(
        &self,
        previous: &VersionedValue<i32>,
        new: i32,
    ) -> Result<std::result::Result<VersionedValue<i32>, VersionedValue<i32>>> {
        Ok(match self.value.compare_and_set_version(previous.version, &new.to_be_bytes()).await? {
            Ok(version) => Ok(VersionedValue { version, value: new }),
            Err(current) => {
                Err(VersionedValue { version: current.version, value: decode(self.path(), &current.value)? })
            }
        })
    }

    /// Writes `new` only if the node is still at `previous.version` (Curator's
    /// `trySetCount`): `Ok(true)` when written, `Ok(false)` when someone wrote in between.
    /// [`compare_and_set`](Self::compare_and_set) also returns the count that won.
    ///
    /// # Errors
    /// [`Error::OutcomeUnknown`] when a lost reply leaves it open whether our write was
    /// applied (see [`SharedValue::try_set`]); the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    #[doc(alias = "trySetCount")]
    pub async fn try_set(&self, previous: &VersionedValue<i32>, new: i32) -> Result<bool> {
        self.value.try_set_version(previous.version, &new.to_be_bytes()).await
    }

    /// The count as it changes; see [`SharedValue::changes`]. A value that is not 4 bytes
    /// long is yielded as [`Error::CorruptData`], and the stream goes on.
    #[doc(alias = "addListener")]
    pub fn changes(&self) -> impl Stream<Item = Result<VersionedValue<i32>>> + Send + 'static {
        value_changes(self.value.framework().clone(), self.path().to_string(), decode)
    }
}

/// Curator's encoding: exactly 4 bytes, big-endian, signed.
fn decode(path: &str, bytes: &[u8]) -> Result<i32> {
    let bytes: [u8; 4] = bytes.try_into().map_err(|_| Error::CorruptData {
        path: path.to_string(),
        reason: format!("a shared count is 4 bytes, found {}", bytes.len()),
    })?;
    Ok(i32::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use assert_matches::assert_matches;

    #[test]
    fn decodes_curator_bytes() {
        assert_matches!(decode("/c", &[0, 0, 0, 0x2d]), Ok(45));
        assert_matches!(decode("/c", &(-7i32).to_be_bytes()), Ok(-7));
        assert_matches!(decode("/c", &i32::MIN.to_be_bytes()), Ok(i32::MIN));
        for bad in [&[][..], &[1, 2, 3], &[0, 0, 0, 0, 1]] {
            assert!(matches!(decode("/c", bad), Err(Error::CorruptData { .. })), "{bad:?}");
        }
    }
}
