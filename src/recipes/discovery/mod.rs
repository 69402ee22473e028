//! Service discovery in curator-x-discovery's layout: [`ServiceDiscovery`] (register our
//! instances, query everyone's), [`ServiceCache`] (a service's instances, followed) and
//! [`ServiceProvider`] (pick one: round robin, random or sticky, with filters and a
//! down-instance policy).
//!
//! Registrations are kept by [`PersistentNode`](crate::PersistentNode)s; the cache is the
//! crate's one cache engine ([`Cache::children`](crate::Cache::children)).

mod cache;
mod instance;
mod paths;
mod provider;
mod service;

pub use cache::ServiceCache;
pub use instance::{ServiceInstance, ServiceInstanceBuilder, ServiceType, UriSpec, UriSpecPart};
pub use paths::DiscoveryPathConstructor;
pub use provider::{DownInstancePolicy, ProviderStrategy, ServiceProvider, ServiceProviderBuilder};
pub use service::ServiceDiscovery;
