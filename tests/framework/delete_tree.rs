//! `Framework::delete_recursive` against a real server: a tree of hundreds of nodes, a deep
//! chain and another session's ephemeral node go; a missing path is fine; `"/"` is refused;
//! a writer adding children meanwhile; under a namespace.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use assert_matches::assert_matches;
use zk_recipes::zk::{Acls, Error as ZkError};
use zk_recipes::CreateMode;
use zk_recipes::{with_deadline, Error, Framework};
use zk_recipes_testing::fixtures;

/// Creates `parent/n0..n{count}` under each of `parents` with pipelined requests; the paths.
async fn level(fw: &Framework, parents: &[String], count: usize) -> Vec<String> {
    let client = fw.client().unwrap();
    let options = zk_recipes::zk::CreateMode::Persistent.with_acls(Acls::anyone_all());
    let paths: Vec<String> = parents.iter().flat_map(|p| (0..count).map(move |i| format!("{p}/n{i}"))).collect();
    let creates: Vec<_> = paths.iter().map(|p| client.create(p, b"v", &options)).collect();
    for created in futures_util::future::join_all(creates).await {
        created.unwrap();
    }
    paths
}

#[tokio::test]
async fn deletes_hundreds_of_nodes_a_deep_chain_and_foreign_ephemerals() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("rm-tree"));
    let (tree, keep) = (format!("{base}/tree"), format!("{base}/keep"));
    fw.create(&tree, b"", CreateMode::Persistent).await.unwrap();
    fw.create(&keep, b"", CreateMode::Persistent).await.unwrap();
    // 6 + 36 + 288 = 330 nodes, four levels
    let one = level(&fw, std::slice::from_ref(&tree), 6).await;
    let two = level(&fw, &one, 6).await;
    let three = level(&fw, &two, 8).await;
    assert_eq!(one.len() + two.len() + three.len(), 330);
    // a chain 200 deep: the walk is iterative
    let mut deep = format!("{tree}/deep");
    for i in 0..200 {
        deep = format!("{deep}/d{i}");
    }
    fw.create(&deep, b"", CreateMode::Persistent).await.unwrap();
    // an ephemeral node of another session
    let other = fixtures::framework(&cs).await;
    other.create(&format!("{}/theirs", three[0]), b"", CreateMode::Ephemeral).await.unwrap();

    fw.delete_recursive(&tree).await.unwrap();

    assert!(fw.exists(&tree).await.unwrap().is_none(), "the tree is gone");
    assert!(fw.exists(&keep).await.unwrap().is_some(), "its sibling stays");
    assert_eq!(fw.children(&base).await.unwrap(), vec!["keep".to_string()]);
    fw.delete_recursive(&base).await.unwrap();
    assert!(fw.exists(&base).await.unwrap().is_none());
}

#[tokio::test]
async fn a_missing_path_is_ok() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let missing = format!("/{}/not/there", fixtures::unique("rm-missing"));
    fw.delete_recursive(&missing).await.unwrap();
    assert_matches!(fw.delete_recursive("no-slash").await, Err(Error::InvalidPath { .. }));
}

#[tokio::test]
async fn the_root_is_refused_and_nothing_is_deleted() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let node = format!("/{}/child", fixtures::unique("rm-root"));
    fw.create(&node, b"", CreateMode::Persistent).await.unwrap();
    assert_matches!(fw.delete_recursive("/").await, Err(Error::InvalidArgument { argument: "path", .. }));
    assert!(fw.exists(&node).await.unwrap().is_some(), "nothing deleted");
    assert!(fw.exists("/zookeeper").await.unwrap().is_some());
    fw.delete_recursive(node.rsplit_once('/').unwrap().0).await.unwrap();
}

