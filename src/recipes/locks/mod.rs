//! Locks: one engine, a driver per lock kind, guards.

pub(crate) mod driver;
pub(crate) mod engine;
