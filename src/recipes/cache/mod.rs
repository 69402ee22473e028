//! Caches: a local copy of a subtree kept current by a persistent watch — or one-shot watches
//! on servers without one ([`WatchMode`]) — ([`Cache`]), and the persistent watch itself
//! ([`PersistentWatcher`]).
//!
//! One engine, three modes: [`Cache::tree`] (a node and its descendants, optionally down to a
//! depth), [`Cache::children`] (a node and its children), [`Cache::node`] (one node). Every
//! mode loads its nodes with pipelined reads (in `multiRead` batches beside a persistent watch,
//! listing only the nodes whose stat counts children), reports [`CacheEvent`]s as a stream, and after
//! any gap in the watch (reconnect, new session) reads everything again and reports exactly
//! the differences.
//!
//! ```no_run
//! # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
//! use futures_util::StreamExt;
//! use zk_recipes::{Cache, CacheEvent};
//!
//! let cache = Cache::children(&fw, "/workers").with_data(false).build()?;
//! let mut events = Box::pin(cache.events());
//! cache.start().await?;
//! while let Some(event) = events.next().await {
//!     if let CacheEvent::Initialized = event {
//!         break;
//!     }
//! }
//! println!("workers: {:?}", cache.child_names("/workers"));
//! # Ok(()) }
//! ```
//!
//! Two watch sources feed the engine the same node notifications: a persistent recursive
//! watch (ZooKeeper 3.6+), or one-shot watches on every cached node (Curator's `TreeCache`
//! algorithm, any server). [`WatchMode::Auto`], the default, starts with the persistent watch
//! and goes on with one-shot watches when the server refuses `addWatch` with `Unimplemented`
//! (what ZooKeeper before 3.6 answers); [`CacheBuilder::watch_mode`] picks either up front.
//! Events, the forward-only rule and the resyncs are the same in both.

mod engine;
mod events;
mod handle;
mod node;
mod oneshot;
mod read;
mod scope;
mod source;
mod state;
mod watcher;

pub use crate::framework::{ResetReason, WatchEvent};
pub use handle::{Cache, CacheBuilder, DEFAULT_EVENT_CAPACITY};
pub use node::{CacheEvent, CachedNode};
pub use source::WatchMode;
pub use watcher::PersistentWatcher;
