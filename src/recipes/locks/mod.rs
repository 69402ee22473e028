//! Locks: one engine, a driver per lock kind, guards.
//!
//! # How an acquire flows
//! Follow `InterProcessMutex::acquire` to its create and its watch by reading these files
//! downwards; each calls only into the ones below it.
//!
//! 1. `mutex.rs`: the lock handle. `acquire` is one of the trio that `acquire.rs` writes once
//!    for every kind (`acquire::Acquire`); the kind writes only `acquire_until`, which builds a
//!    `Request` with the kind's `Driver` (`MutexDriver`, at the bottom of `mutex.rs`)
//!    and calls the engine.
//! 2. `acquire.rs`: how long an acquire may wait (`Wait`: forever, until a deadline, not at
//!    all) and the trio over it.
//! 3. `contend.rs`: `contend`, the one function that contends: observed by an RAII guard,
//!    bounded by the deadline, a place in `local_queue.rs` where the driver queues locally,
//!    then the loop: create, list, decide, wait, until we hold.
//! 4. `contention.rs`: that loop's state (one acquire in ZooKeeper's queue) and its results
//!    (`Ended`, `Acquired`).
//! 5. `create.rs`: the engine sends our create itself, and the first listing behind it in the
//!    same round trip (`listings.rs` shares listings between local contenders); `Pending`
//!    deletes what an abandoned acquire made — the one place cancellation is handled.
//! 6. `rules.rs` (with `order.rs`): the driver's rules decide from the sorted contenders:
//!    hold, watch these nodes, watch the children, reclaim expired permits, or our node is
//!    gone. Pure, unit-tested without a server.
//! 7. `watch.rs`: the waiter sets its watches (`handoff.rs` tells when a local holder's
//!    release makes us the head with no listing) and waits for a change or the deadline.
//! 8. Back in `contend.rs`, we hold: `held.rs` wraps our node in a [`HeldNode`] (fencing
//!    token, loss signal), `reentrant.rs` in the mutex's [`LockGuard`].
//!
//! The lock state kept per session (local queues, hand-off marks, shared listings, foreign
//! nodes warned about) is one struct, `session.rs`.
//!
//! # Nouns
//! * A **hold**: a lock held, through a node of ours ([`HeldNode`]; its guards [`LockGuard`],
//!   [`WriteGuard`], [`Lease`], [`HeldLock`], [`TimedHold`]).
//! * A **lease**: a hold of a semaphore ([`Lease`]); only that. A semaphore's lease that
//!   outlives its session is a **permit** ([`ExpiringPermit`]). A hold that ends at a deadline
//!   unless renewed is a **timed hold** (its length is the hold's "length", not a lease); a
//!   node the server deletes after a time is a **server TTL** node.
//! * A **contender**: a node in a lock's queue, held or waiting; a **driver** the policy of
//!   one kind of contender, its **rules** how it decides.
//! * A **turn**: the atomic values' turn to write (their own queue, `recipes/atomic`); the
//!   local queue's right to create next is its **create order**.
//! * A **mark**: a local holder's note that its node held as the queue's head (`handoff.rs`).

mod acquire;
mod contend;
mod contention;
mod create;
mod driver;
mod expiring_permit;
mod foreign;
mod guarded;
mod handle;
mod handoff;
mod held;
mod lease;
mod lease_rank;
mod listings;
mod local_queue;
mod lock;
mod multilock;
mod mutex;
mod order;
mod permit_name;
mod reentrant;
mod rules;
mod rw_sides;
mod rwlock;
mod semaphore;
mod semaphore_mutex;
mod session;
mod timed_hold;
mod watch;
mod write_guard;

pub use expiring_permit::ExpiringPermit;
pub use held::HeldNode;
pub use lease::Lease;
pub use lock::{HeldLock, InterProcessLock};
pub use multilock::{InterProcessMultiLock, MultiLockGuard};
pub use mutex::InterProcessMutex;
pub use reentrant::LockGuard;
pub use rw_sides::{ReadLock, WriteLock};
pub use rwlock::InterProcessReadWriteLock;
pub use semaphore::InterProcessSemaphoreV2;
pub use semaphore_mutex::InterProcessSemaphoreMutex;
pub use timed_hold::TimedHold;
pub use write_guard::WriteGuard;

// The engine, for the recipes that contend through it with drivers of their own (the leader
// latch, the atomic values' turns) and those that read contender queues: nothing else of the
// locks is theirs to reach.
pub(crate) use acquire::{never_timed_out, Forever};
pub(crate) use contend::contend;
pub(crate) use contention::Acquired;
pub(crate) use driver::{Driver, Request, Vanished};
pub(crate) use foreign::ForeignNodes;
pub(crate) use listings::{Listing, Prefetched};
pub(crate) use order::{is_contender, sort_children};
pub(crate) use rules::{Exclusive, Rules};
