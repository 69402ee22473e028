//! The one-shot watch source (Curator's `TreeCache` algorithm): a data watch on every covered
//! node, a children watch on every covered node above the depth limit, each set again as soon
//! as it fires. It reports the same [`WatchEvent`]s as a persistent recursive watch, so the
//! engine does not know which source it follows.
//!
//! Order is what makes it lose nothing: a fired watch is set again *before* its event is
//! yielded, and the engine re-reads the node after the event, on the same connection — a
//! change after the re-read is caught by the new watch. After a reconnect or a new session
//! every watch is set again from the root and a `Reset` is yielded (the engine reads the
//! whole subtree), as for a persistent watch.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;

use futures_core::Stream;
use futures_util::future::join_all;
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;

use super::scope::Scope;
use crate::error::{Error, Result};
use crate::framework::paths::join;
use crate::framework::{Conn, Framework, OneShotWatch, SessionStatus};
use crate::framework::{ResetReason, WatchEvent};
use crate::ZooKeeperError;

/// How many watches are set before their answers are awaited.
const PIPELINE: usize = 512;

/// Which watch of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// Data and existence (`exists` for the root, `getData` below it).
    Data,
    /// The children list.
    Children,
}

type DataWatch<'a> = Pin<Box<dyn Future<Output = Result<(&'a str, OneShotWatch)>> + Send + 'a>>;

type Fired = Pin<Box<dyn Future<Output = (String, Kind, WatchEvent)> + Send>>;

/// The watches set on one session, and their pending notifications.
#[derive(Default)]
struct Watches {
    armed: HashSet<(String, Kind)>,
    fired: FuturesUnordered<Fired>,
}

impl Watches {
    fn add(&mut self, path: &str, kind: Kind, watcher: OneShotWatch) {
        self.armed.insert((path.to_string(), kind));
        let path = path.to_string();
        self.fired.push(Box::pin(async move { (path, kind, watcher.changed().await) }));
    }

    fn has(&self, path: &str, kind: Kind) -> bool {
        self.armed.contains(&(path.to_string(), kind))
    }
}

/// Sets the missing watches of `start` and of every covered node found below them, level by
/// level with pipelined requests. Returns the nodes whose data watch was newly set (they
/// exist, or existed a moment ago).
async fn arm(conn: &Conn, scope: &Scope, watches: &mut Watches, start: Vec<String>) -> Result<Vec<String>> {
    let mut armed = Vec::new();
    let mut level = start;
    while !level.is_empty() {
        let mut next = Vec::new();
        for chunk in level.chunks(PIPELINE) {
            // every request is sent before any answer is awaited
            let data: Vec<DataWatch<'_>> = chunk
                .iter()
                .filter(|p| !watches.has(p, Kind::Data))
                .map(|p| -> DataWatch<'_> {
                    if *p == scope.root {
                        // the root is watched even while it does not exist
                        let setting = conn.watch_exists(p);
                        Box::pin(async move { setting.await.map(|(_, w)| (p.as_str(), w)) })
                    } else {
                        // no watch is left behind on a node gone meanwhile
                        let setting = conn.watch_data(p);
                        Box::pin(async move { setting.await.map(|(_, _, w)| (p.as_str(), w)) })
                    }
                })
                .collect();
            let children: Vec<_> = chunk
                .iter()
                .filter(|p| !watches.has(p, Kind::Children))
                .filter(|p| scope.depth(p).is_some_and(|d| scope.descends(d)))
                .map(|p| {
                    let setting = conn.watch_children(p);
                    async move { setting.await.map(|(names, w)| (p.as_str(), names, w)) }
                })
                .collect();
            let (data, children) = futures_util::future::join(join_all(data), join_all(children)).await;
            for set in data {
                match set {
                    Ok((path, watcher)) => {
                        watches.add(path, Kind::Data, watcher);
                        armed.push(path.to_string());
                    }
                    Err(e) => skip(e)?,
                }
            }
            for set in children {
                match set {
                    Ok((path, names, watcher)) => {
                        watches.add(path, Kind::Children, watcher);
                        for name in names {
                            let child = join(path, &name);
                            if scope.accepts_child(&child) && !watches.has(&child, Kind::Data) {
                                next.push(child);
                            }
                        }
                    }
                    Err(e) => skip(e)?,
                }
            }
        }
        level = next;
    }
    Ok(armed)
}

