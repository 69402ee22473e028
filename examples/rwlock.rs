//! Cache refresh: readers share a read lock while serving from a cache node; a writer takes
//! the write lock to refresh it, downgrades to read to verify, and releases.
//!
//! `cargo run --example rwlock`

use std::time::Duration;

use zk_recipes::CreateMode;
use zk_recipes::{Error, Framework, InterProcessReadWriteLock};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let fw = Framework::connect(&connect).await?;
    let cache = "/examples/rwlock/cache";
    match fw.create(cache, b"v1", CreateMode::Persistent).await {
        Ok(_) => {}
        Err(e) if e.is_conflict() => {} // there already (NodeExists)
        Err(e) => return Err(e.into()),
    }
    let mut readers = Vec::new();
    for r in 0..3 {
        let connect = connect.clone();
        readers.push(tokio::spawn(async move {
            let fw = Framework::connect(&connect).await?;
            let lock = InterProcessReadWriteLock::new(&fw, "/examples/rwlock/lock")?;
            for _ in 0..3 {
                let read = lock.read().await?;
                let (value, _) = fw.get_data(cache).await?;
                println!("reader {r} sees {}", String::from_utf8_lossy(&value));
                tokio::time::sleep(Duration::from_millis(20)).await;
                read.release().await?;
            }
            Ok::<_, Error>(())
        }));
    }
    let lock = InterProcessReadWriteLock::new(&fw, "/examples/rwlock/lock")?;
    let write = lock.write().await?;
    fw.set_data(cache, b"v2", None).await?;
    println!("writer refreshed the cache to v2 (token {})", write.fencing_token());
    // downgrade through the write guard: a read hold at the writer's place, granted at once
    // (a second `lock.read()` here would wait for our own write lock, as tokio's RwLock would)
    let read = write.downgrade().await?;
    let (value, _) = fw.get_data(cache).await?;
    println!("writer, downgraded to a reader, sees {}", String::from_utf8_lossy(&value));
    read.release().await?;
    for r in readers {
        r.await??;
    }
    fw.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}
