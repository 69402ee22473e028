//! More bad inputs, across the newer APIs (group members, TTL and persistent nodes, service
//! discovery, caches, persistent watches, leases, the 3.6+ calls, TLS settings): each gets its
//! typed error — never a panic — and nothing is left behind: no node under the test's base, no
//! ephemeral node of the session, no background delete pending.

use std::time::Duration;

use zk_recipes::CreateMode;
use zk_recipes::{
    Cache, Error, GroupMember, InterProcessMutex, NodeMode, PersistentNode, PersistentTtlNode, PersistentWatcher,
    ServiceDiscovery, ServiceInstance, SharedValue, TimedHold,
};
use zk_recipes_testing::fixtures;

/// The kind of error a case must give.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Path,
    Argument,
    Corrupt,
    Unsupported,
    Closed,
}

fn kind_of<T>(r: &zk_recipes::Result<T>) -> Option<Kind> {
    match r {
        Err(Error::InvalidPath { .. }) => Some(Kind::Path),
        Err(Error::InvalidArgument { .. }) => Some(Kind::Argument),
        Err(Error::CorruptData { .. }) => Some(Kind::Corrupt),
        Err(Error::Unsupported(_)) => Some(Kind::Unsupported),
        Err(Error::Closed) => Some(Kind::Closed),
        _ => None,
    }
}

