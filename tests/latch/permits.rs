//! Expirable permits.
