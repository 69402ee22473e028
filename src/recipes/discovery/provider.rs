//! `ServiceProvider`: picks one instance of a service — by a strategy, through filters,
//! skipping instances that keep failing (Curator's `ServiceProvider`, `ProviderStrategy`,
//! `InstanceFilter`, `DownInstancePolicy`).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use super::cache::ServiceCache;
use super::instance::ServiceInstance;
use crate::error::Result;
use crate::framework::Framework;
use crate::sync::lock;

/// How a [`ServiceProvider`] picks among the usable instances.
///
/// # Examples
/// ```
/// let strategy = zk_recipes::discovery::ProviderStrategy::RoundRobin;
/// assert_eq!(strategy, zk_recipes::discovery::ProviderStrategy::default());
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProviderStrategy {
    /// Each in turn (Curator's `RoundRobinStrategy`).
    #[default]
    RoundRobin,
    /// One at random (Curator's `RandomStrategy`).
    Random,
    /// The same instance for as long as it is usable, then the next in turn (Curator's
    /// `StickyStrategy` over round robin).
    Sticky,
}

/// When an instance counts as down (Curator's `DownInstancePolicy`): after `error_threshold`
/// errors noted ([`ServiceProvider::note_error`]) within `timeout` of its first one, it is
/// skipped until `timeout` has passed since that first error.
///
/// # Examples
/// ```
/// let policy = zk_recipes::discovery::DownInstancePolicy::default();
/// assert_eq!((policy.timeout.as_secs(), policy.error_threshold), (30, 2));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownInstancePolicy {
    /// The window, and how long a down instance is skipped (Curator's default: 30 s).
    pub timeout: Duration,
    /// How many errors make an instance down (Curator's default: 2).
    pub error_threshold: u32,
}

impl DownInstancePolicy {
    /// An instance is down after `error_threshold` errors within `timeout`, and skipped for
    /// `timeout` (Curator's `DownInstancePolicy(timeout, errorThreshold)`). A zero `timeout`
    /// forgets each error at once (no instance is ever down); `Duration::MAX` keeps an
    /// instance down for good once it is. An `error_threshold` of 0 or 1: down at its first
    /// error.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use zk_recipes::discovery::DownInstancePolicy;
    ///
    /// let policy = DownInstancePolicy::new(Duration::from_secs(10), 1);
    /// assert_eq!(policy.error_threshold, 1);
    /// ```
    pub fn new(timeout: Duration, error_threshold: u32) -> Self {
        Self { timeout, error_threshold }
    }
}

impl Default for DownInstancePolicy {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(30), error_threshold: 2 }
    }
}

/// A predicate on instances: `true` keeps it.
type Filter<T> = Arc<dyn Fn(&ServiceInstance<T>) -> bool + Send + Sync>;

/// Configures a [`ServiceProvider`]; made by
/// [`ServiceDiscovery::provider`](crate::ServiceDiscovery::provider).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::discovery::{DownInstancePolicy, ProviderStrategy, ServiceDiscovery};
///
/// let discovery = ServiceDiscovery::<serde_json::Value>::new(&fw, "/services")?;
/// let provider = discovery
///     .provider("orders")
///     .strategy(ProviderStrategy::Random)
///     .filter(|instance| instance.payload.as_ref().is_some_and(|p| p["zone"] == "eu-1"))
///     .down_instance_policy(DownInstancePolicy::new(Duration::from_secs(30), 2))
///     .build()?;
/// provider.start().await?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until built"]
pub struct ServiceProviderBuilder<T> {
    fw: Framework,
    /// The service's path, or why it has none.
    path: Result<String>,
    name: String,
    strategy: ProviderStrategy,
    filters: Vec<Filter<T>>,
    policy: DownInstancePolicy,
}

impl<T> fmt::Debug for ServiceProviderBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceProviderBuilder")
            .field("name", &self.name)
            .field("strategy", &self.strategy)
            .field("filters", &self.filters.len())
            .field("policy", &self.policy)
            .finish()
    }
}

impl<T> ServiceProviderBuilder<T> {
    pub(crate) fn new(fw: Framework, path: Result<String>, name: String) -> Self {
        Self { fw, path, name, strategy: ProviderStrategy::default(), filters: Vec::new(), policy: Default::default() }
    }
}

