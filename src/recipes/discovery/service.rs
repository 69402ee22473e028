//! `ServiceDiscovery`: registering instances (each kept by a [`PersistentNode`]) and querying
//! a registry in curator-x-discovery's layout.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_core::Stream;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::cache::ServiceCache;
use super::instance::{validate_name, ServiceInstance, ServiceType};
use super::paths::{DiscoveryPathConstructor, PathsOf, UnderBase};
use super::provider::ServiceProviderBuilder;
use crate::error::{Error, Result};
use crate::framework::{paths, Framework, ProtectedName};
use crate::recipes::nodes::{NodeMode, NodeStatus, PersistentNode};
use crate::sync::lock;
use crate::ZooKeeperError;

/// A registry of services in curator-x-discovery's layout: register our instances, find
/// everyone's.
///
/// Each instance is the node `BASE/NAME/ID` holding its JSON ([`ServiceInstance`]). A
/// registered instance is kept by a [`PersistentNode`] — ephemeral for
/// [`ServiceType::Dynamic`], persistent for `Static` and `Permanent` — so it is there whenever
/// the session is healthy: created again after a reconnect, a session expiry, a server
/// restart, a delete by someone.
///
/// # Notable behaviors
/// * **Registering while ZooKeeper is down** (CURATOR-175): [`register`](Self::register)
///   waits and completes once the server is up; cancelled, the registration stays and
///   completes in the background.
/// * **Unregistering while disconnected** (CURATOR-164): the instance's keeper stops at once
///   and its node is deleted as soon as the session allows; it is never re-created on
///   reconnect.
/// * **Another session's node with our id** is not taken over: `register` fails with
///   [`Error::NodeHeldByOther`] and leaves nothing behind.
/// * `DYNAMIC_SEQUENTIAL` instances are ephemeral-sequential nodes, as Curator makes them, but
///   protected: `BASE/NAME/_c_<uuid>-ID<seq>` (Curator: `ID<seq>`), so that a create whose
///   reply was lost is found again instead of duplicated. Listings read them either way;
///   [`query_for_instance`](Self::query_for_instance) finds both spellings by the id.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::{ServiceDiscovery, ServiceInstance};
///
/// let discovery = ServiceDiscovery::<serde_json::Value>::new(&fw, "/services")?;
/// let me = ServiceInstance::builder("orders").address("10.0.0.1").port(8080).build()?;
/// discovery.register(&me).await?;
/// for instance in discovery.query_for_instances("orders").await? {
///     println!("{} at {:?}:{:?}", instance.id, instance.address, instance.port);
/// }
/// discovery.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ServiceDiscovery<T> {
    fw: Framework,
    base: String,
    /// Where each service's instances are.
    paths: PathsOf,
    /// Our registrations by id: the service name and the node that keeps it.
    registered: Mutex<BTreeMap<String, (String, Arc<PersistentNode>)>>,
    _payload: PhantomData<fn() -> T>,
}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> ServiceDiscovery<T> {
    /// A registry rooted at `base` (Curator's `basePath`).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path or the root.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let discovery = zk_recipes::ServiceDiscovery::<serde_json::Value>::new(&fw, "/services")?;
    /// # Ok(()) }
    /// ```
    pub fn new(fw: &Framework, base: &str) -> Result<Self> {
        paths::validate_recipe_path(base)?;
        Self::with_path_constructor(fw, UnderBase(base.to_string()))
    }

    /// A registry whose services are where `constructor` says (Curator's
    /// `ServiceDiscoveryBuilder.pathConstructor`, CURATOR-457) instead of `BASE/NAME`; see
    /// [`DiscoveryPathConstructor`](crate::discovery::DiscoveryPathConstructor).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] when the constructor's base path is invalid or the root. A
    /// service's path is checked when it is needed: an invalid one is [`Error::InvalidPath`]
    /// from that call.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework, c: impl zk_recipes::discovery::DiscoveryPathConstructor) -> zk_recipes::Result<()> {
    /// let discovery = zk_recipes::ServiceDiscovery::<serde_json::Value>::with_path_constructor(&fw, c)?;
    /// # Ok(()) }
    /// ```
    pub fn with_path_constructor(fw: &Framework, constructor: impl DiscoveryPathConstructor) -> Result<Self> {
        let paths = PathsOf(Arc::new(constructor));
        Ok(Self {
            fw: fw.clone(),
            base: paths.base()?,
            paths,
            registered: Mutex::new(BTreeMap::new()),
            _payload: PhantomData,
        })
    }

    /// The registry's base path.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The node of instance `id` of service `name`: `BASE/NAME/ID` (or under the path of the
    /// registry's [`DiscoveryPathConstructor`](crate::discovery::DiscoveryPathConstructor)).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a name or id that is not one path segment;
    /// [`Error::InvalidPath`] for an invalid path from the constructor.
    pub fn instance_path(&self, name: &str, id: &str) -> Result<String> {
        Ok(paths::join(&self.service_path(name)?, &checked_id(id)?))
    }

    /// Registers `instance` and waits until its node exists; returns the node's path. From
    /// then on the node is kept (see the type's docs) until [`unregister`](Self::unregister)
    /// or [`close`](Self::close). Registering an id again updates it (as
    /// [`update`](Self::update)).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad name or id (empty, `/`, `.`, `..`), a port of 0,
    /// a payload that cannot be written as JSON, an id registered under another name;
    /// [`Error::NodeHeldByOther`] when another live session holds the node; the server's
    /// refusal (`NoAuth`, ...). Nothing is left registered after an error.
    ///
    /// # Cancel safety
    /// Not cancel safe in the sense that the registration goes on: cancelled, the instance
    /// stays registered and its node is created as soon as the server allows.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(d: zk_recipes::ServiceDiscovery<serde_json::Value>) -> zk_recipes::Result<()> {
    /// let me = zk_recipes::ServiceInstance::builder("orders").id("a1").port(8080).build()?;
    /// let path = d.register(&me).await?; // "/services/orders/a1"
    /// # Ok(()) }
    /// ```
    pub async fn register(&self, instance: &ServiceInstance<T>) -> Result<String> {
        let (path, data) = self.encode(instance)?;
        let mode = match instance.service_type {
            ServiceType::Dynamic => NodeMode::Ephemeral,
            ServiceType::Static | ServiceType::Permanent => NodeMode::Persistent,
            // Curator makes `BASE/NAME/ID<seq>`; ours is protected, `BASE/NAME/_c_<uuid>-ID<seq>`,
            // so a lost create reply is found again. Readers list the children either way.
            ServiceType::DynamicSequential => NodeMode::ProtectedEphemeralSequential,
        };
        let node = {
            let mut registered = lock(&self.registered);
            if let Some((name, node)) = registered.get(&instance.id) {
                if *name != instance.name || node.mode() != mode {
                    return Err(Error::invalid(
                        "instance",
                        format!(
                            "instance {:?} is registered as a {:?} node of {name:?}; unregister it first",
                            instance.id,
                            node.mode()
                        ),
                    ));
                }
                node.set_data(data)?;
                node.clone()
            } else {
                let node = Arc::new(PersistentNode::new(&self.fw, &path, mode, data)?);
                node.launch()?;
                registered.insert(instance.id.clone(), (instance.name.clone(), node.clone()));
                node
            }
        };
        // tokio waits "forever" for a duration too large for a deadline
        match node.wait_for_initial_create(Duration::MAX).await {
            Ok(path) => Ok(path),
            Err(e) => {
                self.forget(&instance.id, &node).await;
                Err(e)
            }
        }
    }

    /// Replaces a registered instance's data (Curator's `updateService`): written at once, or
    /// as soon as the session allows.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the id is not registered (or under another name), for
    /// a bad instance (as [`register`](Self::register)).
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(d: zk_recipes::ServiceDiscovery<serde_json::Value>, mut me: zk_recipes::ServiceInstance<serde_json::Value>) -> zk_recipes::Result<()> {
    /// me.enabled = false;
    /// d.update(&me)?;
    /// # Ok(()) }
    /// ```
    pub fn update(&self, instance: &ServiceInstance<T>) -> Result<()> {
        let (_, data) = self.encode(instance)?;
        let registered = lock(&self.registered);
        match registered.get(&instance.id) {
            Some((name, node)) if *name == instance.name => node.set_data(data),
            _ => Err(Error::invalid(
                "instance",
                format!("instance {:?} of {:?} is not registered here", instance.id, instance.name),
            )),
        }
    }

    /// Unregisters instance `id`: it is no longer kept, and its node is deleted (guaranteed
    /// delete: when the server cannot be reached, the delete goes on in the background — at
    /// once, without waiting, while disconnected; after a failed attempt, which is returned,
    /// while connected). The node is never re-created. An unknown id is a no-op.
    ///
    /// # Errors
    /// As [`PersistentNode::close`].
    ///
    /// # Cancel safety
    /// Cancel safe: the instance is unregistered at the first poll.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(d: zk_recipes::ServiceDiscovery<serde_json::Value>) -> zk_recipes::Result<()> {
    /// d.unregister("a1").await?;
    /// # Ok(()) }
    /// ```
    pub async fn unregister(&self, id: &str) -> Result<()> {
        let Some((_, node)) = lock(&self.registered).remove(id) else { return Ok(()) };
        if self.fw.status().state.is_connected() {
            return node.close().await;
        }
        // disconnected: the keeper stops now, the delete waits for the session in the background
        self.fw.runtime().spawn(async move { node.close().await });
        Ok(())
    }

    /// The ids we registered (and have not unregistered).
    pub fn registered_ids(&self) -> Vec<String> {
        lock(&self.registered).keys().cloned().collect()
    }

    /// The status of our registration `id`'s node, if registered.
    pub fn registration_status(&self, id: &str) -> Option<NodeStatus> {
        lock(&self.registered).get(id).map(|(_, node)| node.status())
    }

    /// The status changes of our registration `id`'s node (see [`PersistentNode::events`]),
    /// if registered.
    pub fn registration_events(&self, id: &str) -> Option<impl Stream<Item = NodeStatus> + Send + 'static> {
        lock(&self.registered).get(id).map(|(_, node)| node.events())
    }

    /// The service names: the children of the base path (Curator's `queryForNames`).
    ///
    /// # Errors
    /// The read's error ([`Error::RetriesExhausted`], ...).
    ///
    /// # Cancel safety
    /// Cancel safe (a read).
    pub async fn query_for_names(&self) -> Result<Vec<String>> {
        let mut names = self.children(&self.base).await?;
        names.sort();
        Ok(names)
    }

    /// Every instance of service `name`, sorted by id (Curator's `queryForInstances`). A
    /// node whose data is not an instance of `T` is skipped (and logged).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad name; a read's error.
    ///
    /// # Cancel safety
    /// Cancel safe (reads).
    pub async fn query_for_instances(&self, name: &str) -> Result<Vec<ServiceInstance<T>>> {
        let service = self.service_path(name)?;
        let mut ids = self.children(&service).await?;
        ids.sort();
        let mut instances = Vec::with_capacity(ids.len());
        for id in ids {
            match self.read(&paths::join(&service, &id)).await {
                Ok(Some(instance)) => instances.push(instance),
                Ok(None) => {} // gone meanwhile
                Err(Error::CorruptData { path, reason }) => tracing::warn!(%path, %reason, "skipping an instance"),
                Err(e) => return Err(e),
            }
        }
        Ok(instances)
    }

    /// Instance `id` of service `name`, if registered (Curator's `queryForInstance`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad name or id; [`Error::CorruptData`] when the node
    /// does not hold an instance of `T`; a read's error.
    ///
    /// # Cancel safety
    /// Cancel safe (a read).
    pub async fn query_for_instance(&self, name: &str, id: &str) -> Result<Option<ServiceInstance<T>>> {
        if let Some(instance) = self.read(&self.instance_path(name, id)?).await? {
            return Ok(Some(instance));
        }
        // a DYNAMIC_SEQUENTIAL instance's node is `ID<seq>` (Curator) or `_c_<uuid>-ID<seq>`
        let service = self.service_path(name)?;
        let sequential = |child: &str| {
            let bare = ProtectedName::prefix_of(child).map_or(child, |prefix| &child[prefix.len()..]);
            bare.strip_prefix(id).is_some_and(|seq| seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit()))
        };
        for child in self.children(&service).await?.into_iter().filter(|c| sequential(c)) {
            match self.read(&paths::join(&service, &child)).await? {
                Some(instance) if instance.id == id => return Ok(Some(instance)),
                _ => {}
            }
        }
        Ok(None)
    }

    /// A cache of service `name`'s instances (not started).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad name.
    pub fn service_cache(&self, name: &str) -> Result<ServiceCache<T>> {
        ServiceCache::new(&self.fw, &self.service_path(name)?)
    }

    /// A builder of a [`ServiceProvider`](crate::ServiceProvider) for service `name`.
    pub fn provider(&self, name: &str) -> ServiceProviderBuilder<T> {
        ServiceProviderBuilder::new(self.fw.clone(), self.service_path(name), name.to_string())
    }

    /// Unregisters every instance we registered (as [`unregister`](Self::unregister)):
    /// resolves once their keeper tasks have stopped and their nodes are deleted. Idempotent
    /// (a second close is `Ok(())`). Dropping the registry does the same in the background.
    ///
    /// # Errors
    /// The first unregister error (the others are still unregistered).
    ///
    /// # Cancel safety
    /// Cancel safe: every instance is unregistered at the first poll.
    pub async fn close(&self) -> Result<()> {
        let nodes: Vec<_> = std::mem::take(&mut *lock(&self.registered)).into_values().collect();
        let mut outcome = Ok(());
        for (_, node) in nodes {
            let closed = node.close().await;
            if outcome.is_ok() {
                outcome = closed;
            }
        }
        outcome
    }

    fn service_path(&self, name: &str) -> Result<String> {
        validate_name("service name", name)?;
        self.paths.service(name)
    }

    /// The node's path and data for `instance`, checked.
    fn encode(&self, instance: &ServiceInstance<T>) -> Result<(String, Vec<u8>)> {
        let path = self.instance_path(&instance.name, &instance.id)?;
        if instance.port == Some(0) || instance.ssl_port == Some(0) {
            return Err(Error::invalid("port", "a port must be between 1 and 65535"));
        }
        Ok((path, instance.to_json()?))
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        match self.fw.children(path).await {
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(Vec::new()),
            other => other,
        }
    }

    async fn read(&self, path: &str) -> Result<Option<ServiceInstance<T>>> {
        // decompressed by a compressing framework (Curator 5.8's `enableCompression()` stores
        // the JSON compressed); data that does not decompress is `CorruptData`, as in Curator
        match self.fw.get_data(path).await {
            Ok((data, _)) => ServiceInstance::from_json(path, &data).map(Some),
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Drops a registration that failed (if it is still the one we started).
    async fn forget(&self, id: &str, node: &Arc<PersistentNode>) {
        let removed = {
            let mut registered = lock(&self.registered);
            match registered.get(id) {
                Some((_, n)) if Arc::ptr_eq(n, node) => registered.remove(id),
                _ => None,
            }
        };
        if let Some((_, node)) = removed {
            let _ = node.close().await;
        }
    }
}

fn checked_id(id: &str) -> Result<String> {
    validate_name("instance id", id)?;
    Ok(id.to_string())
}

// Registries are shared between tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<ServiceDiscovery<serde_json::Value>>();
};
