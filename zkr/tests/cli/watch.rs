//! `zkr watch`: the JSON lines of its contract, for every kind of change, across a cut
//! connection (a node deleted and re-created meanwhile is reported), and its exit codes.

use serde_json::{json, Value};

use zk_recipes::CreateMode;
use zk_recipes_testing::{fixtures, ProxyMode, TcpProxy};

use super::{path, run, Zkr};

/// The next line, parsed.
async fn event(zkr: &mut Zkr) -> Value {
    let line = zkr.line().await;
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// The event's kind and path (`""` for initialized / resynced).
fn kind(event: &Value) -> (String, String) {
    let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    (text("event"), text("path"))
}

async fn stat(fw: &zk_recipes::Framework, path: &str) -> zk_recipes::Stat {
    fw.get_data(path).await.unwrap().1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_events_follow_the_contract_across_a_cut() {
    let server = zk_recipes_testing::TestingServer::start().await.unwrap();
    let proxy = TcpProxy::start(server.connect_string()).await.unwrap();
    let fw = fixtures::framework(server.connect_string()).await;
    let root = path("watch");
    fw.create(&root, b"r", CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{root}/a"), b"x", CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{root}/a/b"), b"", CreateMode::Persistent).await.unwrap();

    let mut watch = Zkr::start(proxy.connect_string(), &["--json", "--session-timeout", "4s", "watch", &root], &[]);
    // the initial nodes, parents first, then initialized
    let s = stat(&fw, &root).await;
    assert_eq!(
        event(&mut watch).await,
        json!({"event": "created", "path": root, "data": "r", "version": 0, "czxid": s.czxid, "mzxid": s.mzxid})
    );
    assert_eq!(kind(&event(&mut watch).await), ("created".into(), format!("{root}/a")));
    assert_eq!(kind(&event(&mut watch).await), ("created".into(), format!("{root}/a/b")));
    assert_eq!(event(&mut watch).await, json!({"event": "initialized"}));

    // created (data that is not UTF-8), changed, deleted
    let c = format!("{root}/c");
    fw.create(&c, &[0xff], CreateMode::Persistent).await.unwrap();
    let s = stat(&fw, &c).await;
    assert_eq!(
        event(&mut watch).await,
        json!({"event": "created", "path": c, "data_base64": "/w==", "version": 0, "czxid": s.czxid, "mzxid": s.mzxid})
    );
    fw.set_data(&format!("{root}/a"), b"y", None).await.unwrap();
    let changed = event(&mut watch).await;
    assert_eq!(kind(&changed), ("changed".into(), format!("{root}/a")));
    assert_eq!((changed["data"].as_str(), changed["version"].as_i64()), (Some("y"), Some(1)));
    let b = stat(&fw, &format!("{root}/a/b")).await;
    fw.delete(&format!("{root}/a/b")).await.unwrap();
    assert_eq!(
        event(&mut watch).await,
        json!({"event": "deleted", "path": format!("{root}/a/b"), "version": 0, "czxid": b.czxid, "mzxid": b.mzxid})
    );

    // cut off: meanwhile /c is deleted and re-created with the same data (version 0 again),
    // and a new node appears; after the reconnect both are reported, then resynced
    proxy.set_mode(ProxyMode::Blackhole);
    let old_c = stat(&fw, &c).await;
    fw.delete(&c).await.unwrap();
    fw.create(&c, &[0xff], CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{root}/d"), b"d", CreateMode::Persistent).await.unwrap();
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    let mut seen = Vec::new();
    loop {
        let e = event(&mut watch).await;
        if e["event"] == "resynced" {
            break;
        }
        seen.push(e);
    }
    let kinds: Vec<(String, String)> = seen.iter().map(kind).collect();
    assert!(kinds.contains(&("created".into(), format!("{root}/d"))), "{seen:?}");
    let at = |k: &str| kinds.iter().position(|x| *x == (k.to_string(), c.clone()));
    let (deleted, created) = (at("deleted").expect("old /c deleted"), at("created").expect("new /c created"));
    assert!(deleted < created, "{seen:?}");
    assert_eq!(seen[deleted]["czxid"].as_i64(), Some(old_c.czxid));
    assert!(seen[created]["czxid"].as_i64() > Some(old_c.czxid), "{seen:?}");

    watch.signal(libc::SIGTERM);
    assert_eq!(watch.exit_code().await, 0, "{}", watch.stderr());
    fw.close();
}

#[tokio::test]
async fn modes_options_and_exit_codes() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = path("watch-modes");
    fw.create(&root, b"r", CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{root}/a"), b"x", CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{root}/a/deep"), b"z", CreateMode::Persistent).await.unwrap();

    // children, without data: the root and its children, no data fields, nothing deeper
    let mut watch = Zkr::start(&cs, &["--json", "watch", &root, "--mode", "children", "--no-data"], &[]);
    let first = event(&mut watch).await;
    assert_eq!(kind(&first), ("created".into(), root.clone()));
    assert!(first.get("data").is_none() && first.get("data_base64").is_none(), "{first}");
    assert_eq!(kind(&event(&mut watch).await), ("created".into(), format!("{root}/a")));
    assert_eq!(event(&mut watch).await, json!({"event": "initialized"}));
    fw.create(&format!("{root}/a/deeper"), b"", CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{root}/b"), b"", CreateMode::Persistent).await.unwrap();
    assert_eq!(kind(&event(&mut watch).await), ("created".into(), format!("{root}/b")), "depth 2 is not watched");
    watch.signal(libc::SIGINT);
    assert_eq!(watch.exit_code().await, 0, "{}", watch.stderr());

    // readable lines without --json; a missing path is fine and followed
    let missing = format!("{root}/later");
    let mut text = Zkr::start(&cs, &["watch", &missing, "--mode", "node"], &[]);
    assert_eq!(text.line().await, "initialized");
    fw.create(&missing, b"hi", CreateMode::Persistent).await.unwrap();
    let s = stat(&fw, &missing).await;
    assert_eq!(
        text.line().await,
        format!("created {missing} version=0 czxid={} mzxid={} data=\"hi\"", s.czxid, s.mzxid)
    );
    text.signal(libc::SIGTERM);
    assert_eq!(text.exit_code().await, 0, "{}", text.stderr());

    // usage errors exit 2, an unreachable ensemble 69
    for args in [
        &["watch", "relative"][..],
        &["watch", &root, "--max-depth", "0"],
        &["watch", &root, "--mode", "node", "--max-depth", "2"],
    ] {
        let (code, _, err) = run(&cs, args).await;
        assert_eq!(code, 2, "{args:?}: {err}");
    }
    let closed = format!("127.0.0.1:{}", fixtures::closed_port());
    let (code, _, err) = run(&closed, &["--connection-timeout", "1s", "watch", &root]).await;
    assert_eq!(code, 69, "{err}");
    fw.close();
}
