//! Which nodes a cache covers: a root, a depth, a filter.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use crate::framework::paths::join;

/// A filter on paths.
pub(crate) type PathFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The user's filter with its panics contained: a path it panics on is refused, and the first
/// panic is kept for [`Cache::failure`](crate::Cache::failure) to report.
#[derive(Clone)]
pub(crate) struct GuardedFilter {
    accept: PathFilter,
    panic: Arc<OnceLock<String>>,
}

impl GuardedFilter {
    pub fn new(accept: PathFilter) -> Self {
        Self { accept, panic: Arc::default() }
    }

    /// Whether the filter accepts `path` (not when it panics).
    pub fn accepts(&self, path: &str) -> bool {
        match catch_unwind(AssertUnwindSafe(|| (self.accept)(path))) {
            Ok(accepted) => accepted,
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|m| m.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(path, message, "the cache's filter panicked: the path is left out");
                let _ = self.panic.set(format!("the cache's filter panicked on {path:?}: {message}"));
                false
            }
        }
    }

    /// The first panic of the filter, if it panicked.
    pub fn panicked(&self) -> Option<&str> {
        self.panic.get().map(String::as_str)
    }
}

/// The nodes a cache covers.
#[derive(Clone)]
pub(crate) struct Scope {
    pub root: String,
    /// The deepest level kept, the root being 0; `None` for no limit.
    pub max_depth: Option<usize>,
    pub with_data: bool,
    pub filter: Option<GuardedFilter>,
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("root", &self.root)
            .field("max_depth", &self.max_depth)
            .field("with_data", &self.with_data)
            .field("filter", &self.filter.is_some())
            .finish()
    }
}

impl Scope {
    /// How far below the root `path` is (0 for the root); `None` when it is not under it.
    pub fn depth(&self, path: &str) -> Option<usize> {
        if path == self.root {
            return Some(0);
        }
        let rest = if self.root == "/" {
            path.strip_prefix('/')?
        } else {
            path.strip_prefix(&self.root)?.strip_prefix('/')?
        };
        if rest.is_empty() {
            return None;
        }
        Some(rest.split('/').count())
    }

    /// Whether `path` is one of the cached nodes: under the root, not too deep, and every
    /// path from the root's children down to it accepted by the filter.
    pub fn covers(&self, path: &str) -> bool {
        let Some(depth) = self.depth(path) else { return false };
        if self.max_depth.is_some_and(|max| depth > max) {
            return false;
        }
        let Some(filter) = &self.filter else { return true };
        let mut at = self.root.clone();
        let rest = &path[self.root.len()..];
        for name in rest.split('/').filter(|s| !s.is_empty()) {
            at = join(&at, name);
            if !filter.accepts(&at) {
                return false;
            }
        }
        true
    }

    /// Whether the children of a covered node at `depth` may be covered.
    pub fn descends(&self, depth: usize) -> bool {
        self.max_depth.is_none_or(|max| depth < max)
    }

    /// Whether the child `path` of a covered node is accepted by the filter.
    pub fn accepts_child(&self, path: &str) -> bool {
        self.filter.as_ref().is_none_or(|f| f.accepts(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(root: &str, max_depth: Option<usize>) -> Scope {
        Scope { root: root.into(), max_depth, with_data: true, filter: None }
    }

    #[test]
    fn depths() {
        let s = scope("/a", None);
        assert_eq!(s.depth("/a"), Some(0));
        assert_eq!(s.depth("/a/b"), Some(1));
        assert_eq!(s.depth("/a/b/c"), Some(2));
        assert_eq!(s.depth("/ab"), None);
        assert_eq!(s.depth("/"), None);
        let r = scope("/", None);
        assert_eq!(r.depth("/"), Some(0));
        assert_eq!(r.depth("/x/y"), Some(2));
    }

    #[test]
    fn depth_limit_and_filter() {
        let mut s = scope("/a", Some(1));
        assert!(s.covers("/a/b"));
        assert!(!s.covers("/a/b/c"));
        s.max_depth = None;
        s.filter = Some(GuardedFilter::new(Arc::new(|p: &str| !p.ends_with("skip"))));
        assert!(s.covers("/a/b/c"));
        assert!(!s.covers("/a/skip"));
        assert!(!s.covers("/a/skip/c"), "below a refused node");
        assert!(s.covers("/a"), "the root is always covered");
    }

    #[test]
    fn a_panicking_filter_refuses_and_is_remembered() {
        let filter = GuardedFilter::new(Arc::new(|p: &str| if p.ends_with("boom") { panic!("no {p}") } else { true }));
        assert!(filter.accepts("/a/fine"));
        assert_eq!(filter.panicked(), None);
        assert!(!filter.accepts("/a/boom"));
        assert!(!filter.accepts("/b/boom"));
        assert_eq!(filter.panicked(), Some(r#"the cache's filter panicked on "/a/boom": no /a/boom"#));
    }
}
