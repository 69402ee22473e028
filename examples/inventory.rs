//! The classic: a stock of 5,000 items sold by 8 workers (each its own ZooKeeper session) at
//! once. First with no lock — read, decide, write — which oversells; then under an
//! InterProcessMutex, which sells exactly the stock; then with a DistributedAtomicLong
//! compare-and-set. Runs against `$ZK_CONNECT`, or an embedded ZooKeeper when unset.
//!
//! `cargo run --release --example inventory`

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_recipes::{DistributedAtomicLong, Framework, InterProcessMutex};

const STOCK: i64 = 5_000;
const WORKERS: usize = 8;

#[derive(Clone, Copy)]
enum Mode {
    NoLock,
    Mutex,
    Atomic,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::NoLock => "no lock",
            Mode::Mutex => "InterProcessMutex",
            Mode::Atomic => "DistributedAtomicLong",
        }
    }
}

struct Outcome {
    sold: u64,
    left: i64,
    elapsed: Duration,
    handoffs: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        workers.push(Framework::builder().connect_string(&connect).namespace("inventory-demo").connect().await?);
    }
    let run = format!("/run-{}", std::process::id());
    let mut rows = Vec::new();
    for mode in [Mode::NoLock, Mode::Mutex, Mode::Atomic] {
        let outcome = sell(&workers, &format!("{run}/{}", mode.name().replace(' ', "-")), mode).await?;
        rows.push((mode, outcome));
    }
    println!();
    println!("{:<22} {:>8} {:>10} {:>8} {:>9} {:>13}", "mode", "sold", "oversold", "left", "time", "hand-offs/s");
    for (mode, o) in &rows {
        let oversold = o.sold.saturating_sub(STOCK as u64);
        let per_s = o.handoffs as f64 / o.elapsed.as_secs_f64();
        println!(
            "{:<22} {:>8} {:>10} {:>8} {:>8.2}s {:>13.0}",
            mode.name(),
            o.sold,
            oversold,
            o.left,
            o.elapsed.as_secs_f64(),
            per_s
        );
    }
    let (_, locked) = &rows[1];
    let (_, atomic) = &rows[2];
    let exact = locked.sold == STOCK as u64 && locked.left == 0 && atomic.sold == STOCK as u64 && atomic.left == 0;
    println!("\n{}", if exact { "the lock and the counter sold exactly the stock" } else { "MISMATCH" });
    for w in &workers {
        w.close();
    }
    if exact {
        Ok(())
    } else {
        Err("a locked run did not sell exactly the stock".into())
    }
}

async fn sell(workers: &[Framework], path: &str, mode: Mode) -> zk_recipes::Result<Outcome> {
    let stock = DistributedAtomicLong::new(&workers[0], &format!("{path}/stock"))?;
    stock.force_set(STOCK).await?;
    let sold = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let progress = tokio::spawn(show_progress(mode.name(), sold.clone()));
    let mut tasks = Vec::new();
    for fw in workers {
        let (fw, path, sold) = (fw.clone(), path.to_string(), sold.clone());
        tasks.push(tokio::spawn(async move {
            let stock_path = format!("{path}/stock");
            match mode {
                Mode::NoLock => loop {
                    // read, decide, write: the classic lost update
                    let (data, _) = fw.get_data(&stock_path).await?;
                    let left = i64::from_be_bytes(data.as_slice().try_into().unwrap_or([0; 8]));
                    if left <= 0 {
                        return Ok::<_, zk_recipes::Error>(());
                    }
                    fw.set_data(&stock_path, &(left - 1).to_be_bytes(), None).await?;
                    sold.fetch_add(1, Ordering::Relaxed);
                },
                Mode::Mutex => {
                    let mutex = InterProcessMutex::new(&fw, &format!("{path}/lock"))?;
                    loop {
                        let guard = mutex.acquire().await?;
                        let (data, _) = fw.get_data(&stock_path).await?;
                        let left = i64::from_be_bytes(data.as_slice().try_into().unwrap_or([0; 8]));
                        if left <= 0 {
                            guard.release().await?;
                            return Ok(());
                        }
                        fw.set_data(&stock_path, &(left - 1).to_be_bytes(), None).await?;
                        sold.fetch_add(1, Ordering::Relaxed);
                        guard.release().await?;
                    }
                }
                Mode::Atomic => {
                    let counter = DistributedAtomicLong::new(&fw, &stock_path)?;
                    loop {
                        let left = counter.get().await?;
                        if left <= 0 {
                            counter.close().await?;
                            return Ok(());
                        }
                        if counter.compare_and_set(left, left - 1).await?.succeeded {
                            sold.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("a seller task panicked")?;
    }
    let elapsed = started.elapsed();
    progress.abort();
    let left = stock.get().await?;
    let sold = sold.load(Ordering::SeqCst);
    Ok(Outcome { sold, left, elapsed, handoffs: sold })
}

async fn show_progress(name: &'static str, sold: Arc<AtomicU64>) {
    let tty = std::io::stderr().is_terminal();
    loop {
        let n = sold.load(Ordering::Relaxed).min(STOCK as u64 * 2);
        let filled = (n * 30 / (STOCK as u64)).min(30) as usize;
        if tty {
            eprint!("\r{name:<22} [{}{}] {n:>5}/{STOCK}", "#".repeat(filled), " ".repeat(30 - filled));
            let _ = std::io::stderr().flush();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