/// `NoNode` (gone meanwhile: nothing to watch, its deletion is or was reported) and `NoAuth`
/// (not ours to read: left out, as the reads leave it out) are no failures.
fn skip(error: Error) -> Result<()> {
    match error {
        Error::ZooKeeper(ZooKeeperError::NoNode | ZooKeeperError::NoAuth) => Ok(()),
        e => Err(e),
    }
}

/// What a fired watch (a node event: the end of the session is handled before) means for the
/// cache, and which nodes to watch again.
fn on_fired(scope: &Scope, path: &str, kind: Kind, fired: &WatchEvent) -> (Option<WatchEvent>, Vec<String>) {
    let path_owned = path.to_string();
    let zxid = match fired {
        WatchEvent::Created { zxid, .. }
        | WatchEvent::Deleted { zxid, .. }
        | WatchEvent::DataChanged { zxid, .. }
        | WatchEvent::ChildrenChanged { zxid, .. } => *zxid,
        _ => -1,
    };
    match (kind, fired) {
        (Kind::Data, WatchEvent::Deleted { .. }) => {
            // the root's existence is watched again; any other node is forgotten
            let again = if path == scope.root { vec![path_owned.clone()] } else { Vec::new() };
            (Some(WatchEvent::Deleted { path: path_owned, zxid }), again)
        }
        (Kind::Data, WatchEvent::Created { .. }) => {
            (Some(WatchEvent::Created { path: path_owned.clone(), zxid }), vec![path_owned])
        }
        (Kind::Data, _) => (Some(WatchEvent::DataChanged { path: path_owned.clone(), zxid }), vec![path_owned]),
        // new children are found by listing again (their Created are the newly armed nodes);
        // gone children report themselves through their data watches
        (Kind::Children, WatchEvent::ChildrenChanged { .. }) => (None, vec![path_owned]),
        (Kind::Children, _) => (None, Vec::new()),
    }
}

/// Whether `now` differs from `since` by a gap in the connection; `None` while it does not.
fn gap(since: &SessionStatus, now: &SessionStatus) -> Option<ResetReason> {
    if now.session_id != since.session_id || now.losses != since.losses {
        Some(ResetReason::NewSession)
    } else if now.suspensions != since.suspensions {
        Some(ResetReason::Reconnected)
    } else {
        None
    }
}

/// The one-shot source's notifications (see the module docs): a `Reset` once every watch is
/// set, node events after, a `Reset` after every gap. Ends when the framework closes, or
/// after one `Err` that is not the connection's.
pub(crate) fn events(fw: Framework, scope: Scope) -> impl Stream<Item = Result<WatchEvent>> + Send + 'static {
    async_stream::stream! {
        let mut reason = ResetReason::Registered;
        'session: loop {
            if fw.wait_until_connected().await.is_err() {
                return;
            }
            let mut status = fw.status_watch();
            let since = *status.borrow_and_update();
            let conn = match fw.conn() {
                Ok(conn) => conn,
                Err(_) => return,
            };
            let mut watches = Watches::default();
            match arm(&conn, &scope, &mut watches, vec![scope.root.clone()]).await {
                Ok(_) => {}
                Err(e) => match after_failed_arm(&fw, &since, e).await {
                    Ok(why) => {
                        reason = why;
                        continue 'session;
                    }
                    Err(e) => {
                        yield Err(e);
                        return;
                    }
                },
            }
            yield Ok(WatchEvent::Reset(reason));
            loop {
                // with nothing watched, only a gap or the end can come
                let (path, kind, event) = tokio::select! {
                    Some(fired) = watches.fired.next(), if !watches.fired.is_empty() => fired,
                    changed = next_gap(&mut status, &since) => {
                        let Ok(now) = changed else { return };
                        if now.closed {
                            return;
                        }
                        reason = gap(&since, &now).unwrap_or(ResetReason::Reconnected);
                        continue 'session;
                    }
                };
                if let WatchEvent::Reset(_) = event {
                    // the session ended (expired, closed, auth failed): its watches are gone
                    reason = ResetReason::NewSession;
                    wait_for_gap(&fw, &since).await;
                    continue 'session;
                }
                watches.armed.remove(&(path.clone(), kind));
                let (notify, again) = on_fired(&scope, &path, kind, &event);
                // set again before the engine re-reads: nothing falls between
                let created = match arm(&conn, &scope, &mut watches, again).await {
                    Ok(created) => created,
                    Err(e) => match after_failed_arm(&fw, &since, e).await {
                        Ok(why) => {
                            reason = why;
                            continue 'session;
                        }
                        Err(e) => {
                            yield Err(e);
                            return;
                        }
                    },
                };
                let named = notify.as_ref().and_then(WatchEvent::path).map(str::to_string);
                if let Some(notify) = notify {
                    yield Ok(notify);
                }
                for path in created.into_iter().filter(|p| Some(p) != named.as_ref()) {
                    yield Ok(WatchEvent::Created { path, zxid: -1 });
                }
            }
        }
    }
}

