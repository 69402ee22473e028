//! Modeled nodes (curator-x-async's `ModeledFramework`): typed data at the instances of a path
//! template, through serde.

mod cached;
mod node;
mod serializer;
mod template;

pub use cached::{CachedModeled, ModeledEvent};
pub use node::{ModeledFramework, ModeledNode, Versioned};
pub use serializer::{JsonSerializer, ModelSerializer};
pub use template::PathTemplate;
