//! zk-recipes: Curator-compatible ZooKeeper recipes for tokio.
#![deny(missing_docs)]

mod error;
mod framework;
mod recipes;

#[cfg(feature = "testing")]
pub mod testing;

pub use error::{Error, Result};
