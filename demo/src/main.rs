//! The inventory demo: a stock of 5,000 items sold by 8 workers (each its own ZooKeeper
//! session) at once. With no lock — read, decide, write — it oversells; under an
//! InterProcessMutex, and with a DistributedAtomicLong compare-and-set, it sells exactly the
//! stock. Then the "NPC" rows: one holder of the mutex stops (SIGSTOP) inside its critical
//! section longer than its session timeout while the others go on; with the mutex alone its
//! stale write oversells, with the fencing token checked by the store it is refused.
//! With `DEMO_POSTGRES=1`, one more row keeps the stock in PostgreSQL, written through
//! `zk-recipes-fencing`: the database itself refuses the paused holder's write (a throwaway
//! server of the testing kit, or `DEMO_POSTGRES_URL`).
//! Runs against `$ZK_CONNECT`, or an embedded ZooKeeper when unset.
//!
//! `bash scripts/demo.sh`, or `cargo run --release -p zk-recipes-demo`

mod classic;
mod paused;
mod paused_rows;
mod pg_store;
mod store;

use std::io::{IsTerminal, Write};
use std::time::Duration;

use zk_recipes::Framework;

use crate::classic::Mode;
use crate::store::Store;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const STOCK: i64 = 5_000;
const WORKERS: usize = 8;
const NAMESPACE: &str = "inventory-demo";

struct Outcome {
    sold: u64,
    left: i64,
    elapsed: Duration,
    handoffs: u64,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, connect, namespace, lock_path] = args.as_slice() {
        if flag == paused::ARG {
            return paused::run(connect, namespace, lock_path).await;
        }
    }
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    // DEMO_POSTGRES=1: its database first, so that one that cannot start fails the demo at once
    let database = pg_store::Database::from_env().await?;
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        workers.push(Framework::builder().connect_string(&connect).namespace(NAMESPACE).connect().await?);
    }
    let run = format!("/run-{}", std::process::id());
    let mut rows = Vec::new();
    for mode in [Mode::NoLock, Mode::Mutex, Mode::Atomic] {
        let outcome = classic::sell(&workers, &format!("{run}/{}", mode.name().replace(' ', "-")), mode).await?;
        rows.push((mode.name(), outcome));
    }
    // the paused holder is the eighth worker: 7 of the frameworks, and the holder's own
    let others = &workers[1..];
    let (open, _, paused_open) = paused_rows::sell(
        others,
        &connect,
        NAMESPACE,
        &format!("{run}/paused"),
        "paused, mutex only",
        Store::memory(STOCK, false),
    )
    .await?;
    let (fenced, refused, paused_fenced) = paused_rows::sell(
        others,
        &connect,
        NAMESPACE,
        &format!("{run}/fenced"),
        "paused, fencing token",
        Store::memory(STOCK, true),
    )
    .await?;
    rows.push(("paused, mutex only", open));
    rows.push(("paused, fencing token", fenced));
    // DEMO_POSTGRES=1: the same with the stock in PostgreSQL, which checks the tokens
    let mut pauses = vec![paused_open, paused_fenced];
    let mut postgres = None;
    if let Some(database) = &database {
        let path = format!("{run}/postgres");
        let store = Store::Postgres(Box::new(database.store(&path, &paused_rows::lock_path(&path), STOCK).await?));
        let name = "paused, fencing token, PostgreSQL";
        let (outcome, refused, paused_pg) = paused_rows::sell(others, &connect, NAMESPACE, &path, name, store).await?;
        database.remove(&path, &paused_rows::lock_path(&path)).await?;
        rows.push((name, outcome));
        pauses.push(paused_pg);
        postgres = Some(refused);
    }
    print_table(&rows);
    let (open, fenced) = (&rows[3].1, &rows[4].1);
    println!(
        "\npaused: a holder stopped (SIGSTOP) inside its critical section for {},\n  \
         past its {} s session; the others took the lock and sold {}+ items meanwhile",
        seconds(&pauses),
        paused::SESSION_TIMEOUT.as_secs(),
        paused_rows::SOLD_DURING_PAUSE
    );
    println!("  mutex only:    its stale write was taken, and {} items were sold twice", oversold(open));
    println!("  fencing token: the store refused its stale write ({refused} refused), nothing oversold");
    if let Some(refused) = postgres {
        println!("  PostgreSQL:    the database refused its stale write ({refused} refused), nothing oversold");
    }
    for w in &workers {
        w.close();
    }
    let exact = |o: &Outcome| o.sold == STOCK as u64 && o.left == 0;
    let (locked, atomic) = (&rows[1].1, &rows[2].1);
    if !(exact(locked) && exact(atomic)) {
        return Err("a locked run did not sell exactly the stock".into());
    }
    if !(exact(fenced) && refused == 1) {
        return Err("the fenced store did not refuse exactly the paused holder's write".into());
    }
    if let Some(refused) = postgres {
        if !(exact(&rows[5].1) && refused == 1) {
            return Err("PostgreSQL did not refuse exactly the paused holder's write".into());
        }
    }
    if oversold(open) == 0 {
        return Err("the paused holder's stale write did not oversell: did its session outlive the pause?".into());
    }
    println!("\nthe lock and the counter sold exactly the stock; the fencing token kept the paused holder out");
    Ok(())
}

/// "1.6 s and 1.5 s", "1.6 s, 1.5 s and 1.4 s".
fn seconds(pauses: &[Duration]) -> String {
    let each: Vec<String> = pauses.iter().map(|p| format!("{:.1} s", p.as_secs_f64())).collect();
    match each.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => each.concat(),
    }
}

fn oversold(o: &Outcome) -> u64 {
    o.sold.saturating_sub(STOCK as u64)
}

fn print_table(rows: &[(&str, Outcome)]) {
    println!();
    let width = rows.iter().map(|(name, _)| name.len()).max().unwrap_or(0).max(22);
    println!("{:<width$} {:>8} {:>10} {:>8} {:>9} {:>13}", "mode", "sold", "oversold", "left", "time", "hand-offs/s");
    for (name, o) in rows {
        let per_s = o.handoffs as f64 / o.elapsed.as_secs_f64();
        let time = o.elapsed.as_secs_f64();
        println!("{name:<width$} {:>8} {:>10} {:>8} {time:>8.2}s {per_s:>13.0}", o.sold, oversold(o), o.left);
    }
}

/// A progress bar on stderr (when it is a terminal) with the count `sold` reads.
async fn show_progress(name: &'static str, sold: impl Fn() -> u64) {
    let tty = std::io::stderr().is_terminal();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let n = sold().min(STOCK as u64 * 2);
        let filled = (n * 30 / (STOCK as u64)).min(30) as usize;
        if tty {
            eprint!("\r{name:<22} [{}{}] {n:>5}/{STOCK}", "#".repeat(filled), " ".repeat(30 - filled));
            let _ = std::io::stderr().flush();
        }
    }
}
