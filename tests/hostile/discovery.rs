//! Service discovery beside corrupt instances. Rule: a node under a service whose data is not
//! a service instance (invalid JSON, JSON of another shape, empty, 1 MB of bytes, non-UTF-8)
//! is skipped by listings, caches and providers (logged at WARN) and is
//! [`Error::CorruptData`] when asked for by id.

use serde_json::Value;
use zk_recipes::{Error, ServiceDiscovery, ServiceInstance};

use crate::support::{self, junk_data, junk_name, live, plant};

/// Property: 3 registered instances (one process each) beside random corrupt instance nodes
/// (re-created meanwhile): listings, a cache and a provider see exactly the 3, asking for a
/// corrupt one by id is a typed error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_skips_corrupt_instances() {
    let mut rng = support::rng("discovery");
    let base = support::base("discovery");
    let fws = [support::framework().await, support::framework().await, support::framework().await];
    let mut registries = Vec::new();
    for (i, fw) in fws.iter().enumerate() {
        let d = ServiceDiscovery::<Value>::new(fw, &base).unwrap();
        let instance = ServiceInstance::builder("svc").id(format!("i{i}")).address("10.0.0.1").port(8000 + i as u32);
        d.register(&instance.build().unwrap()).await.unwrap();
        registries.push(d);
    }
    let mut junk = Vec::new();
    for _ in 0..6 {
        let name = junk_name(&mut rng, "i");
        let mut data = junk_data(&mut rng);
        if serde_json::from_slice::<ServiceInstance<Value>>(&data).is_ok() {
            data = b"{".to_vec();
        }
        plant(&fws[0], &format!("{base}/svc"), &name, &data, rng.bool()).await;
        junk.push(name);
    }
    // JSON that is an instance of another shape: a truncated object, a number for a string
    let lying = br#"{"name":"svc","id":"liar","address":7,"port":"x","registrationTimeUTC":"now"}"#;
    plant(&fws[0], &format!("{base}/svc"), "liar", lying, false).await;
    junk.push("liar".into());
    // asked for by id, a corrupt instance is a typed error (before the churn may delete it)
    let reader = &registries[2];
    for id in &junk {
        let got = reader.query_for_instance("svc", id).await;
        assert!(matches!(got, Err(Error::CorruptData { .. })), "{id:?}: {got:?}");
    }
    let churn = support::churn(&fws[1], &format!("{base}/svc"), junk.clone(), rng.u64(..));
    let ids = |mut v: Vec<ServiceInstance<Value>>| {
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v.into_iter().map(|i| i.id).collect::<Vec<_>>()
    };
    for _ in 0..5 {
        assert_eq!(ids(reader.query_for_instances("svc").await.unwrap()), ["i0", "i1", "i2"], "junk {junk:?}");
    }
    let cache = reader.service_cache("svc").unwrap();
    live("service cache start", cache.start()).await.unwrap();
    let provider = reader.provider("svc").build().unwrap();
    live("provider start", provider.start()).await.unwrap();
    support::stop_churn(churn).await;
    live("the caches see the 3 real instances", async {
        // (a provider's start does not wait for its cache's initial load either)
        while ids(cache.instances()) != ["i0", "i1", "i2"] || ids(provider.get_all_instances()) != ["i0", "i1", "i2"] {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    for _ in 0..10 {
        let got = provider.get_instance().expect("a real instance");
        assert!(["i0", "i1", "i2"].contains(&got.id.as_str()), "{got:?}");
    }
    assert!(reader.query_for_names().await.unwrap().contains(&"svc".to_string()));
    provider.close().await.unwrap();
    cache.close().await.unwrap();
    for d in registries {
        d.close().await.unwrap();
    }
    for fw in fws {
        fw.close();
    }
}
