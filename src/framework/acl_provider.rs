//! [`AclProvider`]: the ACL of each node the framework creates, chosen by its path (Curator's
//! `ACLProvider`), and the one place a create asks for it.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use zookeeper_client::{Acls, Client, CreateMode, CreateOptions, Error as ZkError};

use super::acl::Acl;
use super::Framework;

/// Chooses the ACL of every node the framework and its recipes create, by the node's path:
/// Curator's `ACLProvider`, set with
/// [`FrameworkBuilder::acl_provider`](crate::FrameworkBuilder::acl_provider).
///
/// It is asked for every create — [`Framework::create`] and its kin, a transaction's creates,
/// the missing parents made on the way (each with its own path), the namespace's node, and
/// every recipe's nodes (lock nodes, counters, markers, ...). The path it is given is the
/// node's full path, the namespace included (`/my-service/locks/a/_c_...-lock-`, for a
/// sequential node the path before its sequence number), as Curator passes it.
///
/// [`acl_for_path`](Self::acl_for_path) returning `None` means "the default": the node gets
/// [`default_acl`](Self::default_acl) (Curator: `null`). An empty list, from either method, is
/// refused before anything is sent, as ZooKeeper's Java client refuses it: the create fails
/// with [`Error::ZooKeeper`](crate::Error::ZooKeeper)`(InvalidAcl)`, and an empty
/// `default_acl` already fails [`connect`](crate::FrameworkBuilder::connect) with
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument).
///
/// The methods are called on the tasks that create nodes, often: keep them quick and never
/// block.
///
/// # Examples
/// ```no_run
/// # async fn demo() -> zk_recipes::Result<()> {
/// use zk_recipes::{Acl, AclProvider, Framework};
///
/// /// Everything under `/app/public` is readable by anyone; the rest is the creator's.
/// struct PublicReads;
///
/// impl AclProvider for PublicReads {
///     fn default_acl(&self) -> Vec<Acl> {
///         Acl::creator_all()
///     }
///     fn acl_for_path(&self, path: &str) -> Option<Vec<Acl>> {
///         let public = path == "/app/public" || path.starts_with("/app/public/");
///         public.then(|| [Acl::creator_all(), Acl::anyone_read()].concat())
///     }
/// }
///
/// let fw = Framework::builder()
///     .connect_string("zk1:2181")
///     .namespace("app")
///     .auth("digest", "svc:s3cret")
///     .acl_provider(PublicReads)
///     .connect()
///     .await?;
/// fw.create("/public/motd", b"hello", zk_recipes::CreateMode::Persistent).await?;
/// # Ok(()) }
/// ```
pub trait AclProvider: Send + Sync + 'static {
    /// The ACL of a node [`acl_for_path`](Self::acl_for_path) has no answer for.
    fn default_acl(&self) -> Vec<Acl>;

    /// The ACL of a node created at `path` (full, the namespace included), or `None` for the
    /// [`default_acl`](Self::default_acl).
    fn acl_for_path(&self, path: &str) -> Option<Vec<Acl>>;
}

/// How a framework chooses the ACL of a create.
#[derive(Clone)]
pub(crate) enum AclChoice {
    /// One list for every node ([`FrameworkBuilder::default_acl`](crate::FrameworkBuilder::default_acl)),
    /// converted once.
    Fixed(Vec<zookeeper_client::Acl>),
    /// A provider asked per node.
    Provider(Arc<dyn AclProvider>),
}

/// What the builder was given: [`FrameworkBuilder::default_acl`](crate::FrameworkBuilder::default_acl)
/// or [`FrameworkBuilder::acl_provider`](crate::FrameworkBuilder::acl_provider), the last one
/// set.
#[derive(Clone)]
pub(crate) enum AclSetting {
    Fixed(Vec<Acl>),
    Provider(Arc<dyn AclProvider>),
}

impl AclSetting {
    /// The framework's choice; an empty default ACL is refused.
    pub(crate) fn build(&self) -> crate::Result<AclChoice> {
        match self {
            AclSetting::Fixed(acl) if acl.is_empty() => {
                Err(crate::Error::invalid("default_acl", "default ACL must not be empty"))
            }
            AclSetting::Fixed(acl) => Ok(AclChoice::Fixed(Acl::to_client_list(acl))),
            AclSetting::Provider(p) if p.default_acl().is_empty() => {
                Err(crate::Error::invalid("acl_provider", "the provider's default ACL must not be empty"))
            }
            AclSetting::Provider(p) => Ok(AclChoice::Provider(Arc::clone(p))),
        }
    }
}

