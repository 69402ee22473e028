//! Caches: a local copy of a subtree kept current by a persistent watch ([`Cache`]), and the
//! watch itself ([`PersistentWatcher`]).
//!
//! One engine, three modes: [`Cache::tree`] (a node and its descendants, optionally down to a
//! depth), [`Cache::children`] (a node and its children), [`Cache::node`] (one node). Every
//! mode loads its nodes with pipelined reads, reports [`CacheEvent`]s as a stream, and after
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
//! cache.start()?;
//! while let Some(event) = events.next().await {
//!     if let CacheEvent::Initialized = event {
//!         break;
//!     }
//! }
//! println!("workers: {:?}", cache.child_names("/workers"));
//! # Ok(()) }
//! ```
//!
//! Not yet: a fallback on one-shot watches for servers older than 3.6 (they refuse `addWatch`;
//! [`Cache::failure`] reports it).

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

pub use handle::{Cache, CacheBuilder, DEFAULT_EVENT_CAPACITY};
pub use node::{CacheEvent, CachedNode};
pub use source::WatchMode;
pub use watcher::{PersistentWatcher, ResetReason, WatchEvent};
