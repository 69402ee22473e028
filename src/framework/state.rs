//! Connection states as Curator reports them, and the policy that tells recipes which of them
//! invalidate what they hold.

use std::fmt;

/// The state of the framework's connection to the ensemble, as Curator names it.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use futures_util::StreamExt;
/// use zk_recipes::ConnectionState;
///
/// let mut states = Box::pin(fw.connection_states());
/// while let Some(state) = states.next().await {
///     match state {
///         ConnectionState::Suspended => eprintln!("connection lost: holds are in doubt"),
///         ConnectionState::Lost => eprintln!("session lost: holds are gone"),
///         ConnectionState::Refused => eprintln!("refused: {:?}", fw.refusal()),
///         other => println!("{other}"),
///     }
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionState {
    /// The first successful connection of this framework (reported once).
    Connected,
    /// The connection dropped; the session may still be alive on the server. Under the
    /// standard [`ErrorPolicy`] a lock holder must stop trusting its lock now: the server may
    /// expire the session before we hear from it again.
    Suspended,
    /// Connected again after [`Suspended`](Self::Suspended) or [`Lost`](Self::Lost) (after
    /// `Lost` this is a *new* session: ephemeral nodes of the old one are gone).
    Reconnected,
    /// The session is gone: the server expired it, or the connection stayed suspended longer
    /// than the negotiated session timeout (Curator's simulated expiry — by then the server may
    /// have handed our locks to someone else). The framework builds a new session next.
    Lost,
    /// Connected to a read-only server (only when read-only mode was allowed).
    ReadOnly,
    /// After [`Lost`](Self::Lost): the ensemble refuses the new session — its TLS handshake
    /// fails for a reason that retrying cannot fix, or it refuses the SASL login. The framework
    /// does not try again until [`Framework::reload`](crate::Framework::reload); operations
    /// fail at once with the refusal ([`Framework::refusal`](crate::Framework::refusal)).
    Refused,
}

impl ConnectionState {
    /// Whether requests can be sent in this state.
    pub fn is_connected(self) -> bool {
        matches!(self, Self::Connected | Self::Reconnected | Self::ReadOnly)
    }
}

impl ConnectionState {
    /// Curator's name of the state (`CONNECTED`...): the `state` label of the session metrics.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Connected => "CONNECTED",
            Self::Suspended => "SUSPENDED",
            Self::Reconnected => "RECONNECTED",
            Self::Lost => "LOST",
            Self::ReadOnly => "READ_ONLY",
            Self::Refused => "REFUSED",
        }
    }
}

impl fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which connection states a recipe treats as the loss of what it holds (Curator's
/// `ConnectionStateErrorPolicy`).
///
/// # Examples
/// ```
/// use zk_recipes::{ConnectionState, ErrorPolicy};
///
/// // the standard policy gives up a hold at SUSPENDED; `SessionOnly` waits for LOST
/// assert!(ErrorPolicy::Standard.is_error_state(ConnectionState::Suspended));
/// assert!(!ErrorPolicy::SessionOnly.is_error_state(ConnectionState::Suspended));
/// assert!(ErrorPolicy::SessionOnly.is_error_state(ConnectionState::Lost));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorPolicy {
    /// `SUSPENDED` and `LOST` are both errors (Curator's default). Safe: a holder stops
    /// trusting its lock as soon as it cannot prove it still has its session.
    #[default]
    Standard,
    /// Only `LOST` is an error. A holder keeps its lock through a suspension that ends in
    /// `RECONNECTED` to the same session; it risks overlapping with a new holder for up to the
    /// session timeout.
    SessionOnly,
}

impl ErrorPolicy {
    /// Whether `state` is an error state under this policy.
    pub fn is_error_state(self, state: ConnectionState) -> bool {
        match self {
            Self::Standard => {
                matches!(state, ConnectionState::Suspended | ConnectionState::Lost | ConnectionState::Refused)
            }
            Self::SessionOnly => matches!(state, ConnectionState::Lost | ConnectionState::Refused),
        }
    }
}

/// Why a held lock, lease or leadership can no longer be trusted.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::{InterProcessMutex, LossReason};
///
/// let guard = InterProcessMutex::new(&fw, "/locks/report")?.acquire().await?;
/// match guard.lost().await {
///     LossReason::Suspended => eprintln!("connection suspended: stop, the session may expire"),
///     LossReason::Closed => eprintln!("shutting down"),
///     other => eprintln!("lost the lock: {other}"),
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossReason {
    /// The connection was suspended (standard error policy): the session may expire before
    /// we can tell, and then someone else holds the lock.
    Suspended,
    /// The session was lost (expired, or suspended past the session timeout).
    SessionLost,
    /// Our node was deleted: by another client, or by the server as it ended our session
    /// before the framework heard of the expiry.
    NodeDeleted,
    /// The framework was closed, or the recipe that held it gave it up: a closed or dropped
    /// [`LeaderLatch`](crate::LeaderLatch), a [`LeaderSelector`](crate::LeaderSelector)
    /// leadership whose task finished or was interrupted.
    Closed,
    /// The hold's deadline passed without a renewal (a [`TimedHold`](crate::TimedHold), a
    /// scheduled job's `lock_at_most_for`, an [`ExpiringPermit`](crate::ExpiringPermit)): our
    /// node was deleted, or may be reclaimed by anyone.
    Expired,
}

