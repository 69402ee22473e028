//! `zkr group` and `zkr discover`: what they print, what they leave on the server, CMD's exit
//! code and environment, loss of membership (exit 76), re-registration after a session loss,
//! and the usage (2) and unreachable (69) exits.

use serde_json::Value;
use zk_recipes::{GroupMember, ServiceDiscovery, ServiceInstance};
use zk_recipes_testing::{fixtures, TestingServer};

use super::{path, run, Zkr};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_join_members_and_cmd() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let group = path("group");
    let other = GroupMember::new(&fw, &group, "lib", "from lib").unwrap();
    other.start().await.unwrap();
    other.wait_for_initial_create(super::WAIT).await.unwrap();

    // without CMD: a member until SIGTERM (exit 0), node gone after
    let mut join = Zkr::start(&cs, &["group", "join", &group, "--id", "cli", "--data", "hello world"], &[]);
    assert_eq!(join.line().await, format!("member {group}/cli"));
    let (data, stat) = fw.get_data(&format!("{group}/cli")).await.unwrap();
    assert_eq!(data, b"hello world");
    assert_ne!(stat.ephemeral_owner, 0);
    let (code, lines, _) = run(&cs, &["group", "members", &group]).await;
    assert_eq!((code, lines), (0, vec!["cli hello world".to_string(), "lib from lib".to_string()]));
    let (code, lines, _) = run(&cs, &["--json", "group", "members", &group]).await;
    assert_eq!(code, 0);
    let parsed: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(parsed[0], serde_json::json!({"id": "cli", "data": "hello world"}));
    assert_eq!(parsed[1], serde_json::json!({"id": "lib", "data": "from lib"}));
    join.signal(libc::SIGTERM);
    assert_eq!(join.exit_code().await, 0);
    assert_eq!(fw.exists(&format!("{group}/cli")).await.unwrap(), None);

    // with CMD: its exit code and ZK_MEMBER_PATH
    let (code, lines, _) =
        run(&cs, &["group", "join", &group, "--id", "c2", "--", "sh", "-c", "echo \"$ZK_MEMBER_PATH\"; exit 7"]).await;
    assert_eq!(code, 7);
    assert_eq!(lines, vec![format!("member {group}/c2"), format!("{group}/c2")]);
    assert_eq!(fw.exists(&format!("{group}/c2")).await.unwrap(), None);

    // usage errors
    for args in [
        vec!["group", "join", &group, "--id", "a/b"],
        vec!["group", "join", &group, "--id", ""],
        vec!["group", "members", "rel"],
    ] {
        assert_eq!(run(&cs, &args).await.0, 2, "{args:?}");
    }
    other.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership_lost_for_good_exits_76() {
    let server = TestingServer::start().await.unwrap();
    let cs = server.connect_string().to_string();
    let group = path("group-lost");
    let mut join =
        Zkr::start(&cs, &["--session-timeout", "2s", "group", "join", &group, "--id", "m", "--", "sleep", "60"], &[]);
    assert_eq!(join.line().await, format!("member {group}/m"));
    server.stop().await; // the session is lost and cannot come back
    assert_eq!(join.exit_code().await, 76, "{}", join.stderr());
}

