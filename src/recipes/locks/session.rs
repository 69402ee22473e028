//! The lock state one framework keeps per session, in one struct: fetched once per acquire.

use std::sync::Arc;

use super::foreign::ForeignNodes;
use super::handoff::HandOff;
use super::listings::Listings;
use super::local_queue::LocalQueues;
use crate::framework::Framework;

/// Everything the locks of one framework share between acquires.
#[derive(Default)]
pub(crate) struct SessionLocks {
    /// The mutexes' local queues, by lock path (`local_queue.rs`).
    pub local_queues: Arc<LocalQueues>,
    /// Which local nodes held as a queue's head, for their followers (`handoff.rs`).
    pub hand_off: Arc<HandOff>,
    /// Children listings shared by the local contenders of a directory (`listings.rs`).
    pub listings: Arc<Listings>,
    /// The foreign children already warned about (`foreign.rs`).
    pub foreign: ForeignNodes,
}

impl SessionLocks {
    /// The framework's lock state.
    pub(crate) fn of(fw: &Framework) -> Arc<SessionLocks> {
        fw.session_extension::<SessionLocks>()
    }
}
