//! `--compressed` (a global flag, before or after the subcommand) on `zkr shared-count`,
//! `zkr queue`, `zkr watch`, `zkr atomic`, `zkr group` and `zkr inspect`: gzip on the wire
//! (Curator's bytes, read back by the library), items and counts exchanged with a compressing
//! library framework, and uncompressed data refused with exit 1, as Curator refuses it.

use zk_recipes::{CompressionProvider, GroupMember, GzipCompression, SharedCount, SimpleDistributedQueue};
use zk_recipes_testing::fixtures;

use super::{path, run};

fn gunzip(stored: &[u8]) -> Vec<u8> {
    assert_eq!(stored[..2], [0x1f, 0x8b], "stored gzipped: {stored:?}");
    GzipCompression::default().decompress("/", stored).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_compressed() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let c = path("gz-count");
    let (code, lines, stderr) = run(&cs, &["shared-count", "--compressed", "set", &c, "42"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(lines, ["42"]);
    assert_eq!(gunzip(&fw.get_data(&c).await.unwrap().0), 42i32.to_be_bytes());
    // the flag after the subcommand too
    assert_eq!(run(&cs, &["shared-count", "get", &c, "--compressed"]).await.1, ["42"]);
    // what a compressing library writes, zkr reads
    SharedCount::new(&fw.compressed(), &c, 0).unwrap().set(7).await.unwrap();
    assert_eq!(run(&cs, &["shared-count", "--compressed", "get", &c]).await.1, ["7"]);
    // a plain count read with --compressed: a typed error, exit 1 (Curator throws there)
    let plain = path("plain-count");
    assert_eq!(run(&cs, &["shared-count", "set", &plain, "3"]).await.0, 0);
    let (code, _, stderr) = run(&cs, &["shared-count", "--compressed", "get", &plain]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("gzip"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_items_compressed() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let q = path("gz-queue");
    let (code, lines, stderr) = run(&cs, &["queue", "--compressed", "put", "--kind", "simple", &q, "hello"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(gunzip(&fw.get_data(&lines[0]).await.unwrap().0), b"hello");
    let lib = SimpleDistributedQueue::new(&fw.compressed(), &q).unwrap();
    assert_eq!(lib.take().await.unwrap(), b"hello");
    lib.offer(b"from lib").await.unwrap();
    let (code, lines, stderr) =
        run(&cs, &["queue", "take", "--compressed", "--kind", "simple", "--timeout", "10s", &q]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(lines, ["from lib"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_compressed() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = path("gz-watch");
    fw.compressed().create(&root, b"r", zk_recipes::CreateMode::Persistent).await.unwrap();
    let plain = format!("{root}/plain");
    fw.create(&plain, b"as stored", zk_recipes::CreateMode::Persistent).await.unwrap();
    let mut watch = super::Zkr::start(&cs, &["--json", "watch", "--compressed", &root], &[]);
    let line = |text: String| serde_json::from_str::<serde_json::Value>(&text).unwrap();
    let first = line(watch.line().await);
    assert_eq!((first["path"].as_str(), first["data"].as_str()), (Some(root.as_str()), Some("r")), "{first}");
    assert!(first.get("data_error").is_none(), "{first}");
    // data that is not gzip: as stored, with the reason
    let second = line(watch.line().await);
    assert_eq!((second["path"].as_str(), second["data"].as_str()), (Some(plain.as_str()), Some("as stored")));
    assert!(second["data_error"].as_str().is_some_and(|e| e.contains("gzip")), "{second}");
    assert_eq!(line(watch.line().await)["event"], "initialized");
    // a change written compressed is printed gunzipped
    fw.compressed().set_data(&root, b"r2", None).await.unwrap();
    let changed = line(watch.line().await);
    assert_eq!((changed["event"].as_str(), changed["data"].as_str()), (Some("changed"), Some("r2")), "{changed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_data_command_takes_compressed() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    // atomic: the value's node stored gzip, as Curator 5.8's DistributedAtomicLong writes it
    let a = path("gz-atomic");
    let (code, lines, stderr) = run(&cs, &["--compressed", "atomic", "add", &a, "5"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(lines, ["5"]);
    assert_eq!(gunzip(&fw.get_data(&a).await.unwrap().0), 5i64.to_be_bytes());
    assert_eq!(run(&cs, &["atomic", "get", &a, "--compressed"]).await.1, ["5"]);
    // group: a compressing library member's data, read by zkr
    let g = path("gz-group");
    let member = GroupMember::new(&fw.compressed(), &g, "lib", "lib-data").unwrap();
    member.start().await.unwrap();
    member.wait_for_initial_create(std::time::Duration::from_secs(20)).await.unwrap();
    let (code, lines, stderr) = run(&cs, &["group", "members", &g, "--compressed"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(lines, ["lib lib-data"]);
    member.close().await.unwrap();
    // inspect reads the counter's value decompressed (plain, it cannot read it as a number)
    let (code, out, stderr) = run(&cs, &["--compressed", "--json", "inspect", &a]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(out.join("\n").contains(r#""value":"5""#), "{out:?} {stderr}");
}