impl fmt::Debug for AclSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AclSetting::Fixed(acl) => f.debug_tuple("Fixed").field(acl).finish(),
            AclSetting::Provider(_) => f.write_str("Provider(..)"),
        }
    }
}

impl fmt::Debug for AclChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AclChoice::Fixed(acl) => f.debug_tuple("Fixed").field(acl).finish(),
            AclChoice::Provider(_) => f.write_str("Provider(..)"),
        }
    }
}

/// The ACL chosen for one create: borrowed from the configuration, or the provider's answer.
pub(crate) struct NodeAcl<'a>(Cow<'a, [zookeeper_client::Acl]>);

impl NodeAcl<'_> {
    /// The entries.
    pub(crate) fn list(&self) -> &[zookeeper_client::Acl] {
        &self.0
    }

    /// The client library's options for a create in `mode` with this ACL.
    pub(crate) fn options(&self, mode: CreateMode) -> CreateOptions<'_> {
        mode.with_acls(Acls::new(&self.0))
    }
}

impl Framework {
    /// A handle on the same session whose creates give the nodes they create `acl` instead of
    /// what the [`AclProvider`] (or [`default_acl`](crate::FrameworkBuilder::default_acl))
    /// chooses: Curator's `create().withACL(list)`.
    ///
    /// It applies to every node the handle creates by name — [`create`](Self::create),
    /// [`create_protected`](Self::create_protected),
    /// [`create_with_ttl`](Self::create_with_ttl), the creates of a
    /// [`transaction`](Self::transaction), and the nodes of recipes made with the handle —
    /// but not to the parents a create makes on the way (containers), nor to the namespace's
    /// node or the framework's transaction markers: they keep the provider's ACL, as with
    /// Curator's `withACL(list)` (its `applyToParents` is `false` by default). The handle is
    /// cheap (an `Arc` clone), shares the session and everything else with `self` (its
    /// compression included), and dropping it closes nothing; other handles are unaffected.
    /// An empty `acl` is refused by each create, as ZooKeeper's Java client refuses it:
    /// [`Error::ZooKeeper`](crate::Error::ZooKeeper)`(InvalidAcl)`.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// use zk_recipes::{Acl, CreateMode};
    ///
    /// // this node only: readable by anyone, everything else for its creator
    /// let public = fw.with_acl([Acl::creator_all(), Acl::anyone_read()].concat());
    /// public.create("/config/motd", b"hello", CreateMode::Persistent).await?;
    /// let (acl, _) = fw.get_acl("/config/motd").await?;
    /// assert!(acl.contains(&Acl::anyone_read()[0]));
    /// # Ok(()) }
    /// ```
    pub fn with_acl(&self, acl: impl Into<Vec<Acl>>) -> Framework {
        let acl: Arc<[zookeeper_client::Acl]> = Acl::to_client_list(&acl.into()).into();
        Framework { acl: Some(acl), ..self.clone() }
    }

