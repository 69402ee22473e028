//! Leader election: latch and selector.

mod guarded;
mod latch;
mod leadership;
mod observe;
mod participant;
mod selector;

pub use latch::{CloseMode, LeaderLatch};
pub use leadership::Leadership;
pub use participant::Participant;
pub use selector::{LeaderContext, LeaderSelector, LeadershipEnd};