/// The status once the connection had a gap since `since` (or the framework closed); `Err`
/// when the framework is gone.
async fn next_gap(
    status: &mut tokio::sync::watch::Receiver<SessionStatus>,
    since: &SessionStatus,
) -> std::result::Result<SessionStatus, tokio::sync::watch::error::RecvError> {
    status.wait_for(|now| now.closed || gap(since, now).is_some()).await.map(|now| *now)
}

/// After setting watches failed: a connection error is followed by a gap, waited for here (and
/// the reconnect), whose reason is returned for the `Reset` that sets every watch anew; any
/// other error ends the source.
async fn after_failed_arm(fw: &Framework, since: &SessionStatus, e: Error) -> std::result::Result<ResetReason, Error> {
    if !matches!(&e, Error::ZooKeeper(e) if e.is_retryable()) {
        return Err(e);
    }
    tracing::debug!(error = %e, "cache: setting one-shot watches failed; set anew after the gap");
    let reason = gap(since, &fw.status()).unwrap_or(ResetReason::Reconnected);
    wait_for_gap(fw, since).await;
    Ok(reason)
}

/// Waits until the connection had a gap since `since` and is connected again (or the
/// framework closed): a failed request is followed by one, and the watches are set anew then.
async fn wait_for_gap(fw: &Framework, since: &SessionStatus) {
    let _ = next_gap(&mut fw.status_watch(), since).await;
    let _ = fw.wait_until_connected().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(max_depth: Option<usize>) -> Scope {
        Scope { root: "/r".into(), max_depth, with_data: true, filter: None }
    }

    #[test]
    fn a_fired_watch_is_set_again_before_it_is_reported() {
        let s = scope(None);
        let (event, again) =
            on_fired(&s, "/r/a", Kind::Data, &WatchEvent::DataChanged { path: "/r/a".into(), zxid: 7 });
        assert_eq!(event, Some(WatchEvent::DataChanged { path: "/r/a".into(), zxid: 7 }));
        assert_eq!(again, vec!["/r/a".to_string()]);
        let (event, again) = on_fired(&s, "/r/a", Kind::Data, &WatchEvent::Deleted { path: "/r/a".into(), zxid: 7 });
        assert_eq!(event, Some(WatchEvent::Deleted { path: "/r/a".into(), zxid: 7 }));
        assert!(again.is_empty(), "a deleted node is forgotten");
        let (_, again) = on_fired(&s, "/r", Kind::Data, &WatchEvent::Deleted { path: "/r".into(), zxid: 7 });
        assert_eq!(again, vec!["/r".to_string()], "the root's existence is watched again");
        let (event, again) =
            on_fired(&s, "/r", Kind::Children, &WatchEvent::ChildrenChanged { path: "/r".into(), zxid: 7 });
        assert_eq!((event, again), (None, vec!["/r".to_string()]), "children are listed again");
        let (event, again) = on_fired(&s, "/r", Kind::Children, &WatchEvent::Deleted { path: "/r".into(), zxid: 7 });
        assert_eq!((event, again), (None, vec![]));
    }

    #[test]
    fn gaps() {
        let base = SessionStatus {
            state: crate::ConnectionState::Connected,
            session_id: 1,
            suspensions: 0,
            losses: 0,
            closed: false,
        };
        assert_eq!(gap(&base, &base), None);
        assert_eq!(gap(&base, &SessionStatus { suspensions: 1, ..base }), Some(ResetReason::Reconnected));
        assert_eq!(gap(&base, &SessionStatus { suspensions: 1, losses: 1, ..base }), Some(ResetReason::NewSession));
        assert_eq!(gap(&base, &SessionStatus { session_id: 2, ..base }), Some(ResetReason::NewSession));
    }
}
