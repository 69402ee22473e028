//! Where a cache's node notifications come from: a persistent recursive watch (ZooKeeper
//! 3.6+) or one-shot watches on every node (any server), chosen by [`WatchMode`].

use std::pin::Pin;

use futures_core::Stream;

use super::oneshot;
use super::scope::Scope;
use super::watcher::PersistentWatcher;
use crate::error::{Error, Result, ServerFeature};
use crate::framework::Framework;
use crate::framework::WatchEvent;

/// Which kind of ZooKeeper watch a [`Cache`](crate::Cache) follows its nodes with; see
/// [`CacheBuilder::watch_mode`](crate::CacheBuilder::watch_mode).
///
/// # Examples
/// ```no_run
/// # fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::Cache;
/// use zk_recipes::cache::WatchMode;
///
/// // a ZooKeeper 3.5 ensemble: no `addWatch`
/// let cache = Cache::tree(&fw, "/config").watch_mode(WatchMode::OneShot).build()?;
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum WatchMode {
    /// A persistent watch, and one-shot watches from the first time the server refuses
    /// `addWatch` with `Unimplemented` (what ZooKeeper before 3.6 answers). The default.
    #[default]
    Auto,
    /// A persistent recursive watch on the root (a persistent one for a node cache): one
    /// watch whatever the size of the tree. Needs ZooKeeper 3.6 or later; a refusal is the
    /// cache's [`failure`](crate::Cache::failure).
    Persistent,
    /// Curator's `TreeCache` algorithm: a data watch on every cached node and a children watch
    /// on every cached node above the depth limit, set again each time one fires. Works with
    /// every ZooKeeper version and with ZooKeeper-compatible servers that lack `addWatch`; costs
    /// a watch (or two) per node and a second read of each changed node.
    OneShot,
}

/// The notifications of a cache's nodes: [`WatchEvent`]s, a `Reset` first and after every gap.
pub(crate) type Notifications = Pin<Box<dyn Stream<Item = Result<WatchEvent>> + Send>>;

/// The source to start with for `mode`: `(one-shot?, its notifications)`.
pub(crate) fn start(fw: &Framework, scope: &Scope, recursive: bool, mode: WatchMode) -> Result<(bool, Notifications)> {
    if mode == WatchMode::OneShot {
        return Ok((true, Box::pin(oneshot::events(fw.clone(), scope.clone()))));
    }
    Ok((false, Box::pin(PersistentWatcher::new(fw, &scope.root, recursive)?.events())))
}

/// Whether a cache in `mode` whose persistent watch failed with `error` goes on with one-shot
/// watches: only in [`WatchMode::Auto`], and only on an explicit refusal of `addWatch`
/// (`Unimplemented`, what servers before 3.6 answer to an unknown operation before closing the
/// connection). Anything else stays the cache's failure.
pub(crate) fn falls_back(mode: WatchMode, error: &Error) -> bool {
    mode == WatchMode::Auto && matches!(error, Error::ServerUnsupported(ServerFeature::PersistentWatches))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_auto_falls_back_and_only_on_a_refusal() {
        let refused = Error::ServerUnsupported(ServerFeature::PersistentWatches);
        assert!(falls_back(WatchMode::Auto, &refused));
        assert!(!falls_back(WatchMode::Persistent, &refused), "an explicit choice is kept");
        assert!(!falls_back(WatchMode::OneShot, &refused));
        use crate::ZooKeeperError;
        for other in [
            Error::ZooKeeper(ZooKeeperError::Unimplemented),
            Error::ZooKeeper(ZooKeeperError::NoAuth),
            Error::ZooKeeper(ZooKeeperError::BadArguments("bad".into())),
            Error::ZooKeeper(ZooKeeperError::ConnectionLoss),
            Error::Closed,
        ] {
            assert!(!falls_back(WatchMode::Auto, &other), "{other:?}");
        }
        assert_eq!(WatchMode::default(), WatchMode::Auto);
    }
}
