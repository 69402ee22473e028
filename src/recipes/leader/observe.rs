//! Observing who leads, without taking part.

use futures_core::Stream;

use super::participant::{participants, Participant};
use crate::error::{Error, Result};
use crate::framework::wait::wait;
use crate::framework::{paths, Framework, OneShotWatch};
use crate::ZooKeeperError;

/// The leader of the latch (or selector, with `name = "lock-"`) at `path` now, then again
/// every time it changes: `None` while nobody leads. Survives reconnects and new sessions;
/// ends after the first error (which it yields).
pub(crate) fn observe(
    fw: Framework,
    path: String,
    name: &'static str,
) -> impl Stream<Item = Result<Option<Participant>>> + Send + 'static {
    async_stream::stream! {
        if let Err(e) = paths::validate_recipe_path(&path) {
            yield Err(e);
            return;
        }
        let mut last: Option<Option<Participant>> = None;
        loop {
            let session = fw.status().session_id;
            let watcher = match watch_dir(&fw, &path).await {
                Ok(w) => w,
                Err(e) => { yield Err(e); return; }
            };
            let leader = match participants(&fw, &path, name).await {
                Ok(p) => p.into_iter().next(),
                Err(e) => { yield Err(e); return; }
            };
            if last.as_ref() != Some(&leader) {
                last = Some(leader.clone());
                yield Ok(leader);
            }
            if fw.is_closed() {
                return;
            }
            wait(&fw, watcher, None, session).await;
        }
    }
}

/// A watch on the children of `path`, or on its creation when it does not exist yet.
async fn watch_dir(fw: &Framework, path: &str) -> Result<OneShotWatch> {
    fw.request("watch", path, |conn| async move {
        match conn.watch_children(path).await {
            Ok((_, watcher)) => Ok(watcher),
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Ok(conn.watch_exists(path).await?.1),
            Err(e) => Err(e),
        }
    })
    .await
}