#[tokio::test]
async fn under_a_namespace_the_namespace_root_is_refused() {
    let cs = fixtures::shared_server().await;
    let root = fixtures::framework(&cs).await;
    let ns = format!("/{}", fixtures::unique("rm-ns"));
    let fw = fixtures::framework_with(&cs, |b| b.namespace(ns.clone())).await;
    fw.create("/t/a/b/c", b"", CreateMode::Persistent).await.unwrap();
    fw.create("/t/x", b"", CreateMode::Persistent).await.unwrap();
    fw.create("/other", b"", CreateMode::Persistent).await.unwrap();

    assert_matches!(fw.delete_recursive("/").await, Err(Error::InvalidArgument { argument: "path", .. }));
    assert!(root.exists(&format!("{ns}/t/a/b/c")).await.unwrap().is_some(), "nothing deleted");

    fw.delete_recursive("/t").await.unwrap();
    assert!(fw.exists("/t").await.unwrap().is_none());
    assert!(root.exists(&format!("{ns}/t")).await.unwrap().is_none(), "gone under the namespace");
    assert_eq!(root.children(&ns).await.unwrap(), vec!["other".to_string()], "the rest stays");
    root.delete_recursive(&ns).await.unwrap();
}

/// Writes children `w{n}` under `parent` (not creating `parent`) from `tasks` tasks until
/// `stop`, `parent` is gone, or `limit` passes; counts the children created.
fn writers(
    fw: &Framework,
    parent: &str,
    tasks: usize,
    limit: Duration,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<usize>> {
    let next = Arc::new(AtomicUsize::new(0));
    (0..tasks)
        .map(|_| {
            let (client, parent, stop, next) = (fw.client().unwrap(), parent.to_string(), stop.clone(), next.clone());
            tokio::spawn(async move {
                let options = zk_recipes::zk::CreateMode::Persistent.with_acls(Acls::anyone_all());
                let until = Instant::now() + limit;
                let mut created = 0;
                while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    match client.create(&format!("{parent}/w{n}"), b"", &options).await {
                        Ok(_) => created += 1,
                        Err(ZkError::NoNode) => break,
                        Err(e) => panic!("writer: {e}"),
                    }
                }
                created
            })
        })
        .collect()
}

#[tokio::test]
async fn completes_while_a_writer_keeps_adding_children_for_a_while() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let writer = fixtures::framework(&cs).await;
    let tree = format!("/{}", fixtures::unique("rm-race"));
    fw.create(&format!("{tree}/a/b"), b"", CreateMode::Persistent).await.unwrap();
    level(&fw, std::slice::from_ref(&tree), 50).await;
    let stop = Arc::new(AtomicBool::new(false));
    // the writers stop on their own after 2 s (or when the parent is gone)
    let mut tasks = writers(&writer, &tree, 2, Duration::from_secs(2), &stop);
    tasks.extend(writers(&writer, &format!("{tree}/a"), 2, Duration::from_secs(2), &stop));
    tokio::time::sleep(Duration::from_millis(100)).await;

    let started = Instant::now();
    fw.delete_recursive(&tree).await.unwrap();
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let mut created = 0;
    for t in tasks {
        created += t.await.unwrap();
    }
    assert!(created > 0, "the writers wrote");
    assert!(took < Duration::from_secs(25), "within the operation timeout: {took:?}");
    assert!(fw.exists(&tree).await.unwrap().is_none(), "the tree is gone and stays gone");
}

#[tokio::test]
async fn a_writer_that_never_stops_is_cut_at_the_scopes_deadline() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let writer = fixtures::framework(&cs).await;
    let tree = format!("/{}", fixtures::unique("rm-endless"));
    fw.create(&tree, b"", CreateMode::Persistent).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = writers(&writer, &tree, 8, Duration::from_secs(60), &stop);
    tokio::time::sleep(Duration::from_millis(100)).await;

    let started = Instant::now();
    let outcome = with_deadline(Duration::from_millis(500), fw.delete_recursive(&tree)).await;
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }
    // the delete may win a race against the writers (then the tree is gone); otherwise the
    // deadline ends it with a typed error, never a hang
    assert_matches!(outcome, Ok(()) | Err(Error::Timeout { .. }));
    assert!(took < Duration::from_secs(3), "bounded by the scope's deadline: {took:?}");
    fw.delete_recursive(&tree).await.unwrap();
    assert!(fw.exists(&tree).await.unwrap().is_none());
}
