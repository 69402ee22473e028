//! curator-x-discovery 5.4 (in the peer) and our `ServiceDiscovery` on one registry: Curator
//! registers, we discover every field and the payload; we register, Curator parses our JSON
//! into its `ServiceInstance` and writes back the same JSON (every field equal); a Curator
//! `ServiceCache` follows our register, update and unregister.

use std::time::Duration;

use serde_json::{json, Value};
use zk_recipes::discovery::ServiceType;
use zk_recipes::discovery::UriSpec;
use zk_recipes::{ServiceDiscovery, ServiceInstance};
use zk_recipes_testing::fixtures::{self, eventually};

const WAIT: Duration = Duration::from_secs(20);

fn parse(json: &str) -> ServiceInstance<Value> {
    ServiceInstance::from_json("(from Curator)", json.as_bytes()).unwrap()
}

/// Our JSON for `instance` as Curator 5.4 writes it: the same bytes without the trailing
/// `enabled` (5.4's serializer leaves it out; newer Curator writes it; both read either).
fn as_curator_5_4(instance: &ServiceInstance<Value>) -> String {
    let ours = String::from_utf8(instance.to_json().unwrap()).unwrap();
    let tail = format!(",\"enabled\":{}}}", instance.enabled);
    assert!(ours.ends_with(&tail), "{ours}");
    format!("{}}}", &ours[..ours.len() - tail.len()])
}

