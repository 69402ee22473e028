//! A count-down latch over two rounds: 8 workers count down (one of them twice: counted once),
//! the coordinator waits, then sets the next round. Then expirable semaphore permits: one
//! released by id from another session, one abandoned and reclaimed by a waiter after it
//! expires.
//!
//! `cargo run --example latch`

use std::time::Duration;

use zk_recipes::latch::CountDown;
use zk_recipes::{DistributedCountDownLatch, Framework, InterProcessSemaphoreV2};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let root = format!("/examples/latch/{}", std::process::id());
    let fw = Framework::connect(&connect).await?;

    let latch = DistributedCountDownLatch::new(&fw, &format!("{root}/shards"))?;
    for round in 1..=2 {
        assert!(latch.try_set_count(8).await?, "the previous round is open");
        let mut workers = Vec::new();
        for shard in 0..8 {
            let (connect, latch_path) = (connect.clone(), latch.path().to_string());
            workers.push(tokio::spawn(async move {
                let fw = Framework::connect(&connect).await?;
                let latch = DistributedCountDownLatch::new(&fw, &latch_path)?;
                let id = format!("shard-{shard}");
                let counted = latch.count_down(&id).await?;
                if shard == 0 {
                    // a replayed count-down (a worker that restarted) counts nothing
                    assert!(matches!(latch.count_down(&id).await?, CountDown::AlreadyCounted { .. }));
                }
                fw.shutdown(Duration::from_secs(5)).await?;
                Ok::<_, zk_recipes::Error>(counted)
            }));
        }
        latch.wait().await?;
        for w in workers {
            w.await??;
        }
        println!("round {round}: all 8 shards counted down (generation {:?})", latch.generation().await?);
    }

    let pool = InterProcessSemaphoreV2::new(&fw, &format!("{root}/pool"), 2)?;
    let handed_over = pool.acquire_with_expiry(Duration::from_secs(60)).await?;
    let abandoned = pool.acquire_with_expiry(Duration::from_secs(1)).await?;
    println!(
        "permits {} and {} (server TTL: {})",
        handed_over.permit_id(),
        abandoned.permit_id(),
        abandoned.server_ttl()
    );
    // another process releases the first by its id
    let other = Framework::connect(&connect).await?;
    InterProcessSemaphoreV2::new(&other, &format!("{root}/pool"), 2)?.release_permit(handed_over.permit_id()).await?;
    // the second is never released: a waiter takes its place once it has expired
    let first = pool.acquire().await?;
    let second = pool.acquire().await?;
    assert!(abandoned.is_expired());
    println!("the abandoned permit was reclaimed after its expiry; 2 of 2 leases held");
    zk_recipes::InterProcessSemaphoreV2::return_all([first, second]).await?;
    other.shutdown(Duration::from_secs(5)).await?;
    fw.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}