/// One case: its name, the kind of error wanted and the kind got (`None`: no typed error).
type Case = (&'static str, Kind, Option<Kind>);

fn case<T>(name: &'static str, want: Kind, got: zk_recipes::Result<T>) -> Case {
    (name, want, kind_of(&got))
}

#[tokio::test]
async fn more_bad_inputs_get_typed_errors_and_leave_nothing_behind() {
    use Kind::{Argument, Closed, Corrupt, Path};
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("bad-new"));
    let at = |rest: &str| format!("{base}/{rest}");
    let mut cases: Vec<Case> = Vec::new();

    // group members: ids and paths
    for (name, id) in
        [("member: empty id", ""), ("member: id with /", "a/b"), ("member: id .", "."), ("member: id ..", "..")]
    {
        cases.push(case(name, Argument, GroupMember::new(&fw, &at("group"), id, "")));
    }
    cases.push(case("member: id with a control character", Path, GroupMember::new(&fw, &at("group"), "a\u{1}", "")));
    cases.push(case("member: relative group path", Path, GroupMember::new(&fw, "group", "m", "")));
    cases.push(case("member: the root as group", Path, GroupMember::new(&fw, "/", "m", "")));

    // TTLs and persistent nodes
    let ttl_node = |ttl: Duration| PersistentTtlNode::new(&fw, &at("ttl"), ttl, "");
    cases.push(case("ttl node: zero TTL", Argument, ttl_node(Duration::ZERO)));
    cases.push(case("ttl node: TTL under 1 ms", Argument, ttl_node(Duration::from_micros(500))));
    cases.push(case("ttl node: TTL above the maximum", Argument, ttl_node(Duration::from_millis(1 << 40))));
    cases.push(case("ttl node: bad path", Path, PersistentTtlNode::new(&fw, "/a/", Duration::from_secs(1), "")));
    cases.push(case("persistent node: bad path", Path, PersistentNode::new(&fw, "a", NodeMode::Ephemeral, "")));
    cases.push(case("persistent node: the root", Path, PersistentNode::new(&fw, "/", NodeMode::Persistent, "")));
    let ttl_create = |mode: CreateMode, ttl: Duration| {
        let path = at("created");
        let fw = fw.clone();
        async move { fw.create_with_ttl(&path, b"", mode, ttl).await }
    };
    cases.push(case("create_with_ttl: zero TTL", Argument, ttl_create(CreateMode::Persistent, Duration::ZERO).await));
    cases.push(case(
        "create_with_ttl: ephemeral mode",
        Argument,
        ttl_create(CreateMode::Ephemeral, Duration::from_secs(5)).await,
    ));
    cases.push(case(
        "create_with_ttl: bad path",
        Path,
        fw.create_with_ttl("/x//y", b"", CreateMode::Persistent, Duration::from_secs(1)).await,
    ));

    // service discovery: names, ids, ports, JSON
    let build = |name: &str, id: &str, port: u32, ssl: u32| {
        ServiceInstance::<()>::builder(name).id(id).address("h").port(port).ssl_port(ssl).build()
    };
    cases.push(case("instance: empty name", Argument, build("", "i", 1, 1)));
    cases.push(case("instance: name with /", Argument, build("a/b", "i", 1, 1)));
    cases.push(case("instance: id ..", Argument, build("svc", "..", 1, 1)));
    cases.push(case("instance: empty id", Argument, build("svc", "", 1, 1)));
    cases.push(case("instance: port 0", Argument, build("svc", "i", 0, 1)));
    cases.push(case("instance: port 65536", Argument, build("svc", "i", 65_536, 1)));
    cases.push(case("instance: ssl port 70000", Argument, build("svc", "i", 1, 70_000)));
    cases.push(case("discovery: relative base", Path, ServiceDiscovery::<()>::new(&fw, "services")));
    cases.push(case("discovery: the root as base", Path, ServiceDiscovery::<()>::new(&fw, "/")));
    cases.push(case("instance JSON: not JSON", Corrupt, ServiceInstance::<()>::from_json("/s/i", b"{not json")));
    cases.push(case("instance JSON: an array", Corrupt, ServiceInstance::<()>::from_json("/s/i", b"[1,2]")));

    // caches and persistent watches
    cases.push(case("tree cache: max_depth 0", Argument, Cache::tree(&fw, &at("cache")).max_depth(0).build()));
    cases.push(case("children cache: max_depth", Argument, Cache::children(&fw, &at("cache")).max_depth(2).build()));
    cases.push(case("node cache: max_depth", Argument, Cache::node(&fw, &at("cache")).max_depth(1).build()));
    cases.push(case("cache: event capacity 0", Argument, Cache::tree(&fw, &at("cache")).event_capacity(0).build()));
    cases.push(case("cache: bad path", Path, Cache::tree(&fw, "cache/").build()));
    cases.push(case("persistent watch: bad path", Path, PersistentWatcher::new(&fw, "/w/", true)));

    // leases
    let mutex = InterProcessMutex::new(&fw, &at("leased")).unwrap();
    cases.push(case("lease: zero", Argument, TimedHold::acquire(&mutex, Duration::ZERO).await));

    // shared values and the 3.6+ calls
    cases.push(case("shared value: bad path", Path, SharedValue::new(&fw, "/v/../w", "")));
    cases.push(case("ephemerals: relative prefix", Path, fw.ephemerals("x").await));
    cases.push(case("descendants_count: trailing /", Path, fw.descendants_count(&format!("{base}/")).await));
    cases.push(case("sync: empty path", Path, fw.sync("").await));

    // started after close
    let member = GroupMember::new(&fw, &at("closed"), "m", "").unwrap();
    member.close().await.unwrap();
    cases.push(case("member: start after close", Closed, member.start().await));

    let failed: Vec<String> = cases
        .iter()
        .filter(|(_, want, got)| Some(*want) != *got)
        .map(|(name, want, got)| format!("{name}: want {want:?}, got {got:?}"))
        .collect();
    let mut names: Vec<&str> = cases.iter().map(|(name, _, _)| *name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!((names.len(), cases.len()), (39, 39), "the table's cases, each named once");
    assert!(failed.is_empty(), "bad inputs without their typed error: {failed:#?}");

    // nothing left behind: no node under the base, no ephemeral of this session anywhere
    fixtures::settle(&[&fw]).await;
    assert_eq!(fw.exists(&base).await.unwrap(), None, "a refused call created {base}");
    assert_eq!(fw.ephemerals("/").await.unwrap(), Vec::<String>::new(), "ephemerals left behind");
    fw.close();
}
