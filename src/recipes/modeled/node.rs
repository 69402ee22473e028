//! [`ModeledFramework`] and [`ModeledNode`]: typed reads and writes at the instances of a
//! [`PathTemplate`].

use std::fmt::Display;
use std::sync::Arc;

use super::serializer::{JsonSerializer, ModelSerializer};
use super::template::PathTemplate;
use crate::error::{Error, Result};
use crate::framework::{CreateMode, Framework, IfExists, Stat};
use crate::ZooKeeperError;

/// A model read with the stat it was read at: its `stat.version` is what a compare-and-set
/// ([`ModeledNode::set`] with `Some(version)`) expects.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned<T> {
    /// The model.
    pub value: T,
    /// The node's stat when it was read.
    pub stat: Stat,
}

impl<T> Versioned<T> {
    /// The node's data version when it was read.
    pub fn version(&self) -> i32 {
        self.stat.version
    }
}

/// Typed data at the instances of a path template (curator-x-async's `ModeledFramework`):
/// `ModeledFramework::<Config>::new(&fw, "/tenants/{tenant}/config")?` then
/// `.at(&[&tenant])?.read()`. Models go through a [`ModelSerializer`] (JSON by default), the
/// framework's ACLs (its [`AclProvider`](crate::AclProvider)) and, with
/// [`compressed`](Self::compressed), its compression. Cheap to clone.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use serde::{Deserialize, Serialize};
/// use zk_recipes::modeled::ModeledFramework;
///
/// #[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
/// struct Limits { rps: u32 }
///
/// let limits = ModeledFramework::<Limits>::new(&fw, "/tenants/{tenant}/limits")?;
/// let acme = limits.at(&[&"acme"])?;
/// acme.create_or_set(&Limits { rps: 100 }).await?;
/// let read = acme.read().await?;
/// // compare-and-set: refused (BadVersion) if someone wrote since the read
/// acme.set(&Limits { rps: read.value.rps * 2 }, Some(read.version())).await?;
/// # Ok(()) }
/// ```
pub struct ModeledFramework<T> {
    fw: Framework,
    template: PathTemplate,
    serializer: Arc<dyn ModelSerializer<T>>,
    mode: CreateMode,
}

impl<T> Clone for ModeledFramework<T> {
    fn clone(&self) -> Self {
        Self {
            fw: self.fw.clone(),
            template: self.template.clone(),
            serializer: self.serializer.clone(),
            mode: self.mode,
        }
    }
}

impl<T> std::fmt::Debug for ModeledFramework<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModeledFramework").field("template", &self.template).field("mode", &self.mode).finish()
    }
}

impl<T: Send + Sync + 'static> ModeledFramework<T> {
    /// Models at the instances of `template`, as JSON.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad template (see [`PathTemplate::new`]).
    pub fn new(fw: &Framework, template: &str) -> Result<Self>
    where
        JsonSerializer: ModelSerializer<T>,
    {
        Self::with_serializer(fw, template, JsonSerializer)
    }

    /// Models at the instances of `template`, through `serializer`.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_serializer(fw: &Framework, template: &str, serializer: impl ModelSerializer<T>) -> Result<Self> {
        Ok(Self {
            fw: fw.clone(),
            template: PathTemplate::new(template)?,
            serializer: Arc::new(serializer),
            mode: CreateMode::Persistent,
        })
    }

    /// The mode nodes are created in (persistent by default).
    #[must_use]
    pub fn create_mode(mut self, mode: CreateMode) -> Self {
        self.mode = mode;
        self
    }

    /// Models compressed on write and decompressed on read, with the framework's provider
    /// (see [`Framework::compressed`]).
    #[must_use]
    pub fn compressed(mut self) -> Self {
        self.fw = self.fw.compressed();
        self
    }

    /// The template.
    pub fn template(&self) -> &PathTemplate {
        &self.template
    }

    /// The framework handle the models go through.
    pub fn framework(&self) -> &Framework {
        &self.fw
    }

    /// The node of the instance with these parameter values, in order.
    ///
    /// # Errors
    /// As [`PathTemplate::resolve`].
    pub fn at(&self, values: &[&dyn Display]) -> Result<ModeledNode<T>> {
        Ok(ModeledNode { model: self.clone(), path: self.template.resolve(values)? })
    }

    pub(super) fn decode(&self, path: &str, stored: Vec<u8>) -> Result<T> {
        let bytes = self.fw.decode(path, stored)?;
        self.serializer.deserialize(path, &bytes)
    }
}

