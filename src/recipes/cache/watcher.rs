//! `PersistentWatcher`: a persistent (recursive) watch kept through reconnects and new sessions.

use std::panic::AssertUnwindSafe;

use futures_core::Stream;
use futures_util::FutureExt;
use zookeeper_client::{AddWatchMode, Client, EventType, SessionState};

use crate::error::{Error, Result, ServerFeature};
use crate::framework::{validate_path, ConnectionState, Framework, ResetReason, WatchEvent};
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
    mode: AddWatchMode,
}

impl PersistentWatcher {
    /// A watch on `path`, recursive (the path and everything below it) or not (the node's
    /// data, existence and children list).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for an invalid path (not absolute, trailing `/`, ...).
    pub fn new(fw: &Framework, path: &str, recursive: bool) -> Result<Self> {
        validate_path(path)?;
        let mode = if recursive { AddWatchMode::PersistentRecursive } else { AddWatchMode::Persistent };
        Ok(Self { fw: fw.clone(), path: path.to_string(), mode })
    }

    /// The watched path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the watch covers every node below the path.
    pub fn is_recursive(&self) -> bool {
        self.mode == AddWatchMode::PersistentRecursive
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
                let (mut watcher, mut client) = match register(&self.fw, &self.path, self.mode).await {
                    Ok(registered) => registered,
                    Err(Error::Closed) => return,
                    Err(e) if is_transient(&e) => continue 'session,
                    Err(e) => {
                        yield Err(e);
                        return;
                    }
                };
                let mut session = client.session_id().0;
                yield Ok(WatchEvent::Reset(reason));
                let mut status = self.fw.status_watch();
                let mut disconnected = false;
                loop {
                    let event = tokio::select! {
                        // zookeeper-client 0.11 panics in `changed` when its session task went
                        // away without a terminal event (seen as a runtime shuts down): taken
                        // as the end of that session, never as the end of this task
                        event = AssertUnwindSafe(watcher.changed()).catch_unwind() => match event {
                            Ok(event) => event,
                            Err(_) => {
                                drop((watcher, client));
                                reason = ResetReason::NewSession;
                                if self.fw.wait_until_connected().await.is_err() {
                                    return;
                                }
                                continue 'session;
                            }
                        },
                        _ = async { status.wait_for(|s| s.closed || s.session_id != session || s.state == ConnectionState::Lost).await.map(|_| ()) } => {
                            if self.fw.is_closed() {
                                return;
                            }
                            drop((watcher, client));
                            reason = ResetReason::NewSession;
                            // wait for the new session before registering on it
                            if self.fw.wait_until_connected().await.is_err() {
                                return;
                            }
                            continue 'session;
                        }
                    };
                    if event.event_type != EventType::Session {
                        if let Some(event) = WatchEvent::from_node_event(event) {
                            yield Ok(event);
                        }
                        continue;
                    }
                    match event.session_state {
                        SessionState::Disconnected => disconnected = true,
                        SessionState::SyncConnected | SessionState::ConnectedReadOnly if disconnected => {
                            // The client set the watch again on reconnect, without the events in
                            // between; register anew (the old registration goes when dropped,
                            // leaving the server's watch to the new one) and announce the gap.
                            let (new_watcher, new_client) = match register(&self.fw, &self.path, self.mode).await {
                                Ok(registered) => registered,
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
                            let new_session = new_client.session_id().0;
                            let why = if new_session == session { ResetReason::Reconnected } else { ResetReason::NewSession };
                            (watcher, client, session) = (new_watcher, new_client, new_session);
                            disconnected = false;
                            yield Ok(WatchEvent::Reset(why));
                        }
                        SessionState::SyncConnected | SessionState::ConnectedReadOnly => {}
                        // Expired, Closed, AuthFailed: terminal, `changed` must not be called again.
                        _ => {
                            drop((watcher, client));
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

/// Adds the watch on the framework's current session, through the retry loop. The client is
/// kept with the watcher: while we hold it, its session cannot end without telling the watcher.
async fn register(
    fw: &Framework,
    path: &str,
    mode: AddWatchMode,
) -> Result<(zookeeper_client::PersistentWatcher, Client)> {
    let added = fw
        .retry_op("watch", path, |client| async move {
            let watcher = client.watch(path, mode).await?;
            Ok((watcher, client))
        })
        .await;
    // a server before 3.6 answers the unknown request `Unimplemented`
    match added {
        Err(Error::ZooKeeper(ZooKeeperError::Unimplemented)) => {
            Err(Error::ServerUnsupported(ServerFeature::PersistentWatches))
        }
        other => other,
    }
}