#[tokio::test]
async fn curator_registers_we_discover_every_field() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let base = format!("/{}/services", fixtures::unique("interop-discovery"));
    let session = peer.connect("disc-java-1", &cs).await.unwrap();
    peer.discovery_start("disc-java-1", "d", &base).await.unwrap();
    // a payload shaped as Spring Cloud Zookeeper's (a map here: the peer has no Spring classes)
    let spring = r#"{"id":"app-1","name":"orders","metadata":{"zone":"eu-1","weights":[1,2.5]},"z":null}"#;
    peer.discovery_register("disc-java-1", "d", "orders", "j1", "10.0.0.7", 8080, Some(8443), Some(spring))
        .await
        .unwrap();
    peer.discovery_register("disc-java-1", "d", "billing", "j2", "10.0.0.8", 9090, None, None).await.unwrap();

    let fw = fixtures::framework(&cs).await;
    let ours = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
    assert_eq!(ours.query_for_names().await.unwrap(), ["billing", "orders"]);
    let found = ours.query_for_instances("orders").await.unwrap();
    assert_eq!(found.len(), 1);
    let j1 = &found[0];
    assert_eq!((j1.name.as_str(), j1.id.as_str(), j1.address.as_deref()), ("orders", "j1", Some("10.0.0.7")));
    assert_eq!((j1.port, j1.ssl_port), (Some(8080), Some(8443)));
    assert_eq!(j1.service_type, ServiceType::Dynamic);
    assert!(j1.enabled);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert!((now - j1.registration_time_utc).abs() < 600_000, "{}", j1.registration_time_utc);
    assert_eq!(j1.uri_spec, Some(UriSpec::parse("{scheme}://{address}:{port}")));
    assert_eq!(j1.build_uri().as_deref(), Some("https://10.0.0.7:8080"));
    // the payload as Curator wrote it: its @class first, then the fields in their order
    let want: Value =
        serde_json::from_str(&spring.replacen('{', r#"{"@class":"java.util.LinkedHashMap","#, 1)).unwrap();
    assert_eq!(j1.payload.as_ref(), Some(&want));
    // what Curator wrote is what it says it wrote, and what we would write for that instance
    let (raw, stat) = fw.get_data(&format!("{base}/orders/j1")).await.unwrap();
    assert_eq!(stat.ephemeral_owner, session, "DYNAMIC: an ephemeral node of Curator's session");
    assert_eq!(
        String::from_utf8(raw.clone()).unwrap(),
        peer.discovery_instances("disc-java-1", "d", "orders").await.unwrap()[0]
    );
    assert_eq!(as_curator_5_4(j1).into_bytes(), raw, "our JSON for it is byte for byte Curator's");
    let j2 = ours.query_for_instance("billing", "j2").await.unwrap().unwrap();
    assert_eq!((j2.ssl_port, j2.payload.clone()), (None, None));

    peer.discovery_unregister("disc-java-1", "d", "orders", "j1").await.unwrap();
    assert_eq!(ours.query_for_instance("orders", "j1").await.unwrap(), None);
    peer.discovery_close("disc-java-1", "d").await.unwrap();
    assert_eq!(ours.query_for_instances("billing").await.unwrap(), vec![]);
    peer.close("disc-java-1").await.unwrap();
}

#[tokio::test]
async fn we_register_curator_parses_every_field() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let base = format!("/{}/services", fixtures::unique("interop-discovery"));
    let fw = fixtures::framework(&cs).await;
    let ours = ServiceDiscovery::<Value>::new(&fw, &base).unwrap();
    let typed = ServiceInstance::builder("orders")
        .id("r1")
        .address("10.1.0.1")
        .port(8080)
        .ssl_port(8443)
        .uri_spec("{scheme}://{address}:{ssl-port}/v1")
        .payload(json!({"@class": "java.util.LinkedHashMap", "zone": "a", "weights": [1, 2.5], "tags": {"x": null}}))
        .build()
        .unwrap();
    let disabled = with(typed.clone(), |i| {
        i.id = "r2".into();
        i.enabled = false;
        i.payload = None;
        i.ssl_port = None;
    });
    let bare = with(typed.clone(), |i| {
        i.id = "r3".into();
        i.payload = Some(json!({"zone": "b"}));
    });
    for i in [&typed, &disabled, &bare] {
        ours.register(i).await.unwrap();
    }
    peer.connect("disc-java-2", &cs).await.unwrap();
    peer.discovery_start("disc-java-2", "d", &base).await.unwrap();
    assert_eq!(peer.discovery_names("disc-java-2", "d").await.unwrap(), ["orders"]);
    let curator = peer.discovery_instances("disc-java-2", "d", "orders").await.unwrap();
    assert_eq!(curator.len(), 3, "{curator:?}");
    // Curator read each into its ServiceInstance and wrote it back: the same JSON, every field
    assert_eq!(curator[0], as_curator_5_4(&typed), "r1");
    assert_eq!(curator[1], as_curator_5_4(&disabled), "r2: nulls");
    // a payload without @class is read by Curator as a map, and written back with its @class
    let r3 = parse(&curator[2]);
    assert_eq!(r3.payload, Some(json!({"@class": "java.util.LinkedHashMap", "zone": "b"})));
    assert_eq!(
        with(r3, |i| {
            i.payload = bare.payload.clone();
            i.enabled = bare.enabled;
        }),
        bare
    );

    // a Curator ServiceCache follows our registrations
    peer.discovery_cache_start("disc-java-2", "d", "c", "orders").await.unwrap();
    let cache_ids = || async {
        let list = peer.discovery_cache_instances("disc-java-2", "c").await.unwrap();
        list.iter().map(|j| parse(j).id).collect::<Vec<_>>()
    };
    eventually(WAIT, "Curator's cache sees our three", || async { cache_ids().await == ["r1", "r2", "r3"] }).await;
    ours.unregister("r2").await.unwrap();
    eventually(WAIT, "Curator's cache sees r2 leave", || async { cache_ids().await == ["r1", "r3"] }).await;
    let r4 = with(bare.clone(), |i| {
        i.id = "r4".into();
    });
    ours.register(&r4).await.unwrap();
    eventually(WAIT, "Curator's cache sees r4 come", || async { cache_ids().await == ["r1", "r3", "r4"] }).await;
    // a DYNAMIC_SEQUENTIAL instance (node `_c_<uuid>-r5<seq>`) is read by Curator too
    let r5 = with(bare.clone(), |i| {
        i.id = "r5".into();
        i.service_type = ServiceType::DynamicSequential;
    });
    ours.register(&r5).await.unwrap();
    let sorted_ids = || async {
        let mut ids = cache_ids().await;
        ids.sort();
        ids
    };
    eventually(WAIT, "Curator's cache sees the sequential r5", || async {
        sorted_ids().await == ["r1", "r3", "r4", "r5"]
    })
    .await;
    ours.unregister("r5").await.unwrap();
    eventually(WAIT, "Curator's cache sees r5 leave", || async { sorted_ids().await == ["r1", "r3", "r4"] }).await;
    let moved = with(typed.clone(), |i| {
        i.port = Some(9999);
    });
    ours.update(&moved).unwrap();
    eventually(WAIT, "Curator's cache sees r1's update", || async {
        let list = peer.discovery_cache_instances("disc-java-2", "c").await.unwrap();
        list.first() == Some(&as_curator_5_4(&moved))
    })
    .await;
    ours.close().await.unwrap();
    eventually(WAIT, "Curator's cache sees everyone gone", || async { cache_ids().await.is_empty() }).await;
    peer.discovery_close("disc-java-2", "c").await.unwrap();
    peer.discovery_close("disc-java-2", "d").await.unwrap();
    peer.close("disc-java-2").await.unwrap();
}

/// `base` changed by `change` (`ServiceInstance` is `#[non_exhaustive]`: no struct update).
fn with<T>(mut base: ServiceInstance<T>, change: impl FnOnce(&mut ServiceInstance<T>)) -> ServiceInstance<T> {
    change(&mut base);
    base
}
