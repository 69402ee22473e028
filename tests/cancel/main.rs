//! The cancellation fuzzer (issue 35): every kind of acquire/wait future of the recipes —
//! locks, semaphores, both sides of the read-write lock, leader latch, barriers, count-down
//! latch, queue take, counter — dropped at random points (seeded) while the connection is cut
//! and the session expired under it. Afterwards, on a real server: no node of the fuzzed
//! framework is left (no orphan holder, no waiter in any lock's or queue's line), no
//! background delete is pending, and the runtime has no more live tasks than before the first
//! round.
//!
//! Bounded: `CANCEL_SECS` (default 75) or `CANCEL_ROUNDS` (default 300) batches of three rounds, whichever comes
//! first; `CANCEL_SEED` (default 35) picks the kinds, the drop points and the faults. The
//! figures are printed (`--nocapture`).

mod kinds;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kinds::{Kind, KINDS};
use zk_recipes_testing::{fixtures, TcpProxy, TestingServer};

/// Rounds run at once.
const PARALLEL: usize = 3;
/// How long the end state may take to settle (background deletes, expired sessions).
const SETTLE: Duration = Duration::from_secs(20);

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// What the rounds did, per kind: (rounds, waits finished before their drop).
type Figures = BTreeMap<Kind, (u64, u64)>;

#[test]
fn dropped_waits_leave_nothing_behind_under_faults() {
    // The server and the proxy on a runtime of their own: the task count is the library's.
    let kit = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = kit.block_on(TestingServer::start()).expect("server");
    let cs = server.connect_string().to_string();
    let proxy = kit.block_on(async { TcpProxy::start(&cs).await }).expect("proxy");
    let lib = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let failures = lib.block_on(fuzz(&cs, &proxy));
    drop(lib);
    drop(proxy);
    drop(kit);
    drop(server);
    assert!(failures.is_empty(), "the cancellation fuzzer failed:\n{}", failures.join("\n"));
}

async fn fuzz(cs: &str, proxy: &TcpProxy) -> Vec<String> {
    let seed = env_u64("CANCEL_SEED", 35);
    let secs = env_u64("CANCEL_SECS", 75);
    let rounds = env_u64("CANCEL_ROUNDS", 300);
    let mut rng = fastrand::Rng::with_seed(seed);
    let a = fixtures::framework(proxy.connect_string()).await;
    let b = fixtures::framework(cs).await;
    let root = format!("/{}", fixtures::unique("cancel"));
    let tasks = || tokio::runtime::Handle::current().metrics().num_alive_tasks();
    let baseline = tasks();
    let started = Instant::now();
    let (mut figures, mut cuts, mut expiries) = (Figures::new(), 0u64, 0u64);
    let mut round = 0;
    while round < rounds && started.elapsed() < Duration::from_secs(secs) {
        // three rounds at once, of random kinds, on paths of their own
        let batch: Vec<(Kind, String, Duration, Duration)> = (0..PARALLEL)
            .map(|i| {
                let kind = KINDS[rng.usize(..KINDS.len())];
                let cancel = Duration::from_millis(rng.u64(0..400));
                let release = Duration::from_millis(rng.u64(0..500));
                (kind, format!("{root}/{kind:?}/r{round}-{i}"), cancel, release)
            })
            .collect();
        // a fault at a random point of the rounds, in one batch of two
        let fault = match rng.u8(0..4) {
            0 => Some((false, Duration::from_millis(rng.u64(0..400)))),
            1 => Some((true, Duration::from_millis(rng.u64(0..400)))),
            _ => None,
        };
        let faults = async {
            match fault {
                Some((false, at)) => {
                    tokio::time::sleep(at).await;
                    proxy.cut();
                    cuts += 1;
                }
                Some((true, at)) => {
                    tokio::time::sleep(at).await;
                    if zk_recipes_testing::expire_session_at(&a, cs).await.is_ok() {
                        expiries += 1;
                    }
                }
                None => {}
            }
        };
        let work = futures_util::future::join_all(batch.iter().map(|(kind, path, cancel, release)| {
            tokio::time::timeout(Duration::from_secs(30), kinds::round(*kind, &a, &b, path, *cancel, *release))
        }));
        let (outcomes, ()) = tokio::join!(work, faults);
        for ((kind, ..), done) in batch.iter().zip(outcomes) {
            let Ok(done) = done else {
                return vec![format!("round {round} ({kind:?}) did not end within 30 s")];
            };
            let entry = figures.entry(*kind).or_default();
            entry.0 += 1;
            entry.1 += u64::from(done);
        }
        round += 1;
        // the next round starts connected (a wait of `b` in a setup must not meet a dead `a`)
        let _ = a.wait_connected(Duration::from_secs(10)).await;
    }
    let fuzz_secs = started.elapsed().as_secs_f64();
    let mut failures = Vec::new();
    let settled = tokio::time::timeout(SETTLE, async {
        loop {
            let left = fixtures::ephemerals(&b, &root).await.unwrap_or_else(|e| vec![format!("walk: {e}")]);
            let pending = a.pending_background_deletes() + b.pending_background_deletes();
            if left.is_empty() && pending == 0 && tasks() <= baseline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await;
    if settled.is_err() {
        let left = fixtures::ephemerals(&b, &root).await.unwrap_or_default();
        failures.push(format!(
            "{SETTLE:?} after the last round: {} node(s) left {:?}, {} background delete(s) pending, {} live tasks (baseline {baseline})",
            left.len(),
            &left[..left.len().min(8)],
            a.pending_background_deletes() + b.pending_background_deletes(),
            tasks()
        ));
    }
    println!(
        "cancel fuzzer: seed {seed}, {} rounds ({round} batches of {PARALLEL}) in {fuzz_secs:.0} s, {cuts} connection cuts, {expiries} session expiries, \
         tasks {} (baseline {baseline})",
        figures.values().map(|f| f.0).sum::<u64>(),
        tasks()
    );
    for (kind, (n, done)) in &figures {
        println!(
            "cancel fuzzer: {kind:?}: {n} rounds, {done} finished before their drop, {} dropped waiting",
            n - done
        );
    }
    if let Err(e) = a.shutdown(Duration::from_secs(10)).await {
        failures.push(format!("a: shutdown: {e}"));
    }
    if let Err(e) = b.shutdown(Duration::from_secs(10)).await {
        failures.push(format!("b: shutdown: {e}"));
    }
    failures
}
