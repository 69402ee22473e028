//! The first three rows: 8 workers (each its own ZooKeeper session) sell the stock, kept in a
//! znode, with no lock (read, decide, write: the lost update), under an InterProcessMutex, and
//! with a DistributedAtomicLong compare-and-set.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use zk_recipes::{DistributedAtomicLong, Framework, InterProcessMutex};

use crate::{show_progress, Outcome, STOCK};

#[derive(Clone, Copy)]
pub enum Mode {
    NoLock,
    Mutex,
    Atomic,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::NoLock => "no lock",
            Mode::Mutex => "InterProcessMutex",
            Mode::Atomic => "DistributedAtomicLong",
        }
    }
}

pub async fn sell(workers: &[Framework], path: &str, mode: Mode) -> zk_recipes::Result<Outcome> {
    let stock = DistributedAtomicLong::new(&workers[0], &format!("{path}/stock"))?;
    stock.force_set(STOCK).await?;
    let sold = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let progress = tokio::spawn(show_progress(mode.name(), {
        let sold = sold.clone();
        move || sold.load(Ordering::Relaxed)
    }));
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
