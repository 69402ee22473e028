//! Registrations: nodes kept in place while their owner runs — [`PersistentNode`] (any mode),
//! [`PersistentTtlNode`] (gone a while after its owner stops) and [`GroupMember`] (a member node
//! plus a view of the group).
//!
//! One mechanism keeps them all (the keeper, `keeper.rs`): the node exists whenever the
//! session is healthy; a node of our dead session is recognised by its `ephemeralOwner` and
//! replaced; data set while disconnected is written on reconnect.

mod group;
mod keeper;
mod mode;
mod persistent;
mod status;
mod ttl;

pub use group::GroupMember;
pub use mode::NodeMode;
pub use persistent::PersistentNode;
pub use status::NodeStatus;
pub use ttl::PersistentTtlNode;
