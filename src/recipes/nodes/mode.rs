//! How a kept node is created, and whose a node found at its path is (pure: unit-tested
//! without a server).

use std::time::Duration;

use crate::framework::CreateMode;

use crate::error::Result;
use crate::framework::validate_ttl;

/// The `ephemeralOwner` of a container node (ZooKeeper's `EphemeralType.CONTAINER`).
const CONTAINER_OWNER: i64 = i64::MIN;
/// The high byte that marks a TTL node's `ephemeralOwner` (ZooKeeper's extended types).
const TTL_OWNER_MASK: u64 = 0xFF00_0000_0000_0000;

/// How a [`PersistentNode`](crate::PersistentNode) creates its node (Curator's `CreateMode`
/// plus protection).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use zk_recipes::NodeMode;
///
/// assert!(NodeMode::Ephemeral.is_ephemeral());
/// assert!(!NodeMode::PersistentWithTtl(Duration::from_secs(30)).is_ephemeral());
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeMode {
    /// An ephemeral node at the path: gone with the session, re-created by the keeper.
    Ephemeral,
    /// An ephemeral-sequential node `<parent>/_c_<uuid>-<name><seq>` for the path
    /// `<parent>/<name>` (Curator's `withProtection`): after a lost reply the node is found
    /// again by its `_c_<uuid>-` prefix, which stays the same for the keeper's whole life.
    ProtectedEphemeralSequential,
    /// A persistent node.
    Persistent,
    /// A persistent node with a time to live: the server deletes it once it has had no
    /// children and no write for that long (needs `zookeeper.extendedTypesEnabled=true` on the
    /// server). See [`PersistentTtlNode`](crate::PersistentTtlNode) for a node that stays while
    /// its owner runs. A TTL under 1 ms (zero included) or beyond ZooKeeper's largest,
    /// 2^40 − 1 ms (`Duration::MAX` included), is refused.
    PersistentWithTtl(Duration),
    /// A container node: the server deletes it some time after its last child is gone.
    Container,
}

impl NodeMode {
    /// Whether the node lives only as long as the session that made it.
    pub fn is_ephemeral(self) -> bool {
        matches!(self, Self::Ephemeral | Self::ProtectedEphemeralSequential)
    }

    /// ZooKeeper's create mode and time to live for this mode.
    pub(crate) fn create_mode(self) -> (CreateMode, Option<Duration>) {
        match self {
            Self::Ephemeral => (CreateMode::Ephemeral, None),
            Self::ProtectedEphemeralSequential => (CreateMode::EphemeralSequential, None),
            Self::Persistent => (CreateMode::Persistent, None),
            Self::PersistentWithTtl(ttl) => (CreateMode::Persistent, Some(ttl)),
            Self::Container => (CreateMode::Container, None),
        }
    }

    /// Checks the time to live (`1 ms ..= 2^40 - 1 ms`).
    pub(crate) fn validate(self) -> Result<()> {
        match self {
            Self::PersistentWithTtl(ttl) => validate_ttl(ttl),
            _ => Ok(()),
        }
    }
}

/// The session that owns a node, from its `ephemeralOwner`: `None` for persistent, container
/// and TTL nodes (ZooKeeper shows clients 0 for the last two; their markers inside the server
/// are refused here too).
pub(crate) fn owner_session(ephemeral_owner: i64) -> Option<i64> {
    let ttl = (ephemeral_owner as u64) & TTL_OWNER_MASK == TTL_OWNER_MASK;
    (ephemeral_owner != 0 && ephemeral_owner != CONTAINER_OWNER && !ttl).then_some(ephemeral_owner)
}

/// Whose a node found at the keeper's path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// Ours: to keep (an ephemeral node of the current session, or any non-ephemeral node for a
    /// non-ephemeral mode).
    Ours,
    /// An ephemeral node of a session of ours that is gone: to delete and create again.
    Stale(i64),
    /// An ephemeral node of another session: not ours to take.
    Other(i64),
}

/// Decides whose a node with `ephemeral_owner` is, for a keeper in `mode` whose current
/// session is `session` and which sent creates in the sessions `ours`.
pub(crate) fn classify(mode: NodeMode, ephemeral_owner: i64, session: i64, ours: &[i64]) -> Found {
    match owner_session(ephemeral_owner) {
        Some(owner) if owner == session && mode.is_ephemeral() => Found::Ours,
        Some(owner) if ours.contains(&owner) => Found::Stale(owner),
        Some(owner) => Found::Other(owner),
        // a persistent, container or TTL node: any keeper of a non-ephemeral mode keeps it
        None if !mode.is_ephemeral() => Found::Ours,
        // an ephemeral mode finds a non-ephemeral node: not ours to delete
        None => Found::Other(ephemeral_owner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners() {
        assert_eq!(owner_session(0), None);
        assert_eq!(owner_session(i64::MIN), None, "container");
        assert_eq!(owner_session(0xFF00_0000_0000_1000_u64 as i64), None, "ttl");
        assert_eq!(owner_session(0x0100_0123_4567_0001), Some(0x0100_0123_4567_0001));
        assert_eq!(owner_session(0x0000_0123_4567_0001), Some(0x0000_0123_4567_0001), "standalone");
    }

    #[test]
    fn whose_node() {
        let (now, old, other) = (0x11, 0x10, 0x99);
        let ours = [old, now];
        use NodeMode::*;
        assert_eq!(classify(Ephemeral, now, now, &ours), Found::Ours);
        assert_eq!(classify(Ephemeral, old, now, &ours), Found::Stale(old));
        assert_eq!(classify(Ephemeral, other, now, &ours), Found::Other(other));
        assert_eq!(classify(Ephemeral, 0, now, &ours), Found::Other(0));
        assert_eq!(classify(Persistent, 0, now, &ours), Found::Ours);
        assert_eq!(classify(Container, i64::MIN, now, &ours), Found::Ours);
        assert_eq!(classify(Persistent, other, now, &ours), Found::Other(other));
        // a persistent keeper never created an ephemeral node: an old session's is not ours
        assert_eq!(classify(Persistent, old, now, &[]), Found::Other(old));
    }

    #[test]
    fn ttl_bounds() {
        assert!(NodeMode::PersistentWithTtl(Duration::ZERO).validate().is_err());
        assert!(NodeMode::PersistentWithTtl(Duration::from_micros(10)).validate().is_err());
        assert!(NodeMode::PersistentWithTtl(Duration::from_millis(1)).validate().is_ok());
        assert!(NodeMode::PersistentWithTtl(Duration::from_secs(u64::MAX / 1000)).validate().is_err());
        assert!(NodeMode::Ephemeral.validate().is_ok());
    }
}