/// `discover register orders --base BASE` followed by `rest`.
fn register<'a>(base: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    ["discover", "register", "orders", "--base", base].into_iter().chain(rest.iter().copied()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_register_list_names() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = path("services");
    let payload = r#"{"@class":"java.util.LinkedHashMap","zone":"a"}"#;
    let mut reg = Zkr::start(
        &cs,
        &register(
            &base,
            &["--address", "10.0.0.1", "--port", "8080", "--id", "i1", "--payload", payload, "--ssl-port", "8443"],
        ),
        &[],
    );
    assert_eq!(reg.line().await, "registered orders i1");
    let d = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
    let i = d.query_for_instance("orders", "i1").await.unwrap().unwrap();
    assert_eq!((i.address.as_deref(), i.port, i.ssl_port), (Some("10.0.0.1"), Some(8080), Some(8443)));
    assert_eq!(i.payload, Some(serde_json::from_str(payload).unwrap()));
    let (_, stat) = fw.get_data(&format!("{base}/orders/i1")).await.unwrap();
    assert_ne!(stat.ephemeral_owner, 0, "DYNAMIC");

    let (code, lines, _) = run(&cs, &["discover", "list", "orders", "--base", &base]).await;
    assert_eq!((code, lines), (0, vec!["i1 10.0.0.1 8080".to_string()]));
    let (code, lines, _) = run(&cs, &["--json", "discover", "list", "orders", "--base", &base]).await;
    assert_eq!(code, 0);
    assert_eq!(ServiceInstance::<Value>::from_json("-", lines[0].as_bytes()).unwrap(), i);
    let (code, lines, _) = run(&cs, &["discover", "names", "--base", &base]).await;
    assert_eq!((code, lines), (0, vec!["orders".to_string()]));

    reg.signal(libc::SIGINT);
    assert_eq!(reg.exit_code().await, 0);
    assert_eq!(d.query_for_instances("orders").await.unwrap(), vec![]);

    // with CMD: its exit code, unregistered after
    let (code, lines, _) =
        run(&cs, &register(&base, &["--address", "h", "--port", "1", "--", "sh", "-c", "exit 3"])).await;
    assert_eq!(code, 3);
    assert!(lines[0].starts_with("registered orders "), "{lines:?}");
    assert_eq!(d.query_for_instances("orders").await.unwrap(), vec![]);

    // usage errors, nothing registered
    for bad in [
        vec!["--port", "0"],
        vec!["--port", "65536"],
        vec!["--port", "1", "--payload", "{not json"],
        vec!["--port", "1", "--id", "a/b"],
        vec!["--port", "1", "--ssl-port", "0"],
    ] {
        let args: Vec<&str> = ["--address", "h"].into_iter().chain(bad.iter().copied()).collect();
        assert_eq!(run(&cs, &register(&base, &args)).await.0, 2, "{bad:?}");
    }
    assert_eq!(run(&cs, &["discover", "list", "", "--base", &base]).await.0, 2);
    assert_eq!(d.query_for_instances("orders").await.unwrap(), vec![]);
    let unreachable = format!("127.0.0.1:{}", fixtures::closed_port());
    let (code, _, _) = run(&unreachable, &["--connection-timeout", "1s", "discover", "names", "--base", &base]).await;
    assert_eq!(code, 69);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_register_comes_back_after_a_delete() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = path("services-expiry");
    let mut reg = Zkr::start(
        &cs,
        &["discover", "register", "api", "--base", &base, "--address", "h", "--port", "80", "--id", "x"],
        &[],
    );
    assert_eq!(reg.line().await, "registered api x");
    let node = format!("{base}/api/x");
    let (_, before) = fw.get_data(&node).await.unwrap();
    fw.delete(&node).await.unwrap(); // someone deletes it: registered again
    fixtures::eventually(super::WAIT, "registered again", || async {
        fw.exists(&node).await.unwrap().is_some_and(|s| s.czxid > before.czxid)
    })
    .await;
    reg.signal(libc::SIGTERM);
    assert_eq!(reg.exit_code().await, 0);
    assert_eq!(fw.exists(&node).await.unwrap(), None);
}

/// zkr's own session expires while the link is blackholed (the server drops the instance's
/// ephemeral node); once the link is back zkr gets a new session and registers again, still
/// running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_register_comes_back_after_its_session_expired() {
    use zk_recipes_testing::{ProxyMode, TcpProxy};
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(&cs).await;
    let base = path("services-session");
    let args = [
        "--session-timeout",
        "4s",
        "discover",
        "register",
        "api",
        "--base",
        &base,
        "--address",
        "h",
        "--port",
        "80",
        "--id",
        "x",
    ];
    let mut reg = Zkr::start(proxy.connect_string(), &args, &[]);
    assert_eq!(reg.line().await, "registered api x");
    let node = format!("{base}/api/x");
    let before = fw.exists(&node).await.unwrap().expect("registered");
    proxy.set_mode(ProxyMode::Blackhole);
    fixtures::eventually(super::WAIT, "the server expired zkr's session", || async {
        fw.exists(&node).await.unwrap().is_none()
    })
    .await;
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    fixtures::eventually(super::WAIT, "registered again by a new session", || async {
        fw.exists(&node).await.unwrap().is_some_and(|s| s.ephemeral_owner != before.ephemeral_owner)
    })
    .await;
    assert!(reg.child.try_wait().unwrap().is_none(), "zkr still runs: {}", reg.stderr());
    reg.signal(libc::SIGTERM);
    assert_eq!(reg.exit_code().await, 0, "{}", reg.stderr());
    assert_eq!(fw.exists(&node).await.unwrap(), None, "unregistered on exit");
}
