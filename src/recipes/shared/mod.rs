//! Shared values: bytes or a counter in one node, compare-and-set by version, with a change
//! stream.

mod cas;
mod count;
mod value;

pub use cas::VersionedValue;
pub use count::SharedCount;
pub use value::SharedValue;
