//! The one wait of the framework and its recipes: for a watch to fire, a deadline to pass, or
//! the session to change under them. Every caller's loop re-checks its condition after any
//! wake-up.

use tokio::time::Instant;

use super::{Framework, OneShotWatch, SessionStatus, WatchEvent};

/// Why a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The watch fired with this event (the end of its session counts too:
    /// [`WatchEvent::Reset`]).
    Event(WatchEvent),
    /// The deadline passed.
    Deadline,
    /// The framework's session is no longer `session_id` (lost and re-created), or it closed;
    /// with [`WatchSet::wait_or_status`], the caller's condition on the status holds.
    SessionChanged,
}

/// Waits for the first of: `watcher` firing, `deadline`, the session changing away from
/// `session_id`. Cancel safe.
pub(crate) async fn wait(
    fw: &Framework,
    watcher: impl Into<PendingWatch>,
    deadline: Option<Instant>,
    session_id: i64,
) -> Wake {
    wait_any(fw, [watcher], deadline, session_id).await
}

/// [`wait`] on several watchers at once.
pub(crate) async fn wait_any<I>(fw: &Framework, watchers: I, deadline: Option<Instant>, session_id: i64) -> Wake
where
    I: IntoIterator,
    I::Item: Into<PendingWatch>,
{
    WatchSet::new(watchers).wait(fw, deadline, session_id).await.0
}

type Fired = std::pin::Pin<Box<dyn std::future::Future<Output = WatchEvent> + Send>>;

/// A watcher not fired yet, taken out of one [`WatchSet`] to be waited on in another
/// ([`WatchSet::into_pending`], [`WatchSet::from_pending`]): the watch stays registered and
/// no request is sent again.
pub(crate) struct PendingWatch(Fired);

impl From<OneShotWatch> for PendingWatch {
    fn from(watcher: OneShotWatch) -> Self {
        Self(Box::pin(watcher.changed()))
    }
}

/// Watchers waited on together, over several waits: each fires once, and a wait returns with
/// the first one that fires, leaving the others for the next wait.
pub(crate) struct WatchSet {
    /// Each watcher with its index.
    pending: Vec<(usize, Fired)>,
}

impl WatchSet {
    /// The watchers, known by their index in this order.
    pub(crate) fn new<I>(watchers: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<PendingWatch>,
    {
        Self::from_pending(watchers.into_iter().map(Into::into))
    }

    /// [`new`](Self::new) with watchers taken from other sets (or new ones, converted), known
    /// by their index in this order.
    pub(crate) fn from_pending<I: IntoIterator<Item = PendingWatch>>(watchers: I) -> Self {
        Self { pending: watchers.into_iter().map(|w| w.0).enumerate().collect() }
    }

    /// The watchers that have not fired yet, with their indices.
    pub(crate) fn into_pending(self) -> Vec<(usize, PendingWatch)> {
        self.pending.into_iter().map(|(i, w)| (i, PendingWatch(w))).collect()
    }

    /// Waits for the first of: one of the watchers firing (its index is returned too),
    /// `deadline`, the session changing away from `session_id`. The watchers not yet fired
    /// stay for the next wait, however this one ends (dropped included).
    pub(crate) async fn wait(
        &mut self,
        fw: &Framework,
        deadline: Option<Instant>,
        session_id: i64,
    ) -> (Wake, Option<usize>) {
        self.wait_or_status(fw, deadline, |s| s.closed || s.session_id != session_id).await
    }

    /// [`wait`](Self::wait) with any condition on the framework's status in place of "the
    /// session changed": it ends the wait as [`Wake::SessionChanged`] once it holds (at once if
    /// it already does). The watchers still pending stay for the next wait, as with `wait`.
    pub(crate) async fn wait_or_status(
        &mut self,
        fw: &Framework,
        deadline: Option<Instant>,
        status_changed: impl Fn(&SessionStatus) -> bool,
    ) -> (Wake, Option<usize>) {
        let mut status = fw.status_watch();
        let session_changed = async move {
            let _ = status.wait_for(|s| status_changed(s)).await;
        };
        let deadline = async move {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        // polled in place: a wait that ends otherwise (or is dropped) keeps them all
        let pending = &mut self.pending;
        let fired = std::future::poll_fn(|cx| {
            for (position, (index, watcher)) in pending.iter_mut().enumerate() {
                if let std::task::Poll::Ready(event) = watcher.as_mut().poll(cx) {
                    return std::task::Poll::Ready((position, *index, event));
                }
            }
            std::task::Poll::Pending
        });
        let woken = tokio::select! {
            fired = fired => Ok(fired),
            _ = deadline => Err(Wake::Deadline),
            _ = session_changed => Err(Wake::SessionChanged),
        };
        match woken {
            Ok((position, index, event)) => {
                drop(self.pending.swap_remove(position));
                (Wake::Event(event), Some(index))
            }
            Err(wake) => (wake, None),
        }
    }
}
