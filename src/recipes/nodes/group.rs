//! `GroupMember`: membership of a group — our id as a kept ephemeral node, and a view of the
//! other members through a children cache.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_core::Stream;
use futures_util::StreamExt;

use super::mode::NodeMode;
use super::persistent::PersistentNode;
use super::status::NodeStatus;
use crate::error::{Error, Result};
use crate::framework::{paths, validate_path, Framework};
use crate::recipes::cache::Cache;

/// Membership of a group: Curator's `GroupMember`.
///
/// Our id is the ephemeral node `<path>/<id>` holding our data, kept by a [`PersistentNode`]
/// (created again after a delete, a reconnect, a new session; a leftover of our dead session
/// replaced); the members are the children of `<path>`, read through a children [`Cache`].
///
/// # Curator compatibility
/// Same layout as Curator 5.x's `GroupMember` (member node `PATH/ID`, ephemeral, data = the
/// member's bytes; the group node a container): a Curator member and ours see each other.
/// As in Curator, [`members`](Self::members) always lists our own id, with our data, even
/// before our node is seen by the cache.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::GroupMember;
///
/// let member = GroupMember::new(&fw, "/groups/workers", "worker-1", "10.0.0.1")?;
/// member.start().await?;
/// member.wait_for_initial_create(Duration::from_secs(10)).await?;
/// for (id, data) in member.members() {
///     println!("{id}: {}", String::from_utf8_lossy(&data));
/// }
/// member.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct GroupMember {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: String,
    id: String,
    node: PersistentNode,
    cache: Cache,
}

impl GroupMember {
    /// Member `id` of the group at `path`, holding `data`; not started yet.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid group path (or the root) or an id that makes an
    /// invalid path (control characters); [`Error::InvalidArgument`] for an empty id, an id
    /// with `/`, `.` or `..`.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
    /// let member = zk_recipes::GroupMember::new(&fw, "/groups/workers", "worker-1", "")?;
    /// # Ok(()) }
    /// ```
    pub fn new(fw: &Framework, path: &str, id: &str, data: impl Into<Vec<u8>>) -> Result<Self> {
        paths::validate_recipe_path(path)?;
        validate_member_id(id)?;
        let member = paths::join(path, id);
        validate_path(&member)?;
        let node = PersistentNode::new(fw, &member, NodeMode::Ephemeral, data)?;
        let cache = Cache::children(fw, path).build()?;
        Ok(Self { inner: Arc::new(Inner { path: path.to_string(), id: id.to_string(), node, cache }) })
    }

