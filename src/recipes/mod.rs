//! Recipes built on the framework.

pub(crate) mod locks;
