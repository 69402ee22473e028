//! `ServiceDiscovery` against real ZooKeeper: the node layout and JSON, queries, update and
//! unregister; registrations kept through a cut, an expiry and a server restart (exactly one
//! node per id, ours); CURATOR-164 (unregistered while disconnected: never resurrected);
//! CURATOR-175 (registered while the server is down: done once it is up); the provider's
//! strategies and down-instance policy; bad input.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};
use zk_recipes::discovery::DownInstancePolicy;
use zk_recipes::discovery::ProviderStrategy;
use zk_recipes::discovery::ServiceType;
use zk_recipes::CreateMode;

use zk_recipes::{Error, Framework, ServiceDiscovery, ServiceInstance};
use zk_recipes_testing::fixtures::{self, eventually, within};
use zk_recipes_testing::{expire_session, ProxyMode, TcpProxy, TestingServer};

use crate::support::{unique_root, LIVENESS};

fn instance(name: &str, id: &str, port: u32) -> ServiceInstance<Value> {
    ServiceInstance::builder(name)
        .id(id)
        .address("10.0.0.1")
        .port(port)
        .payload(json!({"@class": "java.util.LinkedHashMap", "zone": "a", "weights": [1, 2]}))
        .build()
        .unwrap()
}

/// Exactly one node for `id`, ephemeral of `fw`'s current session, holding `expected`.
async fn registered_once(observer: &Framework, fw: &Framework, path: &str, expected: &ServiceInstance<Value>) {
    eventually(LIVENESS, format!("{path}: there, ours, with its JSON"), || async {
        match observer.get_data(path).await {
            Ok((data, stat)) => {
                stat.ephemeral_owner == fw.status().session_id
                    && serde_json::from_slice::<ServiceInstance<Value>>(&data).ok().as_ref() == Some(expected)
            }
            Err(_) => false,
        }
    })
    .await;
}

#[tokio::test]
async fn register_query_update_unregister() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let observer = fixtures::framework(&cs).await;
    let base = unique_root();
    let d = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
    let reader = ServiceDiscovery::<Value>::new(&observer, &base).unwrap();
    let a = instance("orders", "a", 8080);
    let b = instance("orders", "b", 8081);
    let s = with(instance("billing", "s", 9000), |i| {
        i.service_type = ServiceType::Static;
    });
    assert_eq!(d.register(&a).await.unwrap(), format!("{base}/orders/a"));
    d.register(&b).await.unwrap();
    d.register(&s).await.unwrap();

    // the node holds exactly our JSON: Curator's fields in Curator's order
    let (data, stat) = observer.get_data(&format!("{base}/orders/a")).await.unwrap();
    assert_eq!(data, a.to_json().unwrap());
    let text = String::from_utf8(data).unwrap();
    let keys: Vec<&str> = [
        "name",
        "id",
        "address",
        "port",
        "sslPort",
        "payload",
        "registrationTimeUTC",
        "serviceType",
        "uriSpec",
        "enabled",
    ]
    .to_vec();
    let positions: Vec<usize> = keys.iter().map(|k| text.find(&format!("\"{k}\":")).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert_eq!(stat.ephemeral_owner, fw.status().session_id, "DYNAMIC is ephemeral");
    let (_, stat) = observer.get_data(&format!("{base}/billing/s")).await.unwrap();
    assert_eq!(stat.ephemeral_owner, 0, "STATIC is persistent");

    assert_eq!(reader.query_for_names().await.unwrap(), ["billing", "orders"]);
    assert_eq!(reader.query_for_instances("orders").await.unwrap(), vec![a.clone(), b.clone()]);
    assert_eq!(reader.query_for_instance("orders", "b").await.unwrap(), Some(b.clone()));
    assert_eq!(reader.query_for_instance("orders", "zz").await.unwrap(), None);
    assert_eq!(reader.query_for_instances("nothing").await.unwrap(), vec![]);

    // update: the new JSON replaces the old
    let a2 = with(a.clone(), |i| {
        i.enabled = false;
        i.payload = Some(json!([1, "two", null]));
    });
    d.update(&a2).unwrap();
    eventually(LIVENESS, "updated", || async {
        reader.query_for_instance("orders", "a").await.unwrap() == Some(a2.clone())
    })
    .await;
    assert!(matches!(d.update(&instance("orders", "unknown", 1)), Err(Error::InvalidArgument { .. })));

    // a corrupt node is skipped by the listing, reported by the single read
    observer.create(&format!("{base}/orders/junk"), b"not json", CreateMode::Persistent).await.unwrap();
    assert_eq!(reader.query_for_instances("orders").await.unwrap().len(), 2);
    assert!(matches!(reader.query_for_instance("orders", "junk").await, Err(Error::CorruptData { .. })));
    observer.delete(&format!("{base}/orders/junk")).await.unwrap();

    d.unregister("b").await.unwrap();
    assert_eq!(observer.exists(&format!("{base}/orders/b")).await.unwrap(), None);
    d.unregister("b").await.unwrap(); // unknown: a no-op
    assert_eq!(d.registered_ids(), ["a", "s"]);
    d.close().await.unwrap();
    assert_eq!(reader.query_for_instances("orders").await.unwrap(), vec![]);
    assert_eq!(reader.query_for_instances("billing").await.unwrap(), vec![]);
}

