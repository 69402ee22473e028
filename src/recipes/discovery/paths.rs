//! [`DiscoveryPathConstructor`]: where a registry keeps each service's instances (Curator's
//! `DiscoveryPathConstructor`, CURATOR-457).

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::framework::paths;

/// Where a [`ServiceDiscovery`](crate::ServiceDiscovery) keeps the instances of each service:
/// Curator's `DiscoveryPathConstructor`. The default is curator-x-discovery's layout,
/// `BASE/NAME` (Curator's `DiscoveryPathConstructorImpl`); a service of your choosing elsewhere
/// is set with [`ServiceDiscovery::with_path_constructor`](crate::ServiceDiscovery::with_path_constructor).
///
/// Every process that registers, queries, caches or picks instances of a service must use the
/// same constructor (as in Curator: the layout is a convention, not stored anywhere).
///
/// A path it answers is checked before use: an invalid path or the root is
/// [`Error::InvalidPath`] from the call that needed it.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::discovery::DiscoveryPathConstructor;
/// use zk_recipes::{ServiceDiscovery, ServiceInstance};
///
/// /// `/services/<name>/instances`: instances beside the service's other nodes.
/// struct Nested;
/// impl DiscoveryPathConstructor for Nested {
///     fn base_path(&self) -> String {
///         "/services".into()
///     }
///     fn path_for_instances(&self, name: &str) -> String {
///         format!("/services/{name}/instances")
///     }
/// }
///
/// let discovery = ServiceDiscovery::<serde_json::Value>::with_path_constructor(&fw, Nested)?;
/// let me = ServiceInstance::builder("orders").address("10.0.0.1").port(8080).build()?;
/// let path = discovery.register(&me).await?; // /services/orders/instances/<id>
/// # Ok(()) }
/// ```
pub trait DiscoveryPathConstructor: Send + Sync + 'static {
    /// The registry's base: its children are the service names
    /// ([`query_for_names`](crate::ServiceDiscovery::query_for_names)).
    fn base_path(&self) -> String;

    /// The parent of service `name`'s instance nodes (`name` is already checked to be one
    /// path segment).
    fn path_for_instances(&self, name: &str) -> String;
}

/// The default layout: `BASE/NAME`.
#[derive(Debug)]
pub(crate) struct UnderBase(pub String);

impl DiscoveryPathConstructor for UnderBase {
    fn base_path(&self) -> String {
        self.0.clone()
    }

    fn path_for_instances(&self, name: &str) -> String {
        paths::join(&self.0, name)
    }
}

/// A registry's constructor, shared with its caches and providers.
#[derive(Clone)]
pub(crate) struct PathsOf(pub Arc<dyn DiscoveryPathConstructor>);

impl PathsOf {
    /// The instances' parent of service `name`, checked.
    pub(crate) fn service(&self, name: &str) -> Result<String> {
        checked(self.0.path_for_instances(name))
    }

    /// The base path, checked.
    pub(crate) fn base(&self) -> Result<String> {
        checked(self.0.base_path())
    }
}

impl fmt::Debug for PathsOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DiscoveryPathConstructor(..)")
    }
}

/// A valid path that is not the root.
fn checked(path: String) -> Result<String> {
    match paths::validate_recipe_path(&path) {
        Ok(()) => Ok(path),
        Err(Error::InvalidPath { reason, .. }) => Err(Error::InvalidPath { path, reason }),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bad;
    impl DiscoveryPathConstructor for Bad {
        fn base_path(&self) -> String {
            "/".into()
        }
        fn path_for_instances(&self, name: &str) -> String {
            format!("/svc//{name}")
        }
    }

    #[test]
    fn the_default_is_base_slash_name_and_bad_paths_are_typed_errors() {
        let default = PathsOf(Arc::new(UnderBase("/services".into())));
        assert_eq!(default.service("orders").unwrap(), "/services/orders");
        assert_eq!(default.base().unwrap(), "/services");
        let bad = PathsOf(Arc::new(Bad));
        assert!(matches!(bad.service("orders"), Err(Error::InvalidPath { path, .. }) if path == "/svc//orders"));
        assert!(matches!(bad.base(), Err(Error::InvalidPath { .. })));
    }
}