impl LossReason {
    /// The `reason` label of the loss metric.
    pub(crate) fn as_label(self) -> &'static str {
        match self {
            Self::Suspended => "suspended",
            Self::SessionLost => "session_lost",
            Self::NodeDeleted => "node_deleted",
            Self::Closed => "closed",
            Self::Expired => "expired",
        }
    }
}

impl std::fmt::Display for LossReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Suspended => "connection suspended",
            Self::SessionLost => "session lost",
            Self::Expired => "expired",
            Self::NodeDeleted => "lock node deleted",
            Self::Closed => "closed",
        })
    }
}

/// A snapshot of the framework's session: the current state plus counters that only grow, so
/// that a recipe can tell whether a suspension or a session loss happened since an earlier
/// snapshot even when it did not watch every transition.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// // did anything happen to the session between two points of a long job?
/// let before = fw.status();
/// do_a_batch().await;
/// if fw.status().invalidates(&before, fw.error_policy()) {
///     eprintln!("the session was suspended or lost meanwhile: check before committing");
/// }
/// # async fn do_a_batch() {}
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionStatus {
    /// The current connection state.
    pub state: ConnectionState,
    /// The id of the current ZooKeeper session.
    pub session_id: i64,
    /// How many times the connection was suspended so far.
    pub suspensions: u64,
    /// How many sessions were lost so far.
    pub losses: u64,
    /// Whether the framework was closed.
    pub closed: bool,
}

impl SessionStatus {
    /// Whether, under `policy`, something that was valid at `earlier` can no longer be
    /// trusted now: the framework closed, a session was lost, or (standard policy) the
    /// connection is or was suspended in between.
    pub fn invalidates(&self, earlier: &SessionStatus, policy: ErrorPolicy) -> bool {
        self.loss_since(earlier, policy).is_some()
    }

    /// Why, under `policy`, something that was valid at `earlier` can no longer be trusted now
    /// (`None` while it can): the one place where a status becomes a [`LossReason`] — every
    /// guard, lease and leadership asks here.
    pub fn loss_since(&self, earlier: &SessionStatus, policy: ErrorPolicy) -> Option<LossReason> {
        if self.closed {
            return Some(LossReason::Closed);
        }
        let gone = matches!(self.state, ConnectionState::Lost | ConnectionState::Refused);
        if self.losses != earlier.losses || self.session_id != earlier.session_id || gone {
            return Some(LossReason::SessionLost);
        }
        let suspended = self.suspensions != earlier.suspensions || self.state == ConnectionState::Suspended;
        (policy == ErrorPolicy::Standard && suspended).then_some(LossReason::Suspended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: ConnectionState, suspensions: u64, losses: u64) -> SessionStatus {
        SessionStatus { state, session_id: 7, suspensions, losses, closed: false }
    }

    #[test]
    fn policies() {
        use ConnectionState::*;
        assert!(ErrorPolicy::Standard.is_error_state(Suspended));
        assert!(ErrorPolicy::Standard.is_error_state(Lost));
        assert!(!ErrorPolicy::Standard.is_error_state(Reconnected));
        assert!(!ErrorPolicy::SessionOnly.is_error_state(Suspended));
        assert!(ErrorPolicy::SessionOnly.is_error_state(Lost));
    }

    #[test]
    fn invalidation_counts_what_happened_in_between() {
        use ConnectionState::*;
        let at = status(Connected, 0, 0);
        assert!(!status(Connected, 0, 0).invalidates(&at, ErrorPolicy::Standard));
        // a suspension that already ended still counts under the standard policy
        assert!(status(Reconnected, 1, 0).invalidates(&at, ErrorPolicy::Standard));
        assert!(!status(Reconnected, 1, 0).invalidates(&at, ErrorPolicy::SessionOnly));
        assert!(status(Suspended, 1, 0).invalidates(&at, ErrorPolicy::Standard));
        assert!(status(Reconnected, 1, 1).invalidates(&at, ErrorPolicy::SessionOnly));
        let mut closed = at;
        closed.closed = true;
        assert!(closed.invalidates(&at, ErrorPolicy::SessionOnly));
        let mut other_session = at;
        other_session.session_id = 8;
        assert!(other_session.invalidates(&at, ErrorPolicy::SessionOnly));
    }

    #[test]
    fn the_loss_is_named() {
        use ConnectionState::*;
        let at = status(Connected, 0, 0);
        assert_eq!(status(Connected, 0, 0).loss_since(&at, ErrorPolicy::Standard), None);
        assert_eq!(status(Reconnected, 1, 0).loss_since(&at, ErrorPolicy::Standard), Some(LossReason::Suspended));
        assert_eq!(status(Reconnected, 1, 0).loss_since(&at, ErrorPolicy::SessionOnly), None);
        assert_eq!(status(Lost, 1, 0).loss_since(&at, ErrorPolicy::SessionOnly), Some(LossReason::SessionLost));
        assert_eq!(status(Reconnected, 1, 1).loss_since(&at, ErrorPolicy::Standard), Some(LossReason::SessionLost));
        let mut closed = status(Suspended, 1, 1);
        closed.closed = true;
        assert_eq!(closed.loss_since(&at, ErrorPolicy::Standard), Some(LossReason::Closed));
    }
}
