//! Session manager and building blocks.
