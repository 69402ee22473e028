//! The one place recipes wait: for a watch to fire, a deadline to pass, or the session to
//! change under them. Every recipe's loop re-checks its condition after any wake-up.

use tokio::time::Instant;
use zookeeper_client::{EventType, OneshotWatcher};

use crate::framework::Framework;

/// Why a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The watch fired with this event (a session event after expiry counts too).
    Event(EventType),
    /// The deadline passed.
    Deadline,
    /// The framework's session is no longer `session_id` (lost and re-created), or it closed.
    SessionChanged,
}

/// Waits for the first of: `watcher` firing, `deadline`, the session changing away from
/// `session_id`. Cancel safe.
pub(crate) async fn wait(fw: &Framework, watcher: OneshotWatcher, deadline: Option<Instant>, session_id: i64) -> Wake {
    wait_any(fw, [watcher], deadline, session_id).await
}

/// [`wait`] on several watchers at once.
pub(crate) async fn wait_any<I>(fw: &Framework, watchers: I, deadline: Option<Instant>, session_id: i64) -> Wake
where
    I: IntoIterator<Item = OneshotWatcher>,
{
    let mut status = fw.status_watch();
    let session_changed = async move {
        let _ = status.wait_for(|s| s.closed || s.session_id != session_id).await;
    };
    let deadline = async move {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    let fired: Vec<_> = watchers.into_iter().map(|w| Box::pin(w.changed())).collect();
    let fired = async move {
        if fired.is_empty() {
            std::future::pending().await
        } else {
            futures_util::future::select_all(fired).await.0.event_type
        }
    };
    tokio::select! {
        event = fired => Wake::Event(event),
        _ = deadline => Wake::Deadline,
        _ = session_changed => Wake::SessionChanged,
    }
}