impl<T: DeserializeOwned + Clone + Send + Sync + 'static> ServiceProviderBuilder<T> {
    /// The strategy (default round robin).
    pub fn strategy(mut self, strategy: ProviderStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Adds a filter: only instances it accepts are picked (Curator's `InstanceFilter`).
    pub fn filter(mut self, accept: impl Fn(&ServiceInstance<T>) -> bool + Send + Sync + 'static) -> Self {
        self.filters.push(Arc::new(accept));
        self
    }

    /// The down-instance policy (default: 2 errors within 30 s).
    pub fn down_instance_policy(mut self, policy: DownInstancePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The provider (its cache not started yet).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a bad service name;
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for an invalid path from the
    /// registry's [`DiscoveryPathConstructor`](crate::discovery::DiscoveryPathConstructor).
    pub fn build(self) -> Result<ServiceProvider<T>> {
        let path = self.path?;
        Ok(ServiceProvider {
            cache: ServiceCache::new(&self.fw, &path)?,
            strategy: self.strategy,
            filters: self.filters,
            down: DownInstances::new(self.policy),
            next: AtomicUsize::new(0),
            sticky: Mutex::new(None),
        })
    }
}

/// Picks an instance of one service (Curator's `ServiceProvider`): the instances of a
/// [`ServiceCache`], minus those a filter refuses and those down by the
/// [`DownInstancePolicy`], chosen by a [`ProviderStrategy`].
///
/// # Examples
/// ```no_run
/// # async fn demo(d: zk_recipes::ServiceDiscovery<serde_json::Value>) -> zk_recipes::Result<()> {
/// use zk_recipes::discovery::ProviderStrategy;
///
/// let provider = d.provider("orders").strategy(ProviderStrategy::Random).filter(|i| i.enabled).build()?;
/// provider.start().await?;
/// if let Some(instance) = provider.get_instance() {
///     // call it; on failure:
///     provider.note_error(&instance);
/// }
/// provider.close().await?;
/// # Ok(()) }
/// ```
pub struct ServiceProvider<T> {
    cache: ServiceCache<T>,
    strategy: ProviderStrategy,
    filters: Vec<Filter<T>>,
    down: DownInstances,
    next: AtomicUsize,
    sticky: Mutex<Option<String>>,
}

impl<T> fmt::Debug for ServiceProvider<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceProvider").field("strategy", &self.strategy).finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned + Clone + Send + Sync + 'static> ServiceProvider<T> {
    /// Starts the provider's cache and returns once the instances are loaded (as
    /// [`ServiceCache::start`], and as Curator's `ServiceProvider.start()`): a
    /// [`get_instance`](Self::get_instance) right after it sees every instance registered
    /// before the call.
    ///
    /// # Errors
    /// As [`ServiceCache::start`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn start(&self) -> Result<()> {
        self.cache.start().await
    }

    /// The provider's cache (e.g. to wait for its initial load).
    pub fn cache(&self) -> &ServiceCache<T> {
        &self.cache
    }

    /// Every usable instance: accepted by the filters and not down, sorted by id.
    pub fn get_all_instances(&self) -> Vec<ServiceInstance<T>> {
        let mut instances = self.cache.instances();
        instances.retain(|i| !self.down.is_down(&i.id) && self.filters.iter().all(|accept| accept(i)));
        instances
    }

    /// One usable instance by the strategy; `None` when there is none.
    pub fn get_instance(&self) -> Option<ServiceInstance<T>> {
        let instances = self.get_all_instances();
        if instances.is_empty() {
            return None;
        }
        let round_robin = || instances[self.next.fetch_add(1, Ordering::Relaxed) % instances.len()].clone();
        match self.strategy {
            ProviderStrategy::RoundRobin => Some(round_robin()),
            ProviderStrategy::Random => Some(instances[fastrand::usize(..instances.len())].clone()),
            ProviderStrategy::Sticky => {
                let mut sticky = lock(&self.sticky);
                if let Some(held) = sticky.as_ref().and_then(|id| instances.iter().find(|i| i.id == *id)) {
                    return Some(held.clone());
                }
                let chosen = round_robin();
                *sticky = Some(chosen.id.clone());
                Some(chosen)
            }
        }
    }

    /// Notes that a call to `instance` failed: with enough errors it is down for a while (see
    /// [`DownInstancePolicy`]).
    pub fn note_error(&self, instance: &ServiceInstance<T>) {
        self.down.note_error(&instance.id);
    }

    /// Stops the provider's cache; resolves once its task has ended. Idempotent (a second
    /// close is `Ok(())`); dropping does the same in the background.
    ///
    /// # Errors
    /// As [`ServiceCache::close`].
    ///
    /// # Cancel safety
    /// As [`ServiceCache::close`].
    pub async fn close(&self) -> Result<()> {
        self.cache.close().await
    }
}

/// Errors noted per instance id: when the first came and how many.
#[derive(Debug)]
struct DownInstances {
    policy: DownInstancePolicy,
    errors: Mutex<HashMap<String, (Instant, u32)>>,
}

impl DownInstances {
    fn new(policy: DownInstancePolicy) -> Self {
        Self { policy, errors: Mutex::new(HashMap::new()) }
    }

    fn note_error(&self, id: &str) {
        let mut errors = self.purged();
        let (_, count) = errors.entry(id.to_string()).or_insert((Instant::now(), 0));
        *count = count.saturating_add(1);
    }

    fn is_down(&self, id: &str) -> bool {
        self.purged().get(id).is_some_and(|(_, count)| *count >= self.policy.error_threshold)
    }

    /// The errors with those older than the policy's timeout forgotten.
    fn purged(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, u32)>> {
        let mut errors = lock(&self.errors);
        errors.retain(|_, (first, _)| first.elapsed() < self.policy.timeout);
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_after_the_threshold_until_the_window_passes() {
        let down = DownInstances::new(DownInstancePolicy { timeout: Duration::from_millis(200), error_threshold: 2 });
        down.note_error("a");
        assert!(!down.is_down("a"), "one error is not enough");
        down.note_error("a");
        assert!(down.is_down("a") && !down.is_down("b"));
        std::thread::sleep(Duration::from_millis(250));
        assert!(!down.is_down("a"), "up again after the timeout");
        down.note_error("a");
        assert!(!down.is_down("a"), "the count starts over");
    }
}
