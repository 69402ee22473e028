//! What a lock handle and its clones share.

use std::sync::Arc;

use crate::error::Result;
use crate::framework::{paths, Framework};

/// The framework, the lock path and the lock kind's own state `S`, behind the `Arc` that a lock
/// handle and its clones share.
#[derive(Debug)]
pub(super) struct Shared<S> {
    pub fw: Framework,
    pub path: String,
    pub state: S,
}

impl<S> Shared<S> {
    /// A new lock's shared part, after checking `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for an invalid path.
    pub fn new(fw: &Framework, path: &str, state: S) -> Result<Arc<Self>> {
        paths::validate_recipe_path(path)?;
        Ok(Arc::new(Shared { fw: fw.clone(), path: path.to_string(), state }))
    }
}
