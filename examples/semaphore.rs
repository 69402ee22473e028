//! Rate-limit a pool of workers: 8 workers, at most 3 at a time across all processes, with an
//! InterProcessSemaphoreV2.
//!
//! `cargo run --example semaphore`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::{Framework, InterProcessSemaphoreV2};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let busy = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for w in 0..8 {
        let (connect, busy, peak) = (connect.clone(), busy.clone(), peak.clone());
        workers.push(tokio::spawn(async move {
            let fw = Framework::connect(&connect).await?;
            let pool = InterProcessSemaphoreV2::new(&fw, "/examples/semaphore/render-pool", 3)?;
            for job in 0..3 {
                let lease = pool.acquire().await?;
                let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                println!("worker {w} job {job}: {now} busy");
                tokio::time::sleep(Duration::from_millis(30)).await;
                busy.fetch_sub(1, Ordering::SeqCst);
                lease.release().await?;
            }
            fw.shutdown(Duration::from_secs(5)).await?;
            Ok::<_, zk_recipes::Error>(())
        }));
    }
    for w in workers {
        w.await??;
    }
    let peak = peak.load(Ordering::SeqCst);
    println!("at most {peak} workers were busy at once (limit 3)");
    assert!(peak <= 3);
    Ok(())
}