/// One modeled node: the instance of a [`ModeledFramework`]'s template at one set of
/// parameter values ([`ModeledFramework::at`]).
#[derive(Debug, Clone)]
pub struct ModeledNode<T> {
    model: ModeledFramework<T>,
    path: String,
}

impl<T: Send + Sync + 'static> ModeledNode<T> {
    /// The node's path (relative to the framework's namespace).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The model and the stat it was read at.
    ///
    /// # Errors
    /// `NoNode` as [`Error::ZooKeeper`]; [`Error::CorruptData`] for data that is not a model
    /// (or not compressed, on a compressed model); the retry loop's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn read(&self) -> Result<Versioned<T>> {
        let (stored, stat) = self.model.fw.uncompressed().get_data(&self.path).await?;
        Ok(Versioned { value: self.model.decode(&self.path, stored)?, stat })
    }

    /// As [`read`](Self::read), `None` for a missing node.
    ///
    /// # Errors
    /// As [`read`](Self::read), less `NoNode`.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn read_if_exists(&self) -> Result<Option<Versioned<T>>> {
        match self.read().await {
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Creates the node (and its missing parents) with `value`.
    ///
    /// # Errors
    /// `NodeExists` as [`Error::ZooKeeper`]; the serializer's error; the errors of
    /// [`Framework::create`].
    ///
    /// # Cancel safety
    /// Not cancel safe: the node may have been created.
    pub async fn create(&self, value: &T) -> Result<Stat> {
        let data = self.model.serializer.serialize(&self.path, value)?;
        Ok(self.model.fw.create(&self.path, &data, self.model.mode).await?.stat)
    }

    /// Writes `value`; with `Some(version)`, only if the node is still at that version (a
    /// compare-and-set: [`Versioned::version`] of a read).
    ///
    /// # Errors
    /// `NoNode`, `BadVersion` as [`Error::ZooKeeper`] (`e.is_conflict()` for the latter); the
    /// serializer's error; the retry loop's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the write may have been applied.
    pub async fn set(&self, value: &T, expected_version: Option<i32>) -> Result<Stat> {
        let data = self.model.serializer.serialize(&self.path, value)?;
        self.model.fw.set_data(&self.path, &data, expected_version).await
    }

    /// Writes `value`, creating the node first if it is missing.
    ///
    /// # Errors
    /// As [`create`](Self::create) and [`set`](Self::set).
    ///
    /// # Cancel safety
    /// Not cancel safe.
    pub async fn create_or_set(&self, value: &T) -> Result<Stat> {
        match self.set(value, None).await {
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => match self.create(value).await {
                Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => self.set(value, None).await,
                other => other,
            },
            other => other,
        }
    }

    /// Deletes the node; with `Some(version)`, only at that version.
    ///
    /// # Errors
    /// `NoNode`, `BadVersion`, `NotEmpty` as [`Error::ZooKeeper`]; the retry loop's errors.
    ///
    /// # Cancel safety
    /// Not cancel safe: the delete may have been applied.
    pub async fn delete(&self, expected_version: Option<i32>) -> Result<()> {
        match expected_version {
            None => self.model.fw.delete(&self.path).await,
            Some(version) => {
                let txn = self.model.fw.transaction().delete(&self.path, Some(version));
                txn.commit().await.map(drop).map_err(|e| match e {
                    Error::Transaction { source, .. } => Error::ZooKeeper(source),
                    other => other,
                })
            }
        }
    }

    /// The node's children read as models, by name (a child deleted meanwhile is left out).
    ///
    /// # Errors
    /// `NoNode` as [`Error::ZooKeeper`] for a missing node; [`Error::CorruptData`] for a child
    /// that is not a model; the retry loop's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn children(&self) -> Result<Vec<(String, Versioned<T>)>> {
        let names = self.model.fw.children(&self.path).await?;
        let raw = self.model.fw.uncompressed();
        let paths: Vec<String> = names.iter().map(|name| format!("{}/{name}", self.path)).collect();
        // the reads go out together (pipelined on the session), not one round trip each
        let reads = futures_util::future::join_all(paths.iter().map(|path| raw.get_data(path))).await;
        let mut models = Vec::new();
        for ((name, path), read) in names.into_iter().zip(&paths).zip(reads) {
            if let Some((stored, stat)) = read.if_exists()? {
                models.push((name, Versioned { value: self.model.decode(path, stored)?, stat }));
            }
        }
        Ok(models)
    }
}
