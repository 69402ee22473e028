//! `ServiceCache`: a service's instances, followed through a children [`Cache`].

use std::marker::PhantomData;
use std::sync::{Arc, Weak};

use futures_core::Stream;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::instance::ServiceInstance;
use crate::error::Result;
use crate::framework::{paths, Framework};
use crate::recipes::cache::Cache;

/// The instances of one service, kept up to date (Curator's `ServiceCache`): a children
/// [`Cache`] of `BASE/NAME` whose nodes are decoded as [`ServiceInstance`]s. Made by
/// [`ServiceDiscovery::service_cache`](crate::ServiceDiscovery::service_cache).
///
/// Nodes that do not hold an instance of `T` are left out. After a reconnect or a new session
/// the cache reads the service again (and tells apart a node deleted and re-created meanwhile
/// by its `czxid`).
///
/// # Examples
/// ```no_run
/// # async fn demo(d: zk_recipes::ServiceDiscovery<serde_json::Value>) -> zk_recipes::Result<()> {
/// use futures_util::StreamExt;
///
/// let cache = d.service_cache("orders")?;
/// cache.start().await?;
/// let mut changes = Box::pin(cache.changes());
/// while let Some(instances) = changes.next().await {
///     println!("{} instances of orders", instances.len());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ServiceCache<T> {
    inner: Arc<Inner>,
    _payload: PhantomData<fn() -> T>,
}

#[derive(Debug)]
struct Inner {
    path: String,
    cache: Cache,
}

impl<T: DeserializeOwned + Send + Sync + 'static> ServiceCache<T> {
    pub(crate) fn new(fw: &Framework, path: &str) -> Result<Self> {
        let cache = Cache::children(fw, path).build()?;
        Ok(Self { inner: Arc::new(Inner { path: path.to_string(), cache }), _payload: PhantomData })
    }

    /// Starts following the service and returns once the instances are loaded, as Curator's
    /// `ServiceCache.start()` does: [`instances`](Self::instances) right after it has every
    /// instance registered before the call. The wait is bounded as a framework operation: by
    /// the [`with_deadline`](crate::with_deadline) scope's deadline, else by the framework's
    /// [operation timeout](crate::FrameworkBuilder::operation_timeout).
    ///
    /// # Errors
    /// As [`Cache::start`]: [`Error::InvalidState`](crate::Error::InvalidState) when already
    /// started, [`Error::Closed`](crate::Error::Closed) after close; and as
    /// [`Cache::initialized_timeout`]: [`Error::Timeout`](crate::Error::Timeout) when the first
    /// load is not done in time (the cache is started and goes on loading: a later
    /// [`changes`](Self::changes) item tells when it is done).
    ///
    /// # Cancel safety
    /// Cancel safe: once started, the cache goes on loading whether or not this is awaited.
    pub async fn start(&self) -> Result<()> {
        self.inner.cache.start().await?;
        self.inner.cache.initialized_as_operation().await
    }

    /// The service's node (`BASE/NAME`).
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Whether the initial load is done.
    pub fn is_initialized(&self) -> bool {
        self.inner.cache.is_initialized()
    }

    /// Waits until the first load is done (after a [`start`](Self::start) that timed out), as
    /// [`Cache::initialized`].
    ///
    /// # Errors
    /// As [`Cache::initialized`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn initialized(&self) -> Result<()> {
        self.inner.cache.initialized().await
    }

    /// [`initialized`](Self::initialized), waiting at most `timeout`.
    /// A `timeout` of zero does not wait: a try, bounded by one operation's time.
    /// `Duration::MAX` waits without bound. A caller's [`with_deadline`](crate::with_deadline)
    /// scope whose deadline comes first ends the wait then.
    ///
    /// # Errors
    /// As [`Cache::initialized_timeout`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn initialized_timeout(&self, timeout: std::time::Duration) -> Result<()> {
        self.inner.cache.initialized_timeout(timeout).await
    }

    /// The instances now, sorted by id.
    #[doc(alias = "getInstances")]
    pub fn instances(&self) -> Vec<ServiceInstance<T>> {
        decode(&self.inner)
    }

    /// The instances once loaded, then again after each change (a new list only when it
    /// differs by some node). Ends when the cache is closed or dropped. A `Stream` of whole
    /// lists, as the cache's [`events`](crate::Cache::events) it follows; the list now is
    /// [`instances`](Self::instances).
    ///
    /// # Cancel safety
    /// `next()` on the stream is cancel safe.
    #[doc(alias = "addListener")]
    pub fn changes(&self) -> impl Stream<Item = Vec<ServiceInstance<T>>> + Send + 'static {
        let events = self.inner.cache.events();
        let inner: Weak<Inner> = Arc::downgrade(&self.inner);
        async_stream::stream! {
            futures_util::pin_mut!(events);
            let mut last: Option<Vec<(String, i64, i64)>> = None;
            while let Some(_event) = events.next().await {
                let Some(inner) = inner.upgrade() else { return };
                if !inner.cache.is_initialized() {
                    continue;
                }
                let key = versions(&inner);
                if last.as_ref() == Some(&key) {
                    continue;
                }
                last = Some(key);
                let instances = decode::<T>(&inner);
                drop(inner);
                yield instances;
            }
        }
    }

    /// Stops following the service; the [`changes`](Self::changes) streams end. Resolves once
    /// the cache's task has ended. Idempotent (a second close is `Ok(())`); dropping does the
    /// same in the background.
    ///
    /// # Errors
    /// As [`Cache::close`].
    ///
    /// # Cancel safety
    /// As [`Cache::close`].
    pub async fn close(&self) -> Result<()> {
        self.inner.cache.close().await
    }
}

/// Each instance node's path, czxid and mzxid: what tells one list from the next.
fn versions(inner: &Inner) -> Vec<(String, i64, i64)> {
    children(inner).map(|n| (n.path, n.stat.czxid, n.stat.mzxid)).collect()
}

fn children(inner: &Inner) -> impl Iterator<Item = crate::recipes::cache::CachedNode> + '_ {
    inner
        .cache
        .snapshot()
        .into_values()
        .filter(move |node| paths::parent(&node.path) == inner.path && node.path != inner.path)
}

fn decode<T: DeserializeOwned>(inner: &Inner) -> Vec<ServiceInstance<T>> {
    children(inner)
        .filter_map(|node| {
            let data = node.data.unwrap_or_default();
            match ServiceInstance::from_json(&node.path, &data) {
                Ok(instance) => Some(instance),
                Err(e) => {
                    tracing::debug!(path = %node.path, error = %e, "service cache: skipping a node");
                    None
                }
            }
        })
        .collect()
}
