//! A SharedCount watched by one task while others increment it with versioned sets
//! (`compare_and_set` from the last value known).
//!
//! `cargo run --example counter`

use futures_util::StreamExt;
use zk_recipes::{Framework, SharedCount};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let path = format!("/examples/counter/{}", std::process::id());
    let fw = Framework::connect(&connect).await?;
    let count = SharedCount::new(&fw, &path, 0)?;
    count.start().await?;
    let mut changes = Box::pin(count.changes());
    let mut writers = Vec::new();
    for _ in 0..4 {
        let (connect, path) = (connect.clone(), path.clone());
        writers.push(tokio::spawn(async move {
            let fw = Framework::connect(&connect).await?;
            let count = SharedCount::new(&fw, &path, 0)?;
            let mut known = count.get().await?;
            for _ in 0..5 {
                // a refusal returns the count that won: the next attempt starts from it
                known = loop {
                    match count.compare_and_set(&known, known.value + 1).await? {
                        Ok(written) => break written,
                        Err(current) => known = current,
                    }
                };
            }
            Ok::<_, zk_recipes::Error>(())
        }));
    }
    while let Some(change) = changes.next().await {
        let change = change?;
        println!("count is {} (version {})", change.value, change.version);
        if change.value == 20 {
            break;
        }
    }
    for w in writers {
        w.await??;
    }
    println!("20 versioned increments, none lost");
    fw.shutdown(std::time::Duration::from_secs(5)).await?;
    Ok(())
}
