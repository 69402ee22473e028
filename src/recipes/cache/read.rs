//! Reading a cache's nodes from the server: one node, or the whole covered subtree level by
//! level with pipelined requests.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use futures_util::future::join_all;
use zookeeper_client::{Client, Error as ZkError};

use super::node::CachedNode;
use super::scope::Scope;
use crate::error::Result;
use crate::framework::paths::join;
use crate::framework::Framework;

/// How many nodes of a level are asked for before their answers are awaited.
const PIPELINE: usize = 512;

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
        for chunk in level.chunks(PIPELINE) {
            let reads: Vec<Read> = chunk.iter().map(|p| read_node(client, p, scope.with_data)).collect();
            let lists: Vec<_> =
                if descend { chunk.iter().map(|p| client.list_children(p)).collect() } else { Vec::new() };
            let (reads, lists) = (join_all(reads).await, join_all(lists).await);
            for (path, read) in chunk.iter().zip(reads) {
                if let Some(node) = read? {
                    found.insert(path.clone(), node);
                }
            }
            for (path, listed) in chunk.iter().zip(lists) {
                // a node gone meanwhile has no children; its deletion comes as an event
                for name in readable(listed, path)?.unwrap_or_default() {
                    let child = join(path, &name);
                    if scope.accepts_child(&child) {
                        next.push(child);
                    }
                }
            }
        }
        level = next;
        depth += 1;
    }
    Ok(found)
}
