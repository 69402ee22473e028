//! `zkr inspect` and `zkr watch` on hostile trees (issue 35): junk beside every recipe's
//! nodes, corrupt data, odd unicode names, non-UTF-8 and 1 MB data. Both print what they find
//! and exit 0, never panic; inspect marks the children a recipe ignores as `foreign`.

use serde_json::Value;

use zk_recipes::CreateMode;
use zk_recipes::Framework;
use zk_recipes_testing::fixtures;

use super::{path, run, Zkr};

async fn mk(fw: &Framework, path: &str, data: &[u8]) {
    fw.create(path, data, CreateMode::Persistent).await.unwrap();
}

/// A tree of recipes with junk in each: `(path, kind inspect must say, foreign names)`.
async fn hostile_tree(fw: &Framework, root: &str) -> Vec<(String, &'static str, Vec<&'static str>)> {
    let at = |p: &str| format!("{root}/{p}");
    mk(fw, root, b"").await;
    // a mutex: one holder, junk without a sequence (sorts first), junk with a huge one
    mk(fw, &at("mutex"), b"").await;
    fw.create(&at("mutex/_c_a-lock-"), b"", CreateMode::EphemeralSequential).await.unwrap();
    for junk in ["lock-", "_c_x-lock-", "lock-99999999999", "lockǅ-0000000001"] {
        mk(fw, &at(&format!("mutex/{junk}")), &[0xFF, 0xFE]).await;
    }
    // a semaphore with two junk leases and a junk lock
    mk(fw, &at("semaphore"), b"").await;
    mk(fw, &at("semaphore/leases"), b"").await;
    mk(fw, &at("semaphore/locks"), b"").await;
    fw.create(&at("semaphore/leases/_c_b-lease-"), b"host", CreateMode::EphemeralSequential).await.unwrap();
    for junk in ["leases/junk", "leases/lease-", "locks/lock-abc"] {
        mk(fw, &at(&format!("semaphore/{junk}")), b"").await;
    }
    // a read-write lock with a writer name without a sequence
    mk(fw, &at("rwlock"), b"").await;
    fw.create(&at("rwlock/_c_r-__READ__"), b"", CreateMode::EphemeralSequential).await.unwrap();
    mk(fw, &at("rwlock/__WRIT__"), b"").await;
    // a leader latch with a negative-looking sequence
    mk(fw, &at("latch"), b"").await;
    fw.create(&at("latch/_c_l-latch-"), b"leader", CreateMode::EphemeralSequential).await.unwrap();
    mk(fw, &at("latch/latch--1"), b"").await;
    // a queue with lying framing, 1 MB of junk and a foreign child
    mk(fw, &at("queue"), b"").await;
    mk(fw, &at("queue/queue-0000000001"), &[0, 1, 0, 1, 1, 0, 0, 0, 9, 1]).await;
    mk(fw, &at("queue/queue-0000000002"), &vec![0xA5; 1_000_000]).await;
    mk(fw, &at("queue/Ω"), b"").await;
    // counters of the wrong width, a count-down latch with corrupt data, a barrier with junk
    mk(fw, &at("counter3"), &[1, 2, 3]).await;
    mk(fw, &at("countdown"), b"\xff").await;
    mk(fw, &at("countdown/gen-0000000001"), b"x").await;
    mk(fw, &at("double"), b"").await;
    mk(fw, &at("double/foo"), b"").await;
    // service instances that are not JSON
    mk(fw, &at("services"), b"").await;
    mk(fw, &at("services/svc"), b"").await;
    mk(fw, &at("services/svc/i0"), b"{\"name\":").await;
    mk(fw, &at("big"), &vec![0xA5; 1_000_000]).await;
    vec![
        (at("mutex"), "mutex", vec!["_c_x-lock-", "lock-", "lock-99999999999", "lockǅ-0000000001"]),
        (at("semaphore"), "semaphore", vec!["junk", "lease-", "lock-abc"]),
        (at("rwlock"), "rwlock", vec!["__WRIT__"]),
        (at("latch"), "latch", vec!["latch--1"]),
        (at("queue"), "queue", vec![]),
        (at("counter3"), "barrier", vec![]),
        (at("countdown"), "unknown", vec![]),
        (at("double"), "unknown", vec![]),
        (at("services/svc"), "unknown", vec![]),
        (at("big"), "barrier", vec![]),
        (at("missing"), "missing", vec![]),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_and_watch_print_a_hostile_tree_and_exit_0() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = path("hostile");
    let cases = hostile_tree(&fw, &root).await;
    for (path, kind, foreign) in &cases {
        let (code, lines, stderr) = run(&cs, &["--json", "inspect", path]).await;
        assert_eq!(code, 0, "inspect {path}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let found: Value = serde_json::from_str(&lines.join("\n")).unwrap_or_else(|e| panic!("{path}: {e}: {lines:?}"));
        assert_eq!(found["kind"], *kind, "{path}: {found}");
        let mut marked: Vec<&str> = found["foreign"]
            .as_array()
            .map(|a| a.iter().filter_map(|n| n["name"].as_str()).collect())
            .unwrap_or_default();
        marked.sort();
        assert_eq!(&marked, foreign, "{path}: {found}");
        // the table too
        let (code, lines, stderr) = run(&cs, &["inspect", path]).await;
        assert_eq!(code, 0, "inspect {path}: {stderr}");
        assert_eq!(lines[0], format!("kind: {kind}"));
        let foreign_rows = lines.iter().filter(|l| l.starts_with("foreign ")).count();
        assert_eq!(foreign_rows, foreign.len(), "{path}: {lines:?}");
    }
    // the root: whatever it is, inspect says so
    let (code, _, stderr) = run(&cs, &["inspect", &root]).await;
    assert_eq!(code, 0, "{stderr}");

    // watch: every node once, JSON lines, then initialized; SIGINT ends it with 0
    let mut count = 0;
    let mut todo = vec![root.clone()];
    while let Some(p) = todo.pop() {
        count += 1;
        for c in fw.children(&p).await.unwrap() {
            todo.push(format!("{p}/{c}"));
        }
    }
    let mut watch = Zkr::start(&cs, &["--json", "watch", &root], &[]);
    for _ in 0..count {
        let line = watch.line().await;
        let event: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:.200}"));
        assert_eq!(event["event"], "created", "{line:.200}");
    }
    assert_eq!(watch.line().await, r#"{"event":"initialized"}"#);
    // junk deleted and re-created while it watches
    fw.delete(&format!("{root}/mutex/lock-")).await.unwrap();
    fw.create(&format!("{root}/mutex/lock-"), &[0xC3, 0x28], CreateMode::Persistent).await.unwrap();
    let deleted: Value = serde_json::from_str(&watch.line().await).unwrap();
    assert_eq!(deleted["event"], "deleted");
    let created: Value = serde_json::from_str(&watch.line().await).unwrap();
    assert_eq!((created["event"].as_str(), created["data_base64"].as_str()), (Some("created"), Some("wyg=")));
    watch.signal(libc::SIGINT);
    assert_eq!(watch.exit_code().await, 0, "{}", watch.stderr());
    assert!(!watch.stderr().contains("panicked"));
    fw.close();
}