/// A server of its own, a registry whose framework connects through a proxy (to cut), and an
/// observer connected directly.
struct Proxied {
    server: TestingServer,
    proxy: TcpProxy,
    fw: Framework,
    observer: Framework,
    base: String,
    d: ServiceDiscovery<Value>,
}

impl Proxied {
    async fn start() -> Proxied {
        let server = TestingServer::start().await.unwrap();
        let proxy = TcpProxy::start(server.connect_string()).await.unwrap();
        let fw = fixtures::framework(proxy.connect_string()).await;
        let observer = fixtures::framework(server.connect_string()).await;
        let base = unique_root();
        let d = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
        Proxied { server, proxy, fw, observer, base, d }
    }
}

#[tokio::test]
async fn registrations_survive_a_cut_an_expiry_and_a_restart() {
    let Proxied { server, proxy, fw, observer, base, d } = Proxied::start().await;
    let instances = [instance("api", "1", 81), instance("api", "2", 82)];
    for i in &instances {
        d.register(i).await.unwrap();
    }
    let check = |what: &'static str| {
        let (observer, fw, d, base, instances) = (&observer, &fw, &d, &base, &instances);
        async move {
            let start = tokio::time::Instant::now();
            for i in instances {
                registered_once(observer, fw, &format!("{base}/api/{}", i.id), i).await;
            }
            let ids = observer.children(&format!("{base}/api")).await.unwrap();
            assert_eq!(ids.into_iter().collect::<BTreeSet<_>>(), BTreeSet::from(["1".into(), "2".into()]), "{what}");
            let found =
                ServiceDiscovery::<Value>::new(observer, base).unwrap().query_for_instances("api").await.unwrap();
            assert_eq!(found, instances.to_vec(), "{what}");
            assert!(d.registration_status("1").and_then(|s| s.node().map(|_| ())).is_some(), "{what}");
            eprintln!("{what}: registered again within {:?}", start.elapsed());
        }
    };
    proxy.cut();
    check("cut connection").await;
    let session = fw.status().session_id;
    expire_session(&fw).await.unwrap();
    check("expired session").await;
    assert_ne!(fw.status().session_id, session);
    server.restart().await.unwrap();
    check("restarted server").await;
    d.close().await.unwrap();
    assert_eq!(fixtures::ephemerals(&observer, &base).await.unwrap(), Vec::<String>::new());
}

