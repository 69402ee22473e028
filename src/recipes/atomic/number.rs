//! `DistributedAtomicLong` and `DistributedAtomicInteger`: big-endian numbers on the value
//! engine.

use std::marker::PhantomData;

use super::value::{AtomicOptions, AtomicValue, DistributedAtomicValue};
use crate::error::{Error, Result};
use crate::framework::Framework;

/// A number stored big-endian in a node (8 bytes for `i64`, 4 for `i32`), as Curator does.
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

/// A distributed atomic number: Curator's `DistributedAtomicLong` (`i64`, 8 bytes) and
/// `DistributedAtomicInteger` (`i32`, 4 bytes).
///
/// Every operation returns an [`AtomicValue`]: whether it succeeded, the value before and
/// after, and the tries it took. Under contention no increment is lost or counted twice, also
/// when a reply is lost to a connection failure (see [`DistributedAtomicValue`]).
///
/// # Curator compatibility
/// One persistent node, data big-endian signed, missing node or empty data = 0. A Curator
/// process incrementing the same node adds up with this one.
///
/// # Errors
/// Node data of another length is reported as [`Error::CorruptData`], never guessed at. When
/// the retry policy gives up while a write's reply is still missing, the operation reports
/// [`Error::OutcomeUnknown`] (the write may or may not have been applied) rather than a plain
/// failure.
#[derive(Debug, Clone)]
pub struct DistributedAtomicNumber<T: AtomicNumber> {
    value: DistributedAtomicValue,
    _number: PhantomData<T>,
}

/// Curator's `DistributedAtomicLong`.
pub type DistributedAtomicLong = DistributedAtomicNumber<i64>;
/// Curator's `DistributedAtomicInteger`.
pub type DistributedAtomicInteger = DistributedAtomicNumber<i32>;

impl<T: AtomicNumber> DistributedAtomicNumber<T> {
    /// A number at `path` with default options (10,000 optimistic tries, no promotion).
    ///
    /// # Errors
    /// [`Error::InvalidPath`].
    pub fn new(fw: &Framework, path: &str) -> Result<Self> {
        Self::with_options(fw, path, AtomicOptions::default())
    }

    /// A number at `path` with `options`.
    ///
    /// # Errors
    /// As [`DistributedAtomicValue::new`].
    pub fn with_options(fw: &Framework, path: &str, options: AtomicOptions) -> Result<Self> {
        Ok(Self { value: DistributedAtomicValue::new(fw, path, options)?, _number: PhantomData })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.value.path()
    }

    fn decode(&self, bytes: &[u8]) -> Result<T> {
        if bytes.is_empty() {
            return Ok(T::ZERO);
        }
        T::decode(bytes).ok_or_else(|| Error::CorruptData {
            path: self.value.path().to_string(),
            reason: format!("expected {} bytes (big-endian), found {}", T::WIDTH, bytes.len()),
        })
    }

    /// The current value (0 when the node is missing or empty).
    ///
    /// # Errors
    /// [`Error::CorruptData`]; the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn get(&self) -> Result<T> {
        self.decode(&self.value.get().await?)
    }

    async fn change(&self, f: impl Fn(T) -> Option<T>) -> Result<AtomicValue<T>> {
        let mut corrupt = None;
        let result = self
            .value
            .apply(|bytes| match self.decode(bytes) {
                Ok(current) => {
                    corrupt = None; // only the value the operation ended on counts
                    f(current).map(T::encode)
                }
                Err(e) => {
                    corrupt = Some(e);
                    None
                }
            })
            .await?;
        if let Some(e) = corrupt {
            return Err(e);
        }
        let mut decoded = Ok(());
        let value = result.map(|b| match self.decode(&b) {
            Ok(v) => v,
            Err(e) => {
                decoded = Err(e);
                T::ZERO
            }
        });
        decoded.map(|()| value)
    }

    /// Adds one.
    ///
    /// # Errors
    /// [`Error::CorruptData`]; the framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the change may have been applied.
    pub async fn increment(&self) -> Result<AtomicValue<T>> {
        self.add(T::ONE).await
    }

    /// Subtracts one.
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn decrement(&self) -> Result<AtomicValue<T>> {
        self.add(T::ONE.wrapping_neg()).await
    }

    /// Adds `delta` (wrapping on overflow, as Curator's Java arithmetic does).
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn add(&self, delta: T) -> Result<AtomicValue<T>> {
        self.change(|v| Some(v.wrapping_add(delta))).await
    }

    /// Subtracts `delta`.
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn subtract(&self, delta: T) -> Result<AtomicValue<T>> {
        self.add(delta.wrapping_neg()).await
    }

    /// Sets `new` if the current value is `expected`.
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn compare_and_set(&self, expected: T, new: T) -> Result<AtomicValue<T>> {
        self.change(|v| (v == expected).then_some(new)).await
    }

    /// Sets `new` through the optimistic loop, reporting what it replaced.
    ///
    /// # Errors
    /// As [`increment`](Self::increment).
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn try_set(&self, new: T) -> Result<AtomicValue<T>> {
        self.change(|_| Some(new)).await
    }

    /// Sets `new` whatever the current value (even corrupt data is overwritten).
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn force_set(&self, new: T) -> Result<()> {
        self.value.force_set(&new.encode()).await
    }

    /// Creates the node with `value` unless it exists; `false` when it did.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn initialize(&self, value: T) -> Result<bool> {
        self.value.initialize(&value.encode()).await
    }

    /// Deletes this handle's transaction marker now (see [`DistributedAtomicValue::close`]).
    ///
    /// # Errors
    /// The delete's error.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn close(&self) -> Result<()> {
        self.value.close().await
    }
}
