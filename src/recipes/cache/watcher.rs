//! `PersistentWatcher`: a persistent (recursive) watch kept through reconnects and new sessions.

use futures_core::Stream;

use crate::error::{Error, Result, ServerFeature};
use crate::framework::{
    validate_path, ConnectionState, Framework, PersistentChange, PersistentWatch, ResetReason, WatchEvent,
};
use crate::ZooKeeperError;

/// A persistent watch on a path (ZooKeeper 3.6+ `addWatch`), kept for as long as its stream
/// lives: registered on the framework's current session, registered again after every
/// reconnect and on every new session the framework builds.
///
/// Its [`events`](Self::events) are the node events of the path (or, recursive, of the path and
/// every node below it) and a [`WatchEvent::Reset`] whenever events may have been missed —
/// first on registration, then after each reconnect and new session. The path need not exist.
///
/// # Notable behaviors
/// * No task of its own: the work happens while the stream is polled. Dropping the stream
///   removes the watch from the client (and, when no other watcher of this client has the
///   same path and mode, from the server).
/// * The stream ends when the framework is closed, or after one `Err` it cannot recover from
///   (a non-retryable error from `addWatch`, such as `NoAuth`).
/// * Events between a disconnection and the next connection are lost by the server
///   (ZOOKEEPER-4698); that is what the `Reset` after a reconnect tells.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use futures_util::StreamExt;
/// use zk_recipes::PersistentWatcher;
/// use zk_recipes::cache::WatchEvent;
///
/// let events = PersistentWatcher::new(&fw, "/config", true)?.events();
/// futures_util::pin_mut!(events);
/// while let Some(event) = events.next().await {
///     match event? {
///         WatchEvent::Reset(_) => { /* re-read /config */ }
///         other => println!("{other:?}"),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PersistentWatcher {
    fw: Framework,
    path: String,
    recursive: bool,
}

impl PersistentWatcher {
    /// A watch on `path`, recursive (the path and everything below it) or not (the node's
    /// data, existence and children list).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path (not absolute, trailing `/`, ...).
    pub fn new(fw: &Framework, path: &str, recursive: bool) -> Result<Self> {
        validate_path(path)?;
        Ok(Self { fw: fw.clone(), path: path.to_string(), recursive })
    }

    /// The watched path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the watch covers every node below the path.
    pub fn is_recursive(&self) -> bool {
        self.recursive
    }

    /// Registers the watch and streams its events (see the type's docs).
    ///
    /// # Errors
    /// An item is `Err` only when registering failed with a non-retryable error; the stream
    /// ends after it. Retryable failures wait for the next connection and register again.
    ///
    /// # Cancel safety
    /// Polling `next()` on the stream is cancel safe: an event is returned or kept.
    pub fn events(self) -> impl Stream<Item = Result<WatchEvent>> + Send + 'static {
        async_stream::stream! {
            let mut reason = ResetReason::Registered;
            'session: loop {
                let mut watch = match register(&self.fw, &self.path, self.recursive).await {
                    Ok(watch) => watch,
                    Err(Error::Closed) => return,
                    Err(e) if is_transient(&e) => continue 'session,
                    Err(e) => {
                        yield Err(e);
                        return;
                    }
                };
                let mut session = watch.session_id();
                yield Ok(WatchEvent::Reset(reason));
                let mut status = self.fw.status_watch();
                loop {
                    let change = tokio::select! {
                        change = watch.changed() => change,
                        _ = async { status.wait_for(|s| s.closed || s.session_id != session || s.state == ConnectionState::Lost).await.map(|_| ()) } => {
                            if self.fw.is_closed() {
                                return;
                            }
                            PersistentChange::Ended
                        }
                    };
                    match change {
                        PersistentChange::Event(event) => yield Ok(event),
                        PersistentChange::Disconnected => {}
                        PersistentChange::Reconnected => {
                            // The client set the watch again on reconnect, without the events in
                            // between; register anew (the old registration goes when replaced,
                            // leaving the server's watch to the new one) and announce the gap.
                            let new_watch = match register(&self.fw, &self.path, self.recursive).await {
                                Ok(watch) => watch,
                                Err(Error::Closed) => return,
                                Err(e) if is_transient(&e) => {
                                    reason = ResetReason::Reconnected;
                                    continue 'session;
                                }
                                Err(e) => {
                                    yield Err(e);
                                    return;
                                }
                            };
                            let why = match new_watch.session_id() == session {
                                true => ResetReason::Reconnected,
                                false => ResetReason::NewSession,
                            };
                            session = new_watch.session_id();
                            watch = new_watch;
                            yield Ok(WatchEvent::Reset(why));
                        }
                        // the session ended, or the framework moved on: register on the new
                        // one once it is there
                        PersistentChange::Ended => {
                            drop(watch);
                            reason = ResetReason::NewSession;
                            if self.fw.wait_until_connected().await.is_err() {
                                return;
                            }
                            continue 'session;
                        }
                    }
                }
            }
        }
    }
}

/// A failure that a later attempt on a (new) connection may not repeat.
fn is_transient(error: &Error) -> bool {
    matches!(error, Error::RetriesExhausted { .. } | Error::ConnectTimeout { .. } | Error::Timeout { .. })
}

/// Adds the watch on the framework's current session, through the retry loop. The watch holds
/// its session's client: while it is held, that session cannot end without telling the watch.
async fn register(fw: &Framework, path: &str, recursive: bool) -> Result<PersistentWatch> {
    let added = fw.request("watch", path, |conn| async move { conn.add_watch(path, recursive).await }).await;
    // a server before 3.6 answers the unknown request `Unimplemented`
    match added {
        Err(Error::ZooKeeper(ZooKeeperError::Unimplemented)) => {
            Err(Error::ServerUnsupported(ServerFeature::PersistentWatches))
        }
        other => other,
    }
}
