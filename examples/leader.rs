//! Leader election with failover: three LeaderLatch replicas, the leader steps down, another
//! takes over with a higher token; then a LeaderSelector whose task is cancelled when its
//! leadership is interrupted.
//!
//! `cargo run --example leader`

use std::time::Duration;

use zk_recipes::{Framework, LeaderLatch, LeaderSelector, LeadershipEnd};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let mut replicas = Vec::new();
    for i in 0..3 {
        let fw = Framework::connect(&connect).await?; // each replica its own session
        let latch = LeaderLatch::new(&fw, "/examples/leader/latch", &format!("replica-{i}"))?;
        latch.start().await?;
        replicas.push((fw, latch));
    }
    let mut last_token = 0;
    for round in 0..3 {
        let (i, latch) = loop {
            if let Some((i, (_, l))) = replicas.iter().enumerate().find(|(_, (_, l))| l.has_leadership()) {
                break (i, l.clone());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let token = latch.leadership().fencing_token().unwrap_or_default();
        println!("round {round}: {} leads with token {token}", latch.id());
        assert!(token > last_token, "tokens increase across leaderships");
        last_token = token;
        latch.close().await?; // step down (or crash: its session would expire)
        replicas.remove(i);
    }

    let fw = Framework::connect(&connect).await?;
    let selector = LeaderSelector::new(&fw, "/examples/leader/selector", "worker", |ctx| async move {
        println!("selector: leading with token {}; working until cancelled", ctx.fencing_token());
        std::future::pending::<()>().await;
    })?;
    let mut ends = selector.leadership_ends();
    selector.start().await?;
    while !selector.has_leadership() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    selector.interrupt_leadership();
    ends.wait_for(|e| e.is_some()).await?;
    let end = *ends.borrow();
    println!("selector: leadership ended: {end:?}");
    assert_eq!(end, Some(LeadershipEnd::Interrupted));
    fw.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}
