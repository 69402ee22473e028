//! `zkr rm`: a node, a tree with `-r --yes`, and `-r` refused (exit 2, nothing deleted) when
//! stdin is not a terminal and `--yes` is not given.

use zk_recipes::CreateMode;
use zk_recipes_testing::fixtures;

use super::{children, path, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rm_r_yes_deletes_a_tree() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = path("rm-tree");
    for leaf in ["a/x/1", "a/x/2", "a/y", "b", "c/z/deep/er"] {
        fw.create(&format!("{base}/tree/{leaf}"), b"v", CreateMode::Persistent).await.unwrap();
    }
    fw.create(&format!("{base}/keep"), b"", CreateMode::Persistent).await.unwrap();
    let tree = format!("{base}/tree");

    let (code, out, err) = run(&cs, &["rm", "-r", "--yes", &tree]).await;
    assert_eq!((code, out), (0, Vec::<String>::new()), "{err}");
    assert!(fw.exists(&tree).await.unwrap().is_none(), "the tree is gone");
    assert_eq!(children(&fw, &base).await, ["keep"], "its sibling stays");
    // a missing path is done; the short spellings
    let (code, _, err) = run(&cs, &["rm", "-ry", &tree]).await;
    assert_eq!(code, 0, "{err}");
    // the root is refused before connecting
    let (code, _, err) = run(&cs, &["rm", "-r", "-y", "/"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(fw.exists(&base).await.unwrap().is_some());
    fw.delete_recursive(&base).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rm_r_without_yes_and_no_terminal_is_a_usage_error() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let tree = path("rm-ask");
    fw.create(&format!("{tree}/a/b"), b"", CreateMode::Persistent).await.unwrap();

    // stdin is /dev/null: nobody can answer
    let (code, out, err) = run(&cs, &["rm", "-r", &tree]).await;
    assert_eq!((code, out), (2, Vec::<String>::new()), "{err}");
    assert!(err.contains("--yes"), "the message names the way out: {err}");
    assert_eq!(children(&fw, &tree).await, ["a"], "nothing deleted");
    assert_eq!(children(&fw, &format!("{tree}/a")).await, ["b"]);
    fw.delete_recursive(&tree).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rm_without_r_deletes_a_leaf_and_refuses_a_parent() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let tree = path("rm-plain");
    // persistent, not the container a create of its child would make (the server removes an
    // empty container by itself)
    fw.create(&tree, b"", CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{tree}/leaf"), b"", CreateMode::Persistent).await.unwrap();

    let (code, _, err) = run(&cs, &["rm", &tree]).await;
    assert_eq!(code, 1, "a node with children is refused: {err}");
    assert!(err.contains("has children"), "{err}");
    assert_eq!(children(&fw, &tree).await, ["leaf"], "nothing deleted");
    let (code, _, err) = run(&cs, &["rm", &format!("{tree}/leaf")]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&cs, &["rm", &format!("{tree}/leaf")]).await;
    assert_eq!(code, 1, "a missing node is an error without -r: {err}");
    assert!(err.contains("does not exist"), "{err}");
    assert_eq!(run(&cs, &["rm", &tree]).await.0, 0);
    assert!(fw.exists(&tree).await.unwrap().is_none());
}
