//! [`CachedModeled`]: every instance of a template in memory, kept by the cache engine, read
//! and reported as models.

use futures_core::Stream;
use futures_util::StreamExt;

use super::node::{ModeledFramework, Versioned};
use crate::error::{Error, Result};
use crate::recipes::{Cache, CacheEvent, CachedNode};

/// What a [`CachedModeled`] reports: its cache's events for the nodes that are instances of
/// the template, with their models (other nodes under the cache's root are not reported).
#[non_exhaustive]
#[derive(Debug)]
pub enum ModeledEvent<T> {
    /// An instance appeared (on the initial load: each one present).
    Created {
        /// Its path.
        path: String,
        /// Its parameters' values, in the template's order.
        parameters: Vec<String>,
        /// Its model.
        model: Versioned<T>,
    },
    /// An instance's model changed.
    Changed {
        /// Its path.
        path: String,
        /// Its parameters' values.
        parameters: Vec<String>,
        /// The new model.
        model: Versioned<T>,
    },
    /// An instance went away.
    Deleted {
        /// Its path.
        path: String,
        /// Its parameters' values.
        parameters: Vec<String>,
    },
    /// An instance's data is not a model (written by someone else, or corrupt): reported, not
    /// fatal; the next valid write is reported as `Changed`.
    Invalid {
        /// Its path.
        path: String,
        /// Why it could not be read ([`Error::CorruptData`] as a rule).
        error: Error,
    },
    /// The initial load is complete (once).
    Initialized,
    /// The cache read everything again (or this subscriber fell behind, `dropped > 0`): see
    /// [`CacheEvent::Resynced`].
    Resynced {
        /// Events this subscriber lost.
        dropped: u64,
    },
}

/// Every instance of a [`ModeledFramework`]'s template, cached: a tree cache rooted at the
/// template's fixed prefix ([`PathTemplate::fixed_prefix`](super::PathTemplate::fixed_prefix)),
/// read as models (curator-x-async's `CachedModeledFramework`). Subscribe to
/// [`events`](Self::events) before [`start`](Self::start) to see the initial load.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use futures_util::StreamExt;
/// use zk_recipes::modeled::{ModeledEvent, ModeledFramework};
///
/// let limits = ModeledFramework::<u32>::new(&fw, "/tenants/{tenant}/limit")?.cached()?;
/// let mut events = Box::pin(limits.events());
/// limits.start().await?;
/// while let Some(event) = events.next().await {
///     if let ModeledEvent::Changed { parameters, model, .. } = event {
///         println!("{} now at {}", parameters[0], model.value);
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct CachedModeled<T> {
    model: ModeledFramework<T>,
    cache: Cache,
}

impl<T: Send + Sync + 'static> ModeledFramework<T> {
    /// A cache of every instance of the template (not started).
    ///
    /// # Errors
    /// As [`Cache::tree`]'s build.
    pub fn cached(&self) -> Result<CachedModeled<T>> {
        let root = self.template().fixed_prefix();
        let depth = self.template().as_str().matches('/').count() - root.matches('/').count();
        // the stored bytes: `decoded` decompresses them as the modeled node does, one by one
        let cache = Cache::tree(&self.framework().uncompressed(), &root).max_depth(depth).build()?;
        Ok(CachedModeled { model: self.clone(), cache })
    }
}

impl<T: Send + Sync + 'static> CachedModeled<T> {
    /// Starts the cache (see [`Cache::start`]).
    ///
    /// # Errors
    /// As [`Cache::start`].
    ///
    /// # Cancel safety
    /// As [`Cache::start`].
    pub async fn start(&self) -> Result<()> {
        self.cache.start().await
    }

    /// Waits for the initial load (see [`Cache::initialized`]).
    ///
    /// # Errors
    /// As [`Cache::initialized`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn initialized(&self) -> Result<()> {
        self.cache.initialized().await
    }

    /// The cached model at these parameter values: `None` when there is no such instance,
    /// `Some(Err)` when its data is not a model.
    ///
    /// # Errors
    /// The inner error: [`Error::CorruptData`]; bad values as in
    /// [`PathTemplate::resolve`](super::PathTemplate::resolve).
    pub fn get(&self, values: &[&dyn std::fmt::Display]) -> Option<Result<Versioned<T>>> {
        let path = match self.model.template().resolve(values) {
            Ok(path) => path,
            Err(e) => return Some(Err(e)),
        };
        self.cache.get(&path).map(|node| self.read(node))
    }

    /// Every cached instance with its parameters' values, by path.
    pub fn instances(&self) -> Vec<(Vec<String>, Result<Versioned<T>>)> {
        let template = self.model.template();
        self.cache
            .snapshot()
            .into_values()
            .filter_map(|node| template.matches(&node.path).map(|values| (values, self.read(node))))
            .collect()
    }

    /// The events of the instances (see [`ModeledEvent`]); the stream ends when the cache is
    /// closed.
    pub fn events(&self) -> impl Stream<Item = ModeledEvent<T>> + Send + 'static {
        let model = self.model.clone();
        self.cache.events().filter_map(move |event| {
            let typed = typed(&model, event);
            async move { typed }
        })
    }

    /// Closes the cache (see [`Cache::close`]).
    ///
    /// # Errors
    /// As [`Cache::close`].
    ///
    /// # Cancel safety
    /// As [`Cache::close`].
    pub async fn close(&self) -> Result<()> {
        self.cache.close().await
    }

    fn read(&self, node: CachedNode) -> Result<Versioned<T>> {
        decoded(&self.model, node)
    }
}

fn decoded<T: Send + Sync + 'static>(model: &ModeledFramework<T>, node: CachedNode) -> Result<Versioned<T>> {
    let CachedNode { path, data, stat, .. } = node;
    let value = model.decode(&path, data.unwrap_or_default())?;
    Ok(Versioned { value, stat })
}

fn typed<T: Send + Sync + 'static>(model: &ModeledFramework<T>, event: CacheEvent) -> Option<ModeledEvent<T>> {
    let template = model.template();
    let (node, created) = match event {
        CacheEvent::Initialized => return Some(ModeledEvent::Initialized),
        CacheEvent::Resynced { dropped } => return Some(ModeledEvent::Resynced { dropped }),
        CacheEvent::Deleted(node) => {
            let parameters = template.matches(&node.path)?;
            return Some(ModeledEvent::Deleted { path: node.path, parameters });
        }
        CacheEvent::Created(node) => (node, true),
        CacheEvent::Changed { new, .. } => (new, false),
    };
    let parameters = template.matches(&node.path)?;
    let path = node.path.clone();
    Some(match decoded(model, node) {
        Ok(model) if created => ModeledEvent::Created { path, parameters, model },
        Ok(model) => ModeledEvent::Changed { path, parameters, model },
        Err(error) => ModeledEvent::Invalid { path, error },
    })
}
