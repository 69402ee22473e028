//! Locks: one engine, a driver per lock kind, holds and their guards.
//!
//! # How an acquire flows
//! Follow `InterProcessMutex::acquire` to the create, list and watch requests it hands to the
//! framework by reading these files in order; each calls (and imports) only the ones after it.
//!
//! 1. `mutex.rs`: the lock handle. `acquire` builds a [`Request`] with the mutex's driver
//!    (`driver::MutexDriver`) and calls the engine.
//! 2. `engine.rs`: the one engine (Curator's `LockInternals`): how long an acquire may wait,
//!    `contend` — admitted by the driver, create our node (the framework's one protected
//!    create, the first listing in the same round trip), list, decide, wait, until we hold —
//!    and `Pending`, the one place cancellation is handled.
//! 3. `driver.rs`: what differs between kinds (Curator's `LockInternalsDriver`): how our node
//!    is made, whether it holds and what it waits for (pure, unit-tested without a server),
//!    and the hooks where a kind does more than the plain queue.
//! 4. `held.rs`: what an acquire ends with: [`HeldNode`] (fencing token, loss signal, the
//!    watch on our node) and the mutex's [`LockGuard`].
//! 5. `session.rs`: the optimisations the engine asks at three points — the local queue
//!    (`admit`), shared listings (`list`), the hand-off (`mark`, `follow`) — and the foreign
//!    nodes warned about: state one framework's locks share. The engine reads as the plain
//!    queue without them.
//! 6. `order.rs`: how contender nodes sort and which children are contenders: a listing and
//!    its queue (pure).
//!
//! A read lock is the same with `rwlock.rs` in place of `mutex.rs` (the read side's driver is
//! `driver::Reader`). A semaphore lease starts in `semaphore.rs` and takes `leases.rs` after
//! the driver (the semaphore's drivers, its rules and its [`Lease`] guard); it goes through `mutex.rs`
//! first, for its internal lock, only when someone queues there.
//!
//! # Nouns
//! * A **contender**: a node in a lock's queue, held or waiting; the contenders of a listing
//!   in queue order are its **queue** (`order::Queue`). An **acquire** is one call contending
//!   until it holds; its state in the engine is a `Contention`.
//! * A **hold**: a lock held, through a node of ours ([`HeldNode`]). A **guard** is what a caller
//!   holds a hold by ([`LockGuard`], [`WriteGuard`], [`Lease`], [`HeldLock`], [`TimedHold`]);
//!   several guards may share one hold ([`LockGuard::reenter`], counted by
//!   [`LockGuard::guard_count`]); a handle's holds in this process are its **local holds**.
//! * A **lease**: a hold of a semaphore ([`Lease`]); only that. A semaphore's lease that
//!   outlives its session is a **permit** ([`ExpiringPermit`]). A hold that ends at a deadline
//!   unless renewed is a **timed hold** (its "length"); a node the server deletes after a time
//!   is a **server TTL** node.
//! * A **driver**: the policy of one kind of contender; it **decides** from a queue.
//! * A **turn**: the atomic values' turn to write (their own queue, `recipes/atomic`); the
//!   local queue's right to create next is its **create order**.
//! * A **mark**: a local holder's note that its node holds alone at the queue's head
//!   (`session.rs`'s hand-off).
//! * A **participant**: a node in a lock's queue as `participants()` lists it (Curator's
//!   `getParticipantNodes`); a leader election's participant is a
//!   [`Participant`](crate::Participant).

mod driver;
mod engine;
mod expiring_permit;
mod guarded;
mod handle;
mod held;
mod leases;
mod lock;
mod multilock;
mod mutex;
mod order;
mod permit_name;
mod rwlock;
mod semaphore;
mod semaphore_mutex;
mod session;
mod timed_hold;

pub use expiring_permit::ExpiringPermit;
pub use held::{HeldNode, LockGuard};
pub use leases::Lease;
pub use lock::{HeldLock, InterProcessLock};
pub use multilock::{InterProcessMultiLock, MultiLockGuard};
pub use mutex::InterProcessMutex;
pub use rwlock::{InterProcessReadWriteLock, ReadLock, WriteGuard, WriteLock};
pub use semaphore::InterProcessSemaphoreV2;
pub use semaphore_mutex::InterProcessSemaphoreMutex;
pub use timed_hold::TimedHold;

// The engine, for the recipes that contend through it with drivers of their own (the leader
// latch, the atomic values' turns) and those that read contender queues: nothing else of the
// locks is theirs to reach.
pub(crate) use driver::{Decision, Driver, Exclusive, Once, Reading, Request, Spec};
pub(crate) use engine::{contend, forever, Forever};
pub(crate) use held::Acquired;
pub(crate) use order::{is_contender, sort_children, Listed, Listing, Read};
pub(crate) use session::ForeignNodes;
