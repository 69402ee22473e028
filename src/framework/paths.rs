//! ZooKeeper path checks and helpers.

use crate::error::{Error, Result};

/// Checks that `path` is a valid absolute ZooKeeper path: starts with `/`, no trailing `/`
/// (except the root), no empty, `.` or `..` segments, no NUL or other control characters.
///
/// # Errors
/// [`Error::InvalidPath`] naming what is wrong.
pub fn validate_path(path: &str) -> Result<()> {
    let bad = |reason| Err(Error::InvalidPath { path: path.to_string(), reason });
    if path.is_empty() {
        return bad("path is empty");
    }
    if !path.starts_with('/') {
        return bad("path must be absolute (start with '/')");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return bad("path must not end with '/'");
    }
    if path.chars().any(|c| c == '\0') {
        return bad("path must not contain NUL");
    }
    if path
        .chars()
        .any(|c| c.is_control() || ('\u{e000}'..='\u{f8ff}').contains(&c) || ('\u{fff0}'..='\u{ffff}').contains(&c))
    {
        return bad("path must not contain control or reserved characters");
    }
    for segment in path[1..].split('/') {
        match segment {
            "" => return bad("path must not contain empty segments ('//')"),
            "." | ".." => return bad("path must not contain '.' or '..' segments"),
            _ => {}
        }
    }
    Ok(())
}

/// Checks that `path` is a valid path for a recipe: a valid absolute path other than the root.
///
/// # Errors
/// [`Error::InvalidPath`].
pub fn validate_recipe_path(path: &str) -> Result<()> {
    validate_path(path)?;
    if path == "/" {
        return Err(Error::InvalidPath { path: path.into(), reason: "a recipe cannot live at the root" });
    }
    Ok(())
}

/// Joins a parent path and a child name.
pub fn join(parent: &str, child: &str) -> String {
    // (no `format!`: the lock engine joins paths on every acquire)
    let parent = if parent == "/" { "" } else { parent };
    let mut path = String::with_capacity(parent.len() + 1 + child.len());
    path.push_str(parent);
    path.push('/');
    path.push_str(child);
    path
}

/// The parent of an absolute path (`/` for a top-level node or the root).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a path.
pub fn node_name(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// Normalises a namespace (`"app"`, `"/app"`, `"a/b"`) to an absolute path (`"/app"`), or
/// `None` for an empty namespace.
///
/// # Errors
/// [`Error::InvalidPath`] for a namespace that is not a valid path.
pub fn normalize_namespace(namespace: &str) -> Result<Option<String>> {
    if namespace.is_empty() || namespace == "/" {
        return Ok(None);
    }
    let abs = if namespace.starts_with('/') { namespace.to_string() } else { format!("/{namespace}") };
    validate_recipe_path(&abs)?;
    Ok(Some(abs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use assert_matches::assert_matches;

    #[test]
    fn valid_paths() {
        for p in ["/", "/a", "/a/b-c_d", "/a/_c_1234-lock-0000000001", "/ünïcode", "/a.b", "/..a"] {
            assert_matches!(validate_path(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn invalid_paths() {
        for p in ["", "a", "a/b", "/a/", "//", "/a//b", "/a/./b", "/a/..", "/a\0b", "/a\u{1}"] {
            assert!(matches!(validate_path(p), Err(Error::InvalidPath { .. })), "{p:?}");
        }
        assert!(validate_recipe_path("/").is_err());
    }

    #[test]
    fn nul_control_and_reserved_characters_are_refused_with_their_reason() {
        let reason = |p: &str| match validate_path(p) {
            Err(Error::InvalidPath { reason, .. }) => reason,
            other => panic!("{p:?}: {other:?}"),
        };
        for p in ["/a\0b", "/ü\0"] {
            assert_eq!(reason(p), "path must not contain NUL", "{p:?}");
        }
        // ASCII controls (0x01-0x1f, 0x7f), C1 controls, the private-use and specials ranges
        for p in [
            "/a\u{1}",
            "/a\tb",
            "/a\u{1f}",
            "/a\u{7f}",
            "/ü\u{1}",
            "/a\u{85}",
            "/a\u{9f}",
            "/a\u{e000}",
            "/a\u{f8ff}",
            "/a\u{fff0}",
            "/a\u{ffff}",
        ] {
            assert_eq!(reason(p), "path must not contain control or reserved characters", "{p:?}");
        }
        for p in ["/a~b", "/a\u{a0}", "/a\u{f900}", "/a\u{ffef}", "/a\u{10000}"] {
            assert_matches!(validate_path(p), Ok(()), "{p:?}");
        }
    }

    #[test]
    fn helpers() {
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(node_name("/a/b"), "b");
        assert_eq!(normalize_namespace("app").unwrap().as_deref(), Some("/app"));
        assert_eq!(normalize_namespace("/a/b").unwrap().as_deref(), Some("/a/b"));
        assert_eq!(normalize_namespace("").unwrap(), None);
        assert!(normalize_namespace("a//b").is_err());
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any string is either refused with a typed error or a well-formed path; never a panic.
        #[test]
        fn any_string_is_judged_without_panicking(s in "\\PC*") {
            if validate_path(&s).is_ok() {
                prop_assert!(s.starts_with('/'));
                prop_assert!(s == "/" || !s.ends_with('/'));
                prop_assert!(!s.contains("//"));
                prop_assert!(!s.contains('\0'));
            }
        }

        /// Joining a valid parent and a valid name gives a valid path with that parent and name.
        #[test]
        fn join_parent_name_round_trip(segments in proptest::collection::vec("[a-zA-Z0-9_-]{1,12}", 0..6), name in "[a-zA-Z0-9_-]{1,12}") {
            let parent_path = if segments.is_empty() { "/".to_string() } else { format!("/{}", segments.join("/")) };
            prop_assert!(validate_path(&parent_path).is_ok());
            let child = join(&parent_path, &name);
            prop_assert!(validate_path(&child).is_ok());
            prop_assert_eq!(parent(&child), parent_path.as_str());
            prop_assert_eq!(node_name(&child), name.as_str());
        }
    }
}
