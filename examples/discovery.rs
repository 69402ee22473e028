//! Service discovery in curator-x-discovery's format: two instances of `orders` register
//! (with a payload, as Spring Cloud Zookeeper writes it), a client lists them, follows them
//! through a provider (round robin, one noted as failing), and sees one leave.
//!
//! `cargo run --example discovery`

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use zk_recipes::discovery::DownInstancePolicy;
use zk_recipes::{Framework, ServiceDiscovery, ServiceInstance};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let base = format!("/examples/discovery/{}", std::process::id());

    // the service side: two instances, each kept registered while this process runs
    let service_fw = Framework::connect(&connect).await?;
    let registry = ServiceDiscovery::new(&service_fw, &base)?;
    for (id, port) in [("orders-1", 8081), ("orders-2", 8082)] {
        let payload = json!({
            "@class": "org.springframework.cloud.zookeeper.discovery.ZookeeperInstance",
            "id": id, "name": "orders", "metadata": {"zone": "eu-1"}
        });
        let instance = ServiceInstance::builder("orders")
            .id(id)
            .address("127.0.0.1")
            .port(port)
            .payload(payload)
            .uri_spec("{scheme}://{address}:{port}")
            .build()?;
        println!("registered {}", registry.register(&instance).await?);
    }

    // the client side
    let client_fw = Framework::connect(&connect).await?;
    let discovery = ServiceDiscovery::<serde_json::Value>::new(&client_fw, &base)?;
    println!("services: {:?}", discovery.query_for_names().await?);
    for instance in discovery.query_for_instances("orders").await? {
        println!("{} at {}", instance.id, instance.build_uri().unwrap_or_default());
    }
    let provider = discovery
        .provider("orders")
        .down_instance_policy(DownInstancePolicy::new(Duration::from_secs(10), 1))
        .build()?;
    // the provider's cache reports each new list of instances: wait (by watch) for both
    let mut changes = Box::pin(provider.cache().changes());
    provider.start().await?;
    while let Some(instances) = changes.next().await {
        if instances.len() == 2 {
            break;
        }
    }
    let picks: Vec<String> = (0..4).filter_map(|_| provider.get_instance()).map(|i| i.id).collect();
    println!("round robin: {picks:?}");
    let failing = discovery.query_for_instance("orders", "orders-1").await?.ok_or("orders-1 is missing")?;
    provider.note_error(&failing);
    let picks: Vec<String> = (0..2).filter_map(|_| provider.get_instance()).map(|i| i.id).collect();
    println!("with orders-1 down: {picks:?}");

    registry.unregister("orders-2").await?;
    while let Some(instances) = changes.next().await {
        if instances.len() == 1 {
            break;
        }
    }
    println!("after orders-2 left: {:?}", discovery.query_for_instances("orders").await?.len());
    provider.close().await?;
    registry.close().await?;
    client_fw.shutdown(Duration::from_secs(5)).await?;
    service_fw.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}
