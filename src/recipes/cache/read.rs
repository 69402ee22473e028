//! Reading a cache's nodes from the server: one node, or the whole covered subtree level by
//! level with pipelined requests.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use futures_util::stream::{FuturesOrdered, StreamExt};
use zookeeper_client::{Client, Error as ZkError};

use super::node::CachedNode;
use super::scope::Scope;
use crate::error::Result;
use crate::framework::paths::join;
use crate::framework::Framework;

/// How many nodes are being read at once: a sliding window over each level, so that the
/// connection never drains between batches (a node's read and listing are sent when it enters).
const WINDOW: usize = 2048;

type Read = Pin<Box<dyn Future<Output = std::result::Result<Option<CachedNode>, ZkError>> + Send>>;

/// Sends the read of one node now (the client orders requests as they are made) and returns
/// its answer to await: `None` when the node does not exist.
pub(crate) fn read_node(client: &Client, path: &str, with_data: bool) -> Read {
    let owned = path.to_string();
    if with_data {
        let reading = client.get_data(path);
        Box::pin(async move {
            Ok(readable(reading.await, &owned)?.map(|(data, stat)| CachedNode { path: owned, data: Some(data), stat }))
        })
    } else {
        let reading = client.check_stat(path);
        Box::pin(async move { Ok(reading.await?.map(|stat| CachedNode { path: owned, data: None, stat })) })
    }
}

/// `NoNode` (gone meanwhile: its event follows) and `NoAuth` (not ours to read: left out,
/// logged) as `None`.
fn readable<T>(result: std::result::Result<T, ZkError>, path: &str) -> std::result::Result<Option<T>, ZkError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(ZkError::NoNode) => Ok(None),
        Err(ZkError::NoAuth) => {
            tracing::warn!(%path, "cache: no permission to read the node; left out");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Every covered node that exists, read through the framework's retry loop (a retry reads
/// everything again on the new connection).
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub(crate) async fn read_tree(fw: &Framework, scope: &Scope) -> Result<BTreeMap<String, CachedNode>> {
    fw.retry(|client| async move { read_with(&client, scope).await }).await
}

async fn read_with(client: &Client, scope: &Scope) -> std::result::Result<BTreeMap<String, CachedNode>, ZkError> {
    let mut found = BTreeMap::new();
    let mut level = vec![scope.root.clone()];
    let mut depth = 0;
    while !level.is_empty() {
        let descend = scope.descends(depth);
        let mut next = Vec::new();
        let mut waiting = level.iter();
        let mut answers = FuturesOrdered::new();
        loop {
            while answers.len() < WINDOW {
                let Some(path) = waiting.next() else { break };
                // both requests are sent here, in order, as the node enters the window
                let read = read_node(client, path, scope.with_data);
                let listed = descend.then(|| client.list_children(path));
                answers.push_back(async move {
                    let listed = match listed {
                        Some(listing) => Some(listing.await),
                        None => None,
                    };
                    (path, read.await, listed)
                });
            }
            let Some((path, read, listed)) = answers.next().await else { break };
            if let Some(node) = read? {
                found.insert(path.clone(), node);
            }
            // a node gone meanwhile has no children; its deletion comes as an event
            let names = match listed {
                Some(listed) => readable(listed, path)?.unwrap_or_default(),
                None => Vec::new(),
            };
            for name in names {
                let child = join(path, &name);
                if scope.accepts_child(&child) {
                    next.push(child);
                }
            }
        }
        drop(answers);
        level = next;
        depth += 1;
    }
    Ok(found)
}
