//! The cache's task: follows a watch source (a persistent watch or one-shot watches, see
//! `source.rs`), loads and re-reads the subtree on every reset, re-reads each node an event
//! names. Which source it follows changes nothing else.

use std::sync::Arc;

use futures_util::{FutureExt, StreamExt};
use tokio::sync::watch;
use tracing::Instrument;

use super::node::CachedNode;
use super::read::{read_node, TreeReader};
use super::source::{self, WatchMode};
use super::state::Shared;
use crate::error::{Error, Result};
use crate::framework::Framework;
use crate::framework::WatchEvent;

/// How many events that are ready at once are re-read together (their requests pipelined).
const BATCH: usize = 512;

/// Closes the subscribers and signals the end of the task however it ends (also aborted).
struct Ending {
    shared: Arc<Shared>,
    _alive: watch::Sender<()>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// Runs the cache until the framework closes or the task is aborted. `alive` is dropped when
/// it ends.
pub(crate) async fn run(
    fw: Framework,
    shared: Arc<Shared>,
    recursive: bool,
    mode: WatchMode,
    alive: watch::Sender<()>,
) {
    let _ending = Ending { shared: shared.clone(), _alive: alive };
    let (mut one_shot, mut events) = match source::start(&fw, &shared.scope, recursive, mode) {
        Ok(started) => started,
        Err(e) => return shared.fail(e),
    };
    // multiRead only beside persistent watches (both came with 3.6): an older server answers
    // an unknown operation and then closes the connection
    let mut reader = TreeReader::new(!one_shot);
    let mut batch: Vec<WatchEvent> = Vec::new();
    let mut next = None;
    loop {
        let event = match next.take() {
            Some(event) => event,
            None => match events.next().await {
                Some(event) => event,
                None => return,
            },
        };
        let event = match event {
            Ok(event) => event,
            Err(e) if !one_shot && source::falls_back(mode, &e) => {
                let path = &shared.scope.root;
                tracing::warn!(error = %e, %path, "cache: the server refuses addWatch; one-shot watches instead");
                (one_shot, events) = match source::start(&fw, &shared.scope, recursive, WatchMode::OneShot) {
                    Ok(started) => started,
                    Err(e) => return shared.fail(e),
                };
                reader = TreeReader::new(false);
                continue;
            }
            Err(e) => {
                tracing::error!(error = %e, path = %shared.scope.root, "cache: the watch failed; the cache stops");
                return shared.fail(e);
            }
        };
        if let WatchEvent::Reset(reason) = event {
            shared.set_watch_mode(if one_shot { WatchMode::OneShot } else { WatchMode::Persistent });
            let span =
                tracing::debug_span!("cache_resync", path = %shared.scope.root, ?reason, nodes = tracing::field::Empty);
            let mut failures = 0u32;
            loop {
                match reader.read(&fw, &shared.scope).instrument(span.clone()).await {
                    Ok(mut tree) => {
                        tree.retain(|_, node| decoded(&fw, node));
                        span.record("nodes", tree.len());
                        break shared.apply_tree(tree);
                    }
                    Err(Error::Closed) => return,
                    // not the connection: reading again would fail again
                    Err(e @ (Error::ZooKeeper(_) | Error::TooLarge { .. })) => {
                        span.in_scope(
                            || tracing::error!(path = %shared.scope.root, error = %e, "cache: reading the subtree failed; the cache stops"),
                        );
                        return shared.fail(e);
                    }
                    // the retry policy gave up: read again once connected (again); told once
                    Err(e) => {
                        span.in_scope(|| match failures {
                            0 => tracing::warn!(path = %shared.scope.root, error = %e, "cache: reading the subtree failed; again when connected (further failures at debug)"),
                            _ => tracing::debug!(error = %e, failures, "cache: reading the subtree failed; again when connected"),
                        });
                        failures += 1;
                        if fw.wait_until_connected().await.is_err() {
                            return;
                        }
                    }
                }
            }
            continue;
        }
        // node events ready now are re-read together; a reset or an error ends the batch
        batch.push(event);
        let mut ended = false;
        while batch.len() < BATCH {
            match events.next().now_or_never() {
                Some(Some(Ok(WatchEvent::Reset(reason)))) => {
                    next = Some(Ok(WatchEvent::Reset(reason)));
                    break;
                }
                Some(Some(Err(e))) => {
                    next = Some(Err(e));
                    break;
                }
                Some(Some(Ok(event))) => batch.push(event),
                Some(None) => {
                    ended = true;
                    break;
                }
                None => break,
            }
        }
        if let Err(Error::Closed) = reread(&fw, &shared, &mut batch).await {
            return;
        }
        if ended {
            return;
        }
    }
}

/// Turns a node's stored data into what the framework reads: decompressed on a compressing
/// framework (as Curator 5.8's `CuratorCache` reads under `enableCompression()`), empty data
/// staying empty (the containers the framework makes are never compressed). `false` for data
/// that does not decompress: the node is left out of the cache and logged — as a node we may
/// not read (`NoAuth`) is, and as Curator's cache leaves out a node whose read failed — and a
/// cached node rewritten so is reported deleted. The cache goes on either way.
fn decoded(fw: &Framework, node: &mut CachedNode) -> bool {
    if !fw.compression_enabled() {
        return true;
    }
    let Some(stored) = node.data.take() else { return true };
    match fw.decode_or_empty(&node.path, stored) {
        Ok(data) => {
            node.data = Some(data);
            true
        }
        Err(e) => {
            tracing::warn!(path = %node.path, error = %e, "cache: the node's data does not decompress; left out");
            false
        }
    }
}

/// Re-reads the covered nodes that `batch` names (requests sent before any answer is
/// awaited) and applies each answer in order. A failed read is skipped: it failed because
/// the connection went, and the reset that follows reads everything again.
async fn reread(fw: &Framework, shared: &Shared, batch: &mut Vec<WatchEvent>) -> Result<()> {
    let conn = fw.conn()?;
    let reads: Vec<_> = batch
        .drain(..)
        .filter(|event| !matches!(event, WatchEvent::ChildrenChanged { .. }))
        .filter_map(|event| event.path().map(str::to_string))
        .filter(|path| shared.scope.covers(path))
        .map(|path| {
            let read = read_node(&conn, &path, shared.scope.with_data);
            (path, read)
        })
        .collect();
    for (path, read) in reads {
        match read.await {
            Ok(mut node) => {
                if node.as_mut().is_some_and(|n| !decoded(fw, n)) {
                    node = None;
                }
                shared.apply_read(&path, node)
            }
            Err(e) => tracing::debug!(error = %e, %path, "cache: re-read failed; the next reset resyncs"),
        }
    }
    Ok(())
}