/// CURATOR-164: an instance unregistered while the connection is down must not come back
/// when it is up again, while the instance still registered does.
#[tokio::test]
async fn unregistered_while_disconnected_is_not_resurrected() {
    let Proxied { server: _server, proxy, fw, observer, base, d } = Proxied::start().await;
    let (gone, kept) = (instance("api", "gone", 81), instance("api", "kept", 82));
    d.register(&gone).await.unwrap();
    d.register(&kept).await.unwrap();

    proxy.set_mode(ProxyMode::Blackhole);
    eventually(LIVENESS, "disconnected", || async { !fw.status().state.is_connected() }).await;
    // the delete cannot reach the server now: an error, and the delete goes on in the background
    let _ = within(LIVENESS, d.unregister("gone")).await;
    assert_eq!(d.registered_ids(), ["kept"]);
    proxy.set_mode(ProxyMode::Pass);

    registered_once(&observer, &fw, &format!("{base}/api/kept"), &kept).await;
    let gone_path = format!("{base}/api/gone");
    eventually(LIVENESS, "the unregistered instance is gone", || async {
        observer.exists(&gone_path).await.unwrap().is_none()
    })
    .await;
    fixtures::settle(&[&fw]).await;
    // and it stays gone: nothing re-creates it (expire the session too: no re-registration)
    expire_session(&fw).await.unwrap();
    registered_once(&observer, &fw, &format!("{base}/api/kept"), &kept).await;
    assert_eq!(observer.exists(&gone_path).await.unwrap(), None);
    d.close().await.unwrap();
}

