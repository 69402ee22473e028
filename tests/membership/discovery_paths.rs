//! `ServiceDiscovery::with_path_constructor` (Curator's `DiscoveryPathConstructor`,
//! CURATOR-457) against real ZooKeeper: a service registered where the constructor says is
//! found there by queries, a cache and a provider using the same constructor; the default
//! layout is unchanged; a bad path is a typed error.

use serde_json::Value;
use zk_recipes::discovery::DiscoveryPathConstructor;
use zk_recipes::{Error, ServiceDiscovery, ServiceInstance};
use zk_recipes_testing::fixtures::{self, eventually};

use crate::support::{unique_root, LIVENESS};

/// `ROOT/<name>/instances`; `bad` answers a path with an empty segment.
struct Nested {
    root: String,
}

impl DiscoveryPathConstructor for Nested {
    fn base_path(&self) -> String {
        self.root.clone()
    }

    fn path_for_instances(&self, name: &str) -> String {
        if name == "bad" {
            return format!("{}//bad", self.root);
        }
        format!("{}/{name}/instances", self.root)
    }
}

fn instance(name: &str, id: &str) -> ServiceInstance<Value> {
    ServiceInstance::builder(name).id(id).address("10.0.0.1").port(8080).build().unwrap()
}

#[tokio::test]
async fn a_service_lives_where_the_constructor_says() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let observer = fixtures::framework(&cs).await;
    let root = unique_root();
    let nested = || Nested { root: root.clone() };
    let d = ServiceDiscovery::<Value>::with_path_constructor(&fw, nested()).unwrap();
    let reader = ServiceDiscovery::<Value>::with_path_constructor(&observer, nested()).unwrap();
    assert_eq!(d.base(), root);

    let a = instance("orders", "a");
    assert_eq!(d.register(&a).await.unwrap(), format!("{root}/orders/instances/a"));
    assert_eq!(d.instance_path("orders", "a").unwrap(), format!("{root}/orders/instances/a"));
    assert!(observer.exists(&format!("{root}/orders/instances/a")).await.unwrap().is_some());
    assert!(observer.exists(&format!("{root}/orders/a")).await.unwrap().is_none(), "not the default layout");

    // another process with the same constructor finds it: query, cache, provider
    assert_eq!(reader.query_for_instances("orders").await.unwrap(), vec![a.clone()]);
    assert_eq!(reader.query_for_instance("orders", "a").await.unwrap(), Some(a.clone()));
    assert_eq!(reader.query_for_names().await.unwrap(), ["orders"]);
    let cache = reader.service_cache("orders").unwrap();
    assert_eq!(cache.path(), format!("{root}/orders/instances"));
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();
    assert_eq!(cache.instances(), vec![a.clone()]);
    let provider = reader.provider("orders").build().unwrap();
    provider.start().await.unwrap();
    eventually(LIVENESS, "the provider sees the instance", || async { provider.get_instance().is_some() }).await;
    assert_eq!(provider.get_instance(), Some(a.clone()));

    // a registry with the default layout does not see it where the default would put it
    let default = ServiceDiscovery::<Value>::new(&observer, &root).unwrap();
    assert!(default.query_for_instances("orders").await.unwrap().is_empty());

    // a bad path from the constructor is a typed error, never a panic
    assert!(matches!(d.register(&instance("bad", "x")).await, Err(Error::InvalidPath { .. })));
    assert!(matches!(d.service_cache("bad"), Err(Error::InvalidPath { .. })));
    assert!(matches!(d.provider("bad").build(), Err(Error::InvalidPath { .. })));
    struct RootBase;
    impl DiscoveryPathConstructor for RootBase {
        fn base_path(&self) -> String {
            "/".into()
        }
        fn path_for_instances(&self, name: &str) -> String {
            format!("/{name}")
        }
    }
    assert!(matches!(ServiceDiscovery::<Value>::with_path_constructor(&fw, RootBase), Err(Error::InvalidPath { .. })));

    provider.close().await.unwrap();
    cache.close().await.unwrap();
    d.close().await.unwrap();
    assert!(reader.query_for_instances("orders").await.unwrap().is_empty());
}

#[tokio::test]
async fn the_default_layout_is_unchanged() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = unique_root();
    let d = ServiceDiscovery::<Value>::new(&fw, &root).unwrap();
    let a = instance("orders", "a");
    assert_eq!(d.register(&a).await.unwrap(), format!("{root}/orders/a"));
    assert_eq!(d.service_cache("orders").unwrap().path(), format!("{root}/orders"));
    assert_eq!(d.query_for_instances("orders").await.unwrap(), vec![a]);
    d.close().await.unwrap();
}
