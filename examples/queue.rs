//! A work queue: a producer puts 20 jobs (some in one multi-item node), three workers take
//! them safely (process, then complete), and one worker drops a job unprocessed: it goes to another
//! worker, and every job is completed exactly once.
//!
//! `cargo run --example queue`

use std::collections::BTreeSet;
use std::time::Duration;

use zk_recipes::{DistributedQueue, Framework};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let path = format!("/examples/queue/{}", std::process::id());
    let fw = Framework::connect(&connect).await?;
    let queue = DistributedQueue::new(&fw, &path)?;
    for i in 0..10 {
        queue.put(&format!("job-{i}").into_bytes()).await?;
    }
    let batch: Vec<Vec<u8>> = (10..20).map(|i| format!("job-{i}").into_bytes()).collect();
    queue.put_multi(&batch).await?;

    // a worker that takes a job and drops it before completing (as a dying one does): handed back
    let doomed = DistributedQueue::new(&Framework::connect(&connect).await?, &path)?;
    let abandoned = doomed.take_safe().await?;
    println!("a worker took {:?} and dropped it unprocessed", String::from_utf8_lossy(&abandoned.items()[0]));
    drop(abandoned);

    let mut workers = Vec::new();
    for w in 0..3 {
        let (connect, path) = (connect.clone(), path.clone());
        workers.push(tokio::spawn(async move {
            let fw = Framework::connect(&connect).await?;
            let queue = DistributedQueue::new(&fw, &path)?;
            let mut done = Vec::new();
            loop {
                let delivery = match queue.take_safe_timeout(Duration::from_millis(500)).await {
                    Ok(delivery) => delivery,
                    Err(zk_recipes::Error::Timeout { .. }) => break, // drained
                    Err(e) => return Err(e),
                };
                // process, then complete: a worker dying here hands the job to another one
                let items = delivery.complete().await?;
                done.extend(items.into_iter().map(|i| String::from_utf8_lossy(&i).into_owned()));
            }
            println!("worker {w} completed {} jobs", done.len());
            Ok::<_, zk_recipes::Error>(done)
        }));
    }
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await??);
    }
    let unique: BTreeSet<_> = all.iter().collect();
    assert_eq!((all.len(), unique.len()), (20, 20), "every job completed exactly once");
    println!("20 jobs completed exactly once");
    fw.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}
