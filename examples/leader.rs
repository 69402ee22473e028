//! Leader election with failover: three LeaderLatch replicas, the leader steps down, another
//! takes over with a higher token; then a LeaderSelector whose task is cancelled when its
//! leadership is interrupted.
//!
//! `cargo run --example leader`

use std::time::Duration;

use zk_recipes::leader::LeadershipEnd;
use zk_recipes::{Framework, LeaderLatch, LeaderSelector};

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
        // wait for whichever replica is elected: no polling, each latch's own future
        let elected = replicas.iter().map(|(_, l)| Box::pin(l.await_leadership()));
        let (elected, i, _) = futures_util::future::select_all(elected).await;
        let leadership = elected?; // the leadership gained, with its own token
        let latch = replicas[i].1.clone();
        let token = leadership.fencing_token();
        println!("round {round}: {} leads with token {token}", latch.id());
        assert!(token > last_token, "tokens increase across leaderships");
        last_token = token;
        latch.close().await?; // step down (or crash: its session would expire)
        println!("round {round}: leadership ended: {}", leadership.lost().await);
        replicas.remove(i);
    }

    let fw = Framework::connect(&connect).await?;
    // the task tells main when it leads (a channel, not a polled flag)
    let (leading_tx, mut leading) = tokio::sync::mpsc::unbounded_channel();
    let selector = LeaderSelector::new(&fw, "/examples/leader/selector", "worker", move |ctx| {
        let leading_tx = leading_tx.clone();
        async move {
            println!("selector: leading with token {}; working until cancelled", ctx.fencing_token());
            let _ = leading_tx.send(ctx.fencing_token());
            std::future::pending::<()>().await;
        }
    })?;
    let mut ends = selector.leadership_ends();
    selector.start().await?;
    let token = leading.recv().await.ok_or("the selector's task never ran")?;
    assert!(selector.has_leadership() && selector.fencing_token() == Some(token));
    selector.interrupt_leadership();
    ends.wait_for(|e| e.is_some()).await?;
    let end = *ends.borrow();
    println!("selector: leadership ended: {end:?}");
    assert_eq!(end, Some(LeadershipEnd::Interrupted));
    fw.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}
