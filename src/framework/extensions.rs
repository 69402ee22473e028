//! One per-session extension slot: state that recipes keep per ZooKeeper session, without the
//! framework knowing its type (in the spirit of `http::Extensions`: a map keyed by `TypeId`).
//!
//! The lock engine keeps its caches here (shared listings, local hand-off marks). The slot is
//! emptied when the framework builds a new session, so that nothing learnt about the old
//! session's nodes leaks into the new one; whoever still holds an `Arc` of an old value keeps
//! it until done with it.

use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

/// Values of any `Default + Send + Sync` type, one per type, for the current session.
#[derive(Debug, Default)]
pub(crate) struct Extensions {
    /// One entry per type: a handful of types (the locks' `SessionLocks`, the capability probe,
    /// the counters' combiners), each looked up about once per operation, so a list scanned
    /// without hashing rather than a map.
    values: Mutex<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>,
}

impl Extensions {
    /// The value of type `T`, made with `T::default()` on first use.
    pub(crate) fn get_or_default<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let id = TypeId::of::<T>();
        let mut values = lock(&self.values);
        let found = values.iter().position(|(t, _)| *t == id);
        if let Some(value) = found.and_then(|i| values[i].1.clone().downcast::<T>().ok()) {
            return value;
        }
        // missing; or, keyed by the type, the value of another type only if the list was
        // corrupted: start over with a fresh one rather than panic
        let fresh = Arc::new(T::default());
        match found {
            Some(i) => values[i].1 = fresh.clone(),
            None => values.push((id, fresh.clone())),
        }
        fresh
    }

    /// Forgets every value (a new session begins).
    pub(crate) fn clear(&self) {
        lock(&self.values).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default)]
    struct Counter(std::sync::atomic::AtomicU32);

    #[test]
    fn one_value_per_type_until_cleared() {
        let ext = Extensions::default();
        let a = ext.get_or_default::<Counter>();
        a.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert!(Arc::ptr_eq(&a, &ext.get_or_default::<Counter>()));
        assert_eq!(*ext.get_or_default::<String>(), "");
        ext.clear();
        let b = ext.get_or_default::<Counter>();
        assert!(!Arc::ptr_eq(&a, &b), "a new session starts over");
        assert_eq!(b.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    }
}
