//! What every hostile test uses: seeds, junk names and data, planting them, a churn task that
//! deletes and re-creates them while the real participants work.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use zk_recipes::CreateMode;
use zk_recipes::{Error, Framework};
use zk_recipes_testing::fixtures;

/// How long the real participants of one round may take: the liveness bound.
pub const BOUND: Duration = Duration::from_secs(20);

/// A seeded generator for test `name`: `HOSTILE_SEED` when set, else a fixed seed per test
/// (printed, so that a failure can be replayed).
pub fn rng(name: &str) -> fastrand::Rng {
    let fixed = name.bytes().fold(0x5eed_u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let seed = std::env::var("HOSTILE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(fixed);
    println!("{name}: seed {seed} (HOSTILE_SEED={seed} replays it)");
    fastrand::Rng::with_seed(seed)
}

/// A framework on the binary's shared server.
pub async fn framework() -> Framework {
    fixtures::framework(&fixtures::shared_server().await).await
}

/// A unique base path for one test.
pub fn base(prefix: &str) -> String {
    format!("/{}", fixtures::unique(&format!("hostile-{prefix}")))
}

/// Characters a node name may hold (ZooKeeper refuses control characters, surrogates and the
/// private use area; a supplementary character is a surrogate pair in Java): odd but valid.
const ODD: &[char] = &['ǅ', 'Ω', 'ß', '中', 'ﾛ', '\u{200F}', '\u{0301}', '\u{00A0}', '−', '٣', 'Ⅻ', ' ', '|', '-', '_'];

/// A name no compliant client creates beside nodes called `<..>name<sequence>`: `name` with no
/// sequence, with a sequence of the wrong width or out of range, negative, with letters or odd
/// unicode; or no `name` at all.
pub fn junk_name(rng: &mut fastrand::Rng, name: &str) -> String {
    let uuid = format!("{:08x}-0000-4000-8000-{:012x}", rng.u32(..), rng.u64(..1 << 48));
    let odd: String = (0..rng.usize(1..6)).map(|_| ODD[rng.usize(..ODD.len())]).collect();
    match rng.u8(..14) {
        0 => name.to_string(),
        1 => format!("_c_{uuid}-{name}"),
        2 => format!("{name}{}", rng.u64(10_000_000_000..u64::MAX)),
        3 => format!("{name}99999999999"),
        4 => format!("{name}-{}", rng.u32(1..1_000)),
        5 => format!("{name}-0000000001"),
        6 => format!("{name}{:09}", rng.u32(..1_000_000_000)),
        7 => format!("{name}{}", rng.u32(2_147_483_648..=u32::MAX)),
        8 => format!("{name}abc{}", rng.u16(..)),
        9 => format!("{name}{odd}"),
        10 => format!("{odd}{name}{odd}{:010}", rng.u32(..2_000_000)),
        11 => format!("junk-{}", rng.u32(..)),
        12 => format!("{:010}", rng.u32(..2_000_000)),
        _ => format!("_c_{uuid}-{name}{:010}x", rng.u32(..2_000_000)),
    }
}

/// Data nobody can parse, or that parses as something else: empty, 1 MB, non-UTF-8, 4 and 8
/// bytes, invalid JSON, JSON of the wrong shape, text.
pub fn junk_data(rng: &mut fastrand::Rng) -> Vec<u8> {
    match rng.u8(..9) {
        0 => Vec::new(),
        1 => vec![0xA5; 1_000_000],
        2 => vec![0xFF, 0xFE, 0xC3, 0x28, 0x80, 0x00, 0xED, 0xA0, 0x80],
        3 => rng.i32(..).to_be_bytes().to_vec(),
        4 => rng.i64(..).to_be_bytes().to_vec(),
        5 => b"{\"name\": \"svc\", \"id\": ".to_vec(),
        6 => b"[1, 2, {\"payload\": null}]".to_vec(),
        7 => {
            let n = rng.usize(1..64);
            std::iter::repeat_with(|| rng.u8(..)).take(n).collect()
        }
        _ => "ǅ junk written by hand".as_bytes().to_vec(),
    }
}

/// Creates `dir/name` with `data` (persistent, or ephemeral of `fw`'s session), parents too;
/// one that exists already is fine. Returns the full path.
pub async fn plant(fw: &Framework, dir: &str, name: &str, data: &[u8], ephemeral: bool) -> String {
    let path = format!("{dir}/{name}");
    let mode = if ephemeral { CreateMode::Ephemeral } else { CreateMode::Persistent };
    match fw.create(&path, data, mode).await {
        Ok(_) | Err(Error::ZooKeeper(ZooKeeperError::NodeExists)) => path,
        Err(e) => panic!("planting {path:?}: {e}"),
    }
}

/// Plants `n` junk children (names for recipe name `name`) under `dir` with junk data; returns
/// their names.
pub async fn plant_junk(rng: &mut fastrand::Rng, fw: &Framework, dir: &str, name: &str, n: usize) -> Vec<String> {
    let mut planted = Vec::new();
    for _ in 0..n {
        let junk = junk_name(rng, name);
        let data = junk_data(rng);
        plant(fw, dir, &junk, &data, rng.bool()).await;
        planted.push(junk);
    }
    planted
}

/// Deletes and re-creates `nodes` (children of `dir`) with new junk data, over and over, until
/// the returned flag is set (then it stops, and the task ends).
pub fn churn(
    fw: &Framework,
    dir: &str,
    nodes: Vec<String>,
    seed: u64,
) -> (Arc<AtomicBool>, tokio::task::JoinHandle<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (fw, dir, flag) = (fw.clone(), dir.to_string(), stop.clone());
    let task = tokio::spawn(async move {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut rounds = 0;
        while !flag.load(Ordering::SeqCst) && !nodes.is_empty() {
            let name = &nodes[rng.usize(..nodes.len())];
            let path = format!("{dir}/{name}");
            let _ = fw.delete(&path).await;
            tokio::time::sleep(Duration::from_millis(rng.u64(5..40))).await;
            let mut data = junk_data(&mut rng);
            data.truncate(4096);
            let _ = fw.create(&path, &data, CreateMode::Persistent).await;
            rounds += 1;
        }
        rounds
    });
    (stop, task)
}

/// Stops a [`churn`] task.
pub async fn stop_churn((stop, task): (Arc<AtomicBool>, tokio::task::JoinHandle<u64>)) -> u64 {
    stop.store(true, Ordering::SeqCst);
    task.await.unwrap()
}

/// `future` within [`BOUND`], or a panic that says what did not finish.
pub async fn live<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(BOUND, future).await {
        Ok(out) => out,
        Err(_) => panic!("liveness: {what} did not finish within {BOUND:?}"),
    }
}
