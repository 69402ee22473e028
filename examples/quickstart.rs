//! The shortest correct use of a lock: acquire, watch for loss, fence writes with the token,
//! release. Runs against `$ZK_CONNECT`, or an embedded ZooKeeper server when it is unset.
//!
//! `cargo run --example quickstart`

use std::time::Duration;

use zk_recipes::{Framework, InterProcessMutex};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An embedded server unless ZK_CONNECT points at an ensemble.
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;

    let fw = Framework::builder().connect_string(&connect).session_timeout(Duration::from_secs(10)).connect().await?;
    let mutex = InterProcessMutex::new(&fw, "/quickstart/lock")?;

    // Two workers of this process contend; each one holds the lock in turn.
    let mut workers = Vec::new();
    for id in 0..2 {
        let mutex = mutex.clone();
        workers.push(tokio::spawn(async move {
            let guard = mutex.acquire().await?;
            println!("worker {id} holds {} with fencing token {}", guard.path(), guard.fencing_token());
            tokio::select! {
                reason = guard.lost() => println!("worker {id} lost the lock: {reason}; stop writing"),
                _ = tokio::time::sleep(Duration::from_millis(300)) => println!("worker {id} done"),
            }
            guard.release().await
        }));
    }
    for w in workers {
        w.await??;
    }
    println!("participants left: {:?}", mutex.participants().await?);
    fw.shutdown(Duration::from_secs(5)).await?;
    Ok(())
}
