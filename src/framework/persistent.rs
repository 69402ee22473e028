//! A persistent watch on one session ([`Conn::add_watch`](super::Conn::add_watch), ZooKeeper
//! 3.6+ `addWatch`) in this crate's own types: the node events, and the changes of the session
//! that its holder must act on. Keeping it across reconnects and new sessions is
//! [`PersistentWatcher`](crate::PersistentWatcher)'s work.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use zookeeper_client::{Client, EventType, SessionState};

use super::WatchEvent;

/// What a [`PersistentWatch`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PersistentChange {
    /// A node event of the watched path (or, recursive, of a node below it).
    Event(WatchEvent),
    /// The connection dropped; the session may still come back.
    Disconnected,
    /// Connected again on the same session after [`Disconnected`](Self::Disconnected): the
    /// client set the watch again, but the server does not send the events in between
    /// (ZOOKEEPER-4698).
    Reconnected,
    /// The session ended (expired, closed, authentication failed, or its client went away):
    /// the watch is gone, and every later call answers this again.
    Ended,
}

/// A persistent watch registered on one session. Dropping it removes it from the client (and
/// from the server, when no other watcher of the client has the same path and mode).
pub(crate) struct PersistentWatch {
    watcher: zookeeper_client::PersistentWatcher,
    /// The session's client, held beside the watcher on purpose: while it is held the session
    /// cannot end without telling the watcher (with every client of a session gone, its end is
    /// not reported, ZOOKEEPER-4702).
    _client: Client,
    session_id: i64,
    disconnected: bool,
    ended: bool,
}

impl std::fmt::Debug for PersistentWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentWatch")
            .field("session", &format_args!("{:#x}", self.session_id))
            .field("disconnected", &self.disconnected)
            .field("ended", &self.ended)
            .finish()
    }
}

impl PersistentWatch {
    pub(crate) fn new(watcher: zookeeper_client::PersistentWatcher, client: Client) -> Self {
        let session_id = client.session_id().0;
        Self { watcher, _client: client, session_id, disconnected: false, ended: false }
    }

    /// The id of the session the watch is registered on.
    pub(crate) fn session_id(&self) -> i64 {
        self.session_id
    }

    /// The next node event or change of the session (see [`PersistentChange`]).
    ///
    /// # Cancel safety
    /// Cancel safe: an event is returned or kept.
    pub(crate) async fn changed(&mut self) -> PersistentChange {
        loop {
            if self.ended {
                return PersistentChange::Ended;
            }
            // zookeeper-client 0.11 panics in `changed` after a terminal event, and when its
            // session task went away without one (seen as a runtime shuts down): taken as the
            // end of the session, never as the end of the caller's task
            let Ok(event) = AssertUnwindSafe(self.watcher.changed()).catch_unwind().await else {
                self.ended = true;
                return PersistentChange::Ended;
            };
            if event.event_type != EventType::Session {
                match WatchEvent::from_node_event(event) {
                    Some(event) => return PersistentChange::Event(event),
                    None => continue,
                }
            }
            match event.session_state {
                SessionState::Disconnected => {
                    self.disconnected = true;
                    return PersistentChange::Disconnected;
                }
                SessionState::SyncConnected | SessionState::ConnectedReadOnly if self.disconnected => {
                    self.disconnected = false;
                    return PersistentChange::Reconnected;
                }
                SessionState::SyncConnected | SessionState::ConnectedReadOnly => {}
                // Expired, Closed, AuthFailed: terminal, the client's `changed` must not be
                // called again
                _ => {
                    self.ended = true;
                    return PersistentChange::Ended;
                }
            }
        }
    }
}