/// CURATOR-175: a registration made while the server is down completes once it is up.
#[tokio::test]
async fn registered_while_the_server_is_down_completes_once_it_is_up() {
    let server = TestingServer::start().await.unwrap();
    let fw = fixtures::framework(server.connect_string()).await;
    let base = unique_root();
    let d = std::sync::Arc::new(ServiceDiscovery::<Value>::new(&fw, &base).unwrap());
    server.stop().await;
    eventually(LIVENESS, "disconnected", || async { !fw.status().state.is_connected() }).await;
    let i = instance("api", "late", 80);
    let register = tokio::spawn({
        let (d, i) = (d.clone(), i.clone());
        async move { d.register(&i).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!register.is_finished(), "cannot be registered while the server is down");
    server.restart().await.unwrap();
    let path = within(LIVENESS, register).await.unwrap().unwrap();
    let observer = fixtures::framework(server.connect_string()).await;
    registered_once(&observer, &fw, &path, &i).await;
    d.close().await.unwrap();
}

#[tokio::test]
async fn provider_strategies_filters_and_down_instances() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = unique_root();
    let d = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
    for (id, enabled) in [("a", true), ("b", true), ("c", true), ("off", false)] {
        d.register(&with(instance("web", id, 80), |i| {
            i.enabled = enabled;
        }))
        .await
        .unwrap();
    }
    let policy = DownInstancePolicy::new(Duration::from_millis(1500), 2);
    let d = &d;
    let provider = |strategy| async move {
        let p =
            d.provider("web").strategy(strategy).filter(|i| i.enabled).down_instance_policy(policy).build().unwrap();
        p.start().await.unwrap();
        p
    };
    let (rr, random, sticky) = (
        provider(ProviderStrategy::RoundRobin).await,
        provider(ProviderStrategy::Random).await,
        provider(ProviderStrategy::Sticky).await,
    );
    for p in [&rr, &random, &sticky] {
        eventually(LIVENESS, "the providers see three enabled instances", || async {
            p.get_all_instances().len() == 3
        })
        .await;
    }
    let ids =
        |p: &zk_recipes::ServiceProvider<Value>, n| (0..n).map(|_| p.get_instance().unwrap().id).collect::<Vec<_>>();
    let first = ids(&rr, 6);
    assert_eq!(first[..3].iter().collect::<BTreeSet<_>>().len(), 3, "round robin visits all: {first:?}");
    assert_eq!(first[..3], first[3..], "in turn");
    let picked: BTreeSet<String> = ids(&random, 200).into_iter().collect();
    assert_eq!(picked, BTreeSet::from(["a".into(), "b".into(), "c".into()]), "random reaches all, never the filtered");
    let held = ids(&sticky, 5);
    assert!(held.iter().all(|id| *id == held[0]), "sticky: {held:?}");

    // the sticky instance goes down after two errors: skipped by all, then back after the timeout
    let down = sticky.get_instance().unwrap();
    sticky.note_error(&down);
    assert_eq!(sticky.get_instance().unwrap().id, down.id, "one error is below the threshold");
    sticky.note_error(&down);
    let other = sticky.get_instance().unwrap();
    assert_ne!(other.id, down.id, "down: another one");
    assert!(ids(&sticky, 5).iter().all(|id| *id == other.id), "sticky to the new one");
    assert!(!sticky.get_all_instances().iter().any(|i| i.id == down.id));
    eventually(LIVENESS, "up again after the down timeout", || async {
        sticky.get_all_instances().iter().any(|i| i.id == down.id)
    })
    .await;

    // an instance that leaves is no longer picked
    d.unregister("a").await.unwrap();
    eventually(LIVENESS, "a left", || async { rr.get_all_instances().len() == 2 }).await;
    assert!(!ids(&rr, 4).contains(&"a".to_string()));
    for p in [&rr, &random, &sticky] {
        p.close().await.unwrap();
    }
    d.close().await.unwrap();
    let empty = provider(ProviderStrategy::RoundRobin).await;
    eventually(LIVENESS, "loaded", || async { empty.cache().is_initialized() }).await;
    assert_eq!(empty.get_instance(), None);
}

#[tokio::test]
async fn bad_input_is_typed_and_leaves_nothing() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let base = unique_root();
    assert!(matches!(ServiceDiscovery::<Value>::new(&fw, "no-slash"), Err(Error::InvalidPath { .. })));
    assert!(matches!(ServiceDiscovery::<Value>::new(&fw, "/"), Err(Error::InvalidPath { .. })));
    let d = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
    let ok = instance("svc", "1", 80);
    for bad in ["", "/", "a/b", ".", ".."] {
        let by_name = with(ok.clone(), |i| {
            i.name = bad.into();
        });
        let by_id = with(ok.clone(), |i| {
            i.id = bad.into();
        });
        assert!(matches!(d.register(&by_name).await, Err(Error::InvalidArgument { .. })), "{bad:?}");
        assert!(matches!(d.register(&by_id).await, Err(Error::InvalidArgument { .. })), "{bad:?}");
        assert!(matches!(d.query_for_instances(bad).await, Err(Error::InvalidArgument { .. })));
        assert!(matches!(d.query_for_instance("svc", bad).await, Err(Error::InvalidArgument { .. })));
        assert!(d.service_cache(bad).is_err() && d.provider(bad).build().is_err());
    }
    for port in [0, 65536, 100_000] {
        let built = ServiceInstance::<Value>::builder("svc").port(port).build();
        assert!(matches!(built, Err(Error::InvalidArgument { .. })), "{port}");
    }
    let zero = with(ok.clone(), |i| {
        i.port = Some(0);
    });
    assert!(matches!(d.register(&zero).await, Err(Error::InvalidArgument { .. })));
    // a payload that cannot be JSON
    let typed = ServiceDiscovery::<std::collections::HashMap<(u8, u8), u8>>::new(&fw, &base).unwrap();
    let not_json = ServiceInstance::builder("svc").payload([((1, 2), 3)].into()).build().unwrap();
    assert!(matches!(typed.register(&not_json).await, Err(Error::InvalidArgument { .. })));
    // another session's node with our id: not taken, and nothing of ours left
    other.create(&base, b"", CreateMode::Persistent).await.unwrap();
    other.create(&format!("{base}/svc"), b"", CreateMode::Persistent).await.unwrap();
    other.create(&format!("{base}/svc/1"), b"{}", CreateMode::Ephemeral).await.unwrap();
    let held = d.register(&ok).await;
    assert!(matches!(held, Err(Error::NodeHeldByOther { .. })), "{held:?}");
    assert_eq!(d.registered_ids(), Vec::<String>::new());
    other.delete(&format!("{base}/svc/1")).await.unwrap();
    fixtures::settle(&[&fw]).await;
    assert_eq!(other.children(&format!("{base}/svc")).await.unwrap(), Vec::<String>::new());
}

