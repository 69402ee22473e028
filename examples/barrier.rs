//! Double-barrier rounds: 5 members start each round together and finish it together.
//!
//! `cargo run --example barrier`

use std::time::Duration;

use zk_recipes::{DistributedDoubleBarrier, Framework};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let run = std::process::id();
    let mut members = Vec::new();
    for m in 0..5u64 {
        let connect = connect.clone();
        members.push(tokio::spawn(async move {
            let fw = Framework::connect(&connect).await?;
            for round in 0..3 {
                let barrier = DistributedDoubleBarrier::new(&fw, &format!("/examples/barrier/{run}/round-{round}"), 5)?;
                barrier.enter().await?;
                println!("member {m} in round {round}");
                tokio::time::sleep(Duration::from_millis(10 * m)).await; // uneven work
                barrier.leave().await?;
            }
            Ok::<_, zk_recipes::Error>(())
        }));
    }
    for m in members {
        m.await??;
    }
    println!("all 5 members finished 3 rounds in lockstep");
    Ok(())
}
