//! Which nodes a cache covers: a root, a depth, a filter.

use std::sync::Arc;

use crate::framework::paths::join;

/// A filter on paths.
pub(crate) type PathFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The nodes a cache covers.
#[derive(Clone)]
pub(crate) struct Scope {
    pub root: String,
    /// The deepest level kept, the root being 0; `None` for no limit.
    pub max_depth: Option<usize>,
    pub with_data: bool,
    pub filter: Option<PathFilter>,
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
            if !filter(&at) {
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
        self.filter.as_ref().is_none_or(|f| f(path))
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
        s.filter = Some(Arc::new(|p: &str| !p.ends_with("skip")));
        assert!(s.covers("/a/b/c"));
        assert!(!s.covers("/a/skip"));
        assert!(!s.covers("/a/skip/c"), "below a refused node");
        assert!(s.covers("/a"), "the root is always covered");
    }
}