/// DYNAMIC_SEQUENTIAL: an ephemeral-sequential node under the service (protected:
/// `_c_<uuid>-ID<seq>`), listed and found by its id, updated, and deleted on unregister; a
/// second one with another id gets its own node.
#[tokio::test]
async fn dynamic_sequential_instances() {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let base = format!("/{}", fixtures::unique("disc-seq"));
    let d = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
    let mut a = ServiceInstance::<Value>::builder("svc").id("a").port(1).build().unwrap();
    a.service_type = ServiceType::DynamicSequential;
    let b = with(a.clone(), |i| {
        i.id = "b".into();
    });
    let path_a = d.register(&a).await.unwrap();
    let path_b = d.register(&b).await.unwrap();
    for (path, id) in [(&path_a, "a"), (&path_b, "b")] {
        let name = path.rsplit('/').next().unwrap();
        assert!(name.starts_with("_c_"), "{path}");
        let seq = name.rsplit_once(&format!("-{id}")).expect("named after the id").1;
        assert!(seq.len() == 10 && seq.bytes().all(|c| c.is_ascii_digit()), "{path}");
        let stat = fw.exists(path).await.unwrap().expect("the node");
        assert_eq!(stat.ephemeral_owner, fw.status().session_id, "ephemeral, ours");
    }
    let mut ids: Vec<String> = d.query_for_instances("svc").await.unwrap().into_iter().map(|i| i.id).collect();
    ids.sort();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(d.query_for_instance("svc", "a").await.unwrap().map(|i| i.id), Some("a".to_string()));
    let moved = with(a.clone(), |i| {
        i.port = Some(2);
    });
    d.update(&moved).unwrap();
    fixtures::eventually(fixtures::SETTLE_TIMEOUT, "updated", || async {
        d.query_for_instance("svc", "a").await.unwrap().is_some_and(|i| i.port == Some(2))
    })
    .await;
    d.unregister("a").await.unwrap();
    assert_eq!(fw.exists(&path_a).await.unwrap(), None);
    assert_eq!(d.query_for_instance("svc", "a").await.unwrap(), None);
    d.close().await.unwrap();
    assert_eq!(fw.exists(&path_b).await.unwrap(), None);
}

/// The README's flow: a provider started just after a registration returns loaded, so its
/// first `get_instance` finds the instance (Curator's `ServiceProvider.start()` does the same);
/// a second framework's provider too, with nothing polled.
#[tokio::test]
async fn a_provider_started_after_a_registration_returns_with_the_instance() {
    let cs = fixtures::shared_server().await;
    let (fw, other) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let base = unique_root();
    let registry = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
    let me = instance("orders", "orders-1", 8081);
    registry.register(&me).await.unwrap();
    for fw in [&fw, &other] {
        let provider = ServiceDiscovery::<Value>::new(fw, &base).unwrap().provider("orders").build().unwrap();
        provider.start().await.unwrap();
        assert!(provider.cache().is_initialized());
        assert_eq!(provider.get_instance().map(|i| i.id), Some("orders-1".to_string()));
        provider.close().await.unwrap();
    }
    registry.close().await.unwrap();
}

/// `base` changed by `change` (`ServiceInstance` is `#[non_exhaustive]`: no struct update).
fn with<T>(mut base: ServiceInstance<T>, change: impl FnOnce(&mut ServiceInstance<T>)) -> ServiceInstance<T> {
    change(&mut base);
    base
}