    /// The ACL of a node created at `path` (namespace-relative), the one place a create
    /// chooses it: this handle's [`with_acl`](Self::with_acl), else the framework's.
    ///
    /// # Errors
    /// `InvalidAcl` when the handle's ACL or the provider's answer is an empty list.
    pub(crate) fn acl_for(&self, path: &str) -> Result<NodeAcl<'_>, ZkError> {
        match &self.acl {
            Some(acl) if acl.is_empty() => Err(ZkError::InvalidAcl),
            Some(acl) => Ok(NodeAcl(Cow::Borrowed(acl))),
            None => self.framework_acl_for(path),
        }
    }

    /// The framework's ACL for a node at `path`, whatever this handle's
    /// [`with_acl`](Self::with_acl): for the nodes the framework shares between handles (the
    /// transaction markers and their parent).
    pub(crate) fn framework_acl_for(&self, path: &str) -> Result<NodeAcl<'_>, ZkError> {
        match &self.inner.cfg.acl {
            AclChoice::Fixed(acl) => Ok(NodeAcl(Cow::Borrowed(acl))),
            AclChoice::Provider(provider) => provided(provider.as_ref(), &self.full_path(path)),
        }
    }

    /// `path` with the namespace in front (`/` is the namespace's node).
    fn full_path(&self, path: &str) -> String {
        match (self.namespace(), path) {
            (Some(ns), "/") => ns.to_string(),
            (Some(ns), path) => format!("{ns}{path}"),
            (None, path) => path.to_string(),
        }
    }

    /// `mkdir -p dir` in `mode` through `client` (rooted at the namespace unless `raw`): with
    /// one ACL for all, one request; with a provider, each missing ancestor with its own.
    pub(crate) async fn mkdirs(&self, client: &Client, dir: &str, mode: CreateMode, raw: bool) -> Result<(), ZkError> {
        let provider = match &self.inner.cfg.acl {
            AclChoice::Fixed(acl) => return client.mkdir(dir, &mode.with_acls(Acls::new(acl))).await,
            AclChoice::Provider(provider) => provider.as_ref(),
        };
        if dir == "/" {
            return Ok(());
        }
        let full = |p: &str| if raw { p.to_string() } else { self.full_path(p) };
        let ancestors: Vec<&str> = dir.match_indices('/').skip(1).map(|(i, _)| &dir[..i]).chain([dir]).collect();
        // deepest first until one exists (or is made), then the rest downwards
        let mut made = ancestors.len() - 1;
        for (i, path) in ancestors.iter().enumerate().rev() {
            let acl = provided(provider, &full(path))?;
            match client.create(path, &[], &acl.options(mode)).await {
                Ok(_) | Err(ZkError::NodeExists) => {
                    made = i;
                    break;
                }
                Err(ZkError::NoNode) if i > 0 => continue,
                Err(e) => return Err(e),
            }
        }
        for path in &ancestors[made + 1..] {
            let acl = provided(provider, &full(path))?;
            match client.create(path, &[], &acl.options(mode)).await {
                Ok(_) | Err(ZkError::NodeExists) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The provider's ACL for `full` (its default for `None`), refusing an empty one.
fn provided(provider: &dyn AclProvider, full: &str) -> Result<NodeAcl<'static>, ZkError> {
    let acl = provider.acl_for_path(full).unwrap_or_else(|| provider.default_acl());
    if acl.is_empty() {
        tracing::warn!(path = full, "ACL provider: an empty ACL, the create is refused (InvalidAcl)");
        return Err(ZkError::InvalidAcl);
    }
    Ok(NodeAcl(Cow::Owned(Acl::to_client_list(&acl))))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct ReadOnlyUnder(&'static str);

    impl AclProvider for ReadOnlyUnder {
        fn default_acl(&self) -> Vec<Acl> {
            Acl::anyone_all()
        }
        fn acl_for_path(&self, path: &str) -> Option<Vec<Acl>> {
            match path.strip_prefix(self.0) {
                Some("") => Some(Acl::anyone_read()),
                Some(rest) if rest.starts_with('/') => Some(Acl::anyone_read()),
                Some(_) | None => None,
            }
        }
    }

    #[test]
    fn the_provider_answers_and_none_is_the_default() {
        let p = ReadOnlyUnder("/ns/ro");
        let acl = |path| provided(&p, path).unwrap().0.into_owned();
        assert_eq!(acl("/ns/ro/x"), zookeeper_client::Acls::anyone_read().to_vec());
        assert_eq!(acl("/ns/ro"), zookeeper_client::Acls::anyone_read().to_vec());
        assert_eq!(acl("/ns/rox"), zookeeper_client::Acls::anyone_all().to_vec());
    }

    #[test]
    fn an_empty_acl_is_refused() {
        struct Empty;
        impl AclProvider for Empty {
            fn default_acl(&self) -> Vec<Acl> {
                Acl::anyone_all()
            }
            fn acl_for_path(&self, _: &str) -> Option<Vec<Acl>> {
                Some(Vec::new())
            }
        }
        assert!(matches!(provided(&Empty, "/a"), Err(ZkError::InvalidAcl)));
    }
}