    /// Joins the group (our node is created in the background) and starts following it.
    ///
    /// Resolves once both background tasks are spawned, without waiting for our node or the
    /// members' first read: [`wait_for_initial_create`](Self::wait_for_initial_create) waits
    /// for our node, [`changes`](Self::changes) yields the members once read.
    ///
    /// # Errors
    /// [`Error::InvalidState`] when already started; [`Error::Closed`] after close or for a
    /// closed framework.
    ///
    /// # Cancel safety
    /// Cancel safe: it does not wait.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(member: zk_recipes::GroupMember) -> zk_recipes::Result<()> {
    /// member.start().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(&self) -> Result<()> {
        self.inner.node.start().await?;
        self.inner.cache.start().await
    }

    /// Waits until our member node exists; returns its path.
    ///
    /// # Errors
    /// As [`PersistentNode::wait_for_initial_create`]: [`Error::NodeHeldByOther`] when another
    /// session holds our id.
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(member: zk_recipes::GroupMember) -> zk_recipes::Result<()> {
    /// member.wait_for_initial_create(std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_initial_create(&self, timeout: Duration) -> Result<String> {
        self.inner.node.wait_for_initial_create(timeout).await
    }

    /// The members: id → data, our own id included (with our data) even before the cache
    /// sees our node.
    #[doc(alias = "getCurrentMembers")]
    pub fn members(&self) -> BTreeMap<String, Vec<u8>> {
        self.inner.members()
    }

    /// The members now (once the cache has loaded them), then again each time they change.
    /// Ends when the member is closed or dropped.
    ///
    /// # Cancel safety
    /// `next()` on the stream is cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(member: zk_recipes::GroupMember) {
    /// use futures_util::StreamExt;
    ///
    /// let mut changes = Box::pin(member.changes());
    /// while let Some(members) = changes.next().await {
    ///     println!("{} members", members.len());
    /// }
    /// # }
    /// ```
    pub fn changes(&self) -> impl Stream<Item = BTreeMap<String, Vec<u8>>> + Send + 'static {
        let events = self.inner.cache.events();
        let inner: Weak<Inner> = Arc::downgrade(&self.inner);
        async_stream::stream! {
            futures_util::pin_mut!(events);
            let mut last = None;
            while let Some(_event) = events.next().await {
                let Some(inner) = inner.upgrade() else { return };
                if !inner.cache.is_initialized() {
                    continue;
                }
                let members = inner.members();
                drop(inner);
                if last.as_ref() != Some(&members) {
                    last = Some(members.clone());
                    yield members;
                }
            }
        }
    }

    /// Sets our data (see [`PersistentNode::set_data`]: written now, or on reconnect).
    ///
    /// # Errors
    /// [`Error::Closed`] after close.
    ///
    /// # Examples
    /// ```no_run
    /// # fn demo(member: zk_recipes::GroupMember) -> zk_recipes::Result<()> {
    /// member.set_data("busy")?;
    /// # Ok(()) }
    /// ```
    pub fn set_data(&self, data: impl Into<Vec<u8>>) -> Result<()> {
        self.inner.node.set_data(data)
    }

    /// Our id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The group's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Our member node's status.
    pub fn status(&self) -> NodeStatus {
        self.inner.node.status()
    }

    /// Our member node's current status as a `tokio::sync::watch::Receiver` (see
    /// [`PersistentNode::watch`]): the latest status only.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<NodeStatus> {
        self.inner.node.watch()
    }

    /// Our member node's status, then every change (see [`PersistentNode::events`]): a
    /// `Stream`, as each transition matters.
    ///
    /// # Cancel safety
    /// `next()` on the stream is cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(member: zk_recipes::GroupMember) {
    /// use futures_util::StreamExt;
    ///
    /// let mut events = Box::pin(member.events());
    /// while let Some(status) = events.next().await {
    ///     println!("{status:?}");
    /// }
    /// # }
    /// ```
    pub fn events(&self) -> impl Stream<Item = NodeStatus> + Send + 'static {
        self.inner.node.events()
    }

    /// Leaves the group: our node is deleted (guaranteed delete), the cache stops, the
    /// [`changes`](Self::changes) streams end. Idempotent; dropping does the same in the
    /// background.
    ///
    /// # Errors
    /// As [`PersistentNode::close`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(member: zk_recipes::GroupMember) -> zk_recipes::Result<()> {
    /// member.close().await?;
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) -> Result<()> {
        let cache = self.inner.cache.close();
        let node = self.inner.node.close();
        let (cache, node) = tokio::join!(cache, node);
        node.and(cache)
    }
}

impl Inner {
    fn members(&self) -> BTreeMap<String, Vec<u8>> {
        let mut members: BTreeMap<String, Vec<u8>> = self
            .cache
            .snapshot()
            .into_values()
            .filter(|node| node.path != self.path && paths::parent(&node.path) == self.path)
            .map(|node| (paths::node_name(&node.path).to_string(), node.data.unwrap_or_default()))
            .collect();
        members.entry(self.id.clone()).or_insert_with(|| self.node.data());
        members
    }
}

/// A member id is one path segment: not empty, no `/`, not `.` or `..`.
fn validate_member_id(id: &str) -> Result<()> {
    if id.is_empty() || id.contains('/') || id == "." || id == ".." {
        return Err(Error::invalid("id", format!("member id {id:?} must be one path segment (no '/', not empty)")));
    }
    Ok(())
}

// Members are shared between tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<GroupMember>();
};

#[cfg(test)]
mod tests {
    use super::*;
    use assert_matches::assert_matches;

    #[test]
    fn ids() {
        for bad in ["", "a/b", "/", ".", ".."] {
            assert!(matches!(validate_member_id(bad), Err(Error::InvalidArgument { .. })), "{bad:?}");
        }
        for good in ["a", "worker-1", "10.0.0.1:8080", "ü"] {
            assert_matches!(validate_member_id(good), Ok(()));
        }
    }
}
