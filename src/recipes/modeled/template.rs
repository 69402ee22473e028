//! [`PathTemplate`]: a path with named parameters, `/tenants/{tenant}/config` (Curator's
//! `ZPath`), resolved with typed values and checked on both sides.

use std::fmt::Display;

use crate::error::{Error, Result};
use crate::framework::validate_path;

/// One segment of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Parameter(String),
}

/// A ZooKeeper path with named parameters, each a whole segment in braces:
/// `/tenants/{tenant}/services/{service}` (Curator's `ZPath`). Parsed once, checked once;
/// [`resolve`](Self::resolve) fills the parameters in order from any `Display` values and
/// checks each one is a single valid node name, so a value can never reach outside its
/// segment (no `/`, no `.` or `..`, not empty).
///
/// # Examples
/// ```
/// use zk_recipes::modeled::PathTemplate;
///
/// let template = PathTemplate::new("/tenants/{tenant}/shards/{shard}")?;
/// assert_eq!(template.parameters().collect::<Vec<_>>(), ["tenant", "shard"]);
/// assert_eq!(template.resolve(&[&"acme", &7])?, "/tenants/acme/shards/7");
/// assert!(template.resolve(&[&"a/b", &7]).is_err());
/// assert_eq!(template.matches("/tenants/acme/shards/7"), Some(vec!["acme".to_string(), "7".to_string()]));
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTemplate {
    text: String,
    segments: Vec<Segment>,
}

impl PathTemplate {
    /// Parses `template`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a parameter is not a whole segment (`/a{b}`), has an empty
    /// or repeated name, or when the path with its parameters filled in would not be a valid
    /// absolute path (`"/"` itself is refused: a model needs a node).
    pub fn new(template: &str) -> Result<Self> {
        let bad = |reason: String| Error::invalid_argument("template", reason);
        if template == "/" || !template.starts_with('/') {
            return Err(bad(format!("{template:?} is not an absolute path below the root")));
        }
        let mut segments = Vec::new();
        for part in template[1..].split('/') {
            let segment = match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(name) if name.is_empty() || name.contains(['{', '}']) => {
                    return Err(bad(format!("{template:?}: parameter {part:?} has no valid name")));
                }
                Some(name) if segments.contains(&Segment::Parameter(name.to_string())) => {
                    return Err(bad(format!("{template:?}: parameter {{{name}}} appears twice")));
                }
                Some(name) => Segment::Parameter(name.to_string()),
                None if part.contains(['{', '}']) => {
                    return Err(bad(format!("{template:?}: a parameter must be a whole segment, not {part:?}")));
                }
                None => Segment::Literal(part.to_string()),
            };
            segments.push(segment);
        }
        let sample = Self { text: template.to_string(), segments };
        let filled: Vec<&dyn Display> = sample.parameters().map(|_| &"p" as &dyn Display).collect();
        validate_path(&sample.fill(&filled)).map_err(|e| bad(format!("{template:?}: {e}")))?;
        Ok(sample)
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The parameters' names, in order.
    pub fn parameters(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Parameter(name) => Some(name.as_str()),
            Segment::Literal(_) => None,
        })
    }

    /// The path with `values` in place of the parameters, in order.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the number of values is not the number of parameters,
    /// or a value is not a single valid node name (empty, `.`, `..`, containing `/` or a
    /// character ZooKeeper refuses).
    pub fn resolve(&self, values: &[&dyn Display]) -> Result<String> {
        let count = self.parameters().count();
        if values.len() != count {
            return Err(Error::invalid_argument(
                "values",
                format!("{} takes {count} value(s), {} given", self.text, values.len()),
            ));
        }
        for (name, value) in self.parameters().zip(values) {
            let value = value.to_string();
            let single = !value.is_empty() && value != "." && value != ".." && !value.contains('/');
            if !single || validate_path(&format!("/{value}")).is_err() {
                return Err(Error::invalid_argument("values", format!("{{{name}}} = {value:?} is not a node name")));
            }
        }
        Ok(self.fill(values))
    }

    /// The parameters' values when `path` is an instance of this template.
    pub fn matches(&self, path: &str) -> Option<Vec<String>> {
        let parts: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
        if parts.len() != self.segments.len() {
            return None;
        }
        let mut values = Vec::new();
        for (segment, part) in self.segments.iter().zip(parts) {
            match segment {
                Segment::Literal(literal) if literal == part => {}
                Segment::Literal(_) => return None,
                Segment::Parameter(_) if part.is_empty() => return None,
                Segment::Parameter(_) => values.push(part.to_string()),
            }
        }
        Some(values)
    }

    /// The longest path without a parameter at the template's start: where a cache of all its
    /// instances is rooted (the template itself when it has none).
    pub fn fixed_prefix(&self) -> String {
        let literals: Vec<&str> = self
            .segments
            .iter()
            .map_while(|s| match s {
                Segment::Literal(l) => Some(l.as_str()),
                Segment::Parameter(_) => None,
            })
            .collect();
        format!("/{}", literals.join("/"))
    }

    fn fill(&self, values: &[&dyn Display]) -> String {
        let mut values = values.iter();
        let mut path = String::new();
        for segment in &self.segments {
            path.push('/');
            match segment {
                Segment::Literal(l) => path.push_str(l),
                Segment::Parameter(_) => path.push_str(&values.next().map(ToString::to_string).unwrap_or_default()),
            }
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_templates_are_refused() {
        for bad in ["", "/", "tenants/{t}", "/a{b}", "/{}", "/{a}/{a}", "/a//b", "/a/{b}/", "/{a}}"] {
            assert!(PathTemplate::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn values_stay_in_their_segment() {
        let t = PathTemplate::new("/t/{a}/x").unwrap();
        assert_eq!(t.resolve(&[&"ok"]).unwrap(), "/t/ok/x");
        for bad in ["", ".", "..", "a/b", "\u{0}"] {
            assert!(t.resolve(&[&bad]).is_err(), "{bad:?}");
        }
        assert!(t.resolve(&[]).is_err());
        assert!(t.resolve(&[&"a", &"b"]).is_err());
        assert_eq!(t.fixed_prefix(), "/t");
        assert_eq!(PathTemplate::new("/a/b").unwrap().fixed_prefix(), "/a/b");
        assert_eq!(t.matches("/t/v/x"), Some(vec!["v".into()]));
        assert_eq!(t.matches("/t/v/y"), None);
        assert_eq!(t.matches("/t/v"), None);
    }
}
