//! Scheduled jobs at most once across the fleet: three replicas run the same schedule (every
//! 2 s); at each tick exactly one of them runs the job and the others skip it. Then the plain
//! ShedLock-compatible lock, with a keep-alive for a job longer than `at_most_for`.
//!
//! `cargo run --example scheduled`

use std::time::Duration;

use futures_util::StreamExt;
use zk_recipes::scheduled::TickOutcome;
use zk_recipes::{Framework, Scheduled, ShedLock};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let mut replicas = Vec::new();
    for i in 0..3 {
        let fw = Framework::connect(&connect).await?; // each replica its own session
        let job = Scheduled::new(&fw, "examples-report")
            .every(Duration::from_secs(2))
            .at_most_for(Duration::from_secs(30))
            .start(move |ctx| async move {
                println!("replica-{i}: running the tick {:?} (fencing token {})", ctx.tick, ctx.fencing_token);
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, std::io::Error>(())
            })
            .await?;
        replicas.push((fw, job));
    }
    // three ticks, as every replica saw them
    let streams = replicas.iter().map(|(_, job)| job.events().take(3)).collect::<Vec<_>>();
    let mut all = futures_util::stream::select_all(streams.into_iter().map(Box::pin));
    let mut ran = 0;
    while let Some(outcome) = all.next().await {
        match outcome {
            TickOutcome::Ran { .. } => ran += 1,
            TickOutcome::Skipped { .. } => {}
            other => println!("unexpected: {other:?}"),
        }
    }
    println!("{ran} runs over 3 ticks and 3 replicas");
    for (fw, job) in &replicas {
        job.close().await?;
        fw.close();
    }

    // the lock on its own: a job longer than at_most_for, kept alive
    let fw = Framework::connect(&connect).await?;
    let locks = ShedLock::new(&fw);
    if let Some(guard) = locks.try_lock("examples-export", Duration::from_secs(1), Duration::ZERO).await? {
        guard.keep_alive();
        tokio::select! {
            reason = guard.lost() => println!("export cancelled: {reason}"),
            _ = tokio::time::sleep(Duration::from_secs(3)) => println!("export done, still held"),
        }
        guard.unlock().await?;
    }
    println!("stored: {:?}", locks.locked_until("examples-export").await?);
    fw.close();
    Ok(())
}
