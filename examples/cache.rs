//! A tree cache: loads a small tree, follows a few changes made by another client (a write, a
//! node deleted and re-created, a new child), printing each event.
//!
//! `cargo run --example cache`

use futures_util::StreamExt;

use zk_recipes::CreateMode;
use zk_recipes::{Cache, CacheEvent, Framework};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let root = format!("/examples/cache/{}", std::process::id());
    let fw = Framework::connect(&connect).await?;
    fw.create(&root, b"config", CreateMode::Persistent).await?;
    fw.create(&format!("{root}/db"), b"primary=a", CreateMode::Persistent).await?;

    let cache = Cache::tree(&fw, &root).build()?;
    let mut events = Box::pin(cache.events());
    cache.start().await?;
    let writer = tokio::spawn({
        let (connect, root) = (connect.clone(), root.clone());
        let mut version = cache.version();
        async move {
            let fw = Framework::connect(&connect).await?;
            // wait for the initial load (two nodes) before changing anything
            version.wait_for(|v| *v >= 2).await.ok();
            fw.set_data(&format!("{root}/db"), b"primary=b", None).await?;
            fw.delete(&format!("{root}/db")).await?;
            fw.create(&format!("{root}/db"), b"primary=b", CreateMode::Persistent).await?;
            fw.create(&format!("{root}/cache"), b"ttl=60", CreateMode::Persistent).await?;
            Ok::<_, zk_recipes::Error>(())
        }
    });
    while let Some(event) = events.next().await {
        match &event {
            CacheEvent::Created(n) => println!("created {} = {:?}", n.path, text(&n.data)),
            CacheEvent::Changed { old, new } => {
                println!("changed {}: {:?} -> {:?}", new.path, text(&old.data), text(&new.data))
            }
            CacheEvent::Deleted(n) => println!("deleted {}", n.path),
            CacheEvent::Initialized => println!("initialized with {} nodes", cache.len()),
            other => println!("{other:?}"),
        }
        if matches!(&event, CacheEvent::Created(n) if n.path.ends_with("/cache")) {
            break;
        }
    }
    writer.await??;
    println!("children of {root}: {:?}", cache.child_names(&root));
    cache.close().await?;
    fw.shutdown(std::time::Duration::from_secs(5)).await?;
    Ok(())
}

fn text(data: &Option<Vec<u8>>) -> String {
    data.as_deref().map(|d| String::from_utf8_lossy(d).into_owned()).unwrap_or_default()
}
