//! A lock-guarded balance transfer kept in ZooKeeper data: four workers move money between
//! three accounts; each transfer reads under a lock and writes in a transaction guarded by
//! that lock (and by the versions read), so a worker that lost its lock — a pause, an expired
//! session, a lease run out — cannot write. The total never changes.
//!
//! `cargo run --example guarded_write`

use std::time::Duration;

use zk_recipes::CreateMode;
use zk_recipes::{Framework, InterProcessMutex, TimedHold};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn amount(data: &[u8]) -> Result<i64, BoxError> {
    Ok(std::str::from_utf8(data)?.parse()?)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let base = format!("/examples/guarded/{}", std::process::id());
    let fw = Framework::connect(&connect).await?;
    let accounts: Vec<String> = (0..3).map(|i| format!("{base}/account{i}")).collect();
    for account in &accounts {
        fw.create(account, b"100", CreateMode::Persistent).await?;
    }
    let mut workers = Vec::new();
    for w in 0..4usize {
        let (connect, base, accounts) = (connect.clone(), base.clone(), accounts.clone());
        workers.push(tokio::spawn(async move {
            let fw = Framework::connect(&connect).await?;
            let mutex = InterProcessMutex::new(&fw, &format!("{base}/lock"))?;
            for t in 0..5usize {
                let (from, to) = (&accounts[(w + t) % 3], &accounts[(w + t + 1) % 3]);
                // a hold that ends by itself if this worker wedges for 10 s
                let held = TimedHold::acquire(&mutex, Duration::from_secs(10)).await?;
                let ((a, sa), (b, sb)) = (fw.get_data(from).await?, fw.get_data(to).await?);
                let (a, b) = (amount(&a)?, amount(&b)?);
                fw.transaction()
                    .while_held(&held)
                    .set_data(from, (a - 7).to_string().as_bytes(), Some(sa.version))
                    .set_data(to, (b + 7).to_string().as_bytes(), Some(sb.version))
                    .commit()
                    .await?;
                println!("worker {w}: 7 from {from} to {to} (token {})", held.fencing_token());
                held.release().await?;
            }
            Ok::<_, BoxError>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let mut total = 0;
    for account in &accounts {
        total += amount(&fw.get_data(account).await?.0)?;
    }
    println!("total: {total}");
    assert_eq!(total, 300, "money is neither made nor lost");
    fw.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}
