//! Interop with a ShedLock-shaped Java participant (the testing kit's Curator peer, whose
//! `shedlock.*` commands behave as ShedLock's ZooKeeper provider): the bytes each side writes
//! are what the other parses, each skips while the other holds, and in a mixed pool exactly one
//! participant runs each tick.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zk_recipes::ShedLock;
use zk_recipes_testing::curator::CuratorPeer;
use zk_recipes_testing::fixtures;

use super::SEC;

async fn peer() -> Arc<CuratorPeer> {
    CuratorPeer::shared().await.expect("Curator peer starts (bash scripts/setup.sh installs it)")
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_side_parses_the_bytes_the_other_writes() {
    let cs = fixtures::shared_server().await;
    let peer = peer().await;
    let cid = fixtures::unique("shedlock-bytes");
    peer.connect(&cid, &cs).await.unwrap();
    let fw = fixtures::framework(&cs).await;
    let lock = super::locks(&fw);
    let root = lock.root_path().to_string();

    // ours -> Java: Java's Instant.parse reads our instant, and ShedLock would write the same
    let guard = lock.try_lock("rust", 5 * SEC, Duration::ZERO).await.unwrap().unwrap();
    let ours = lock.locked_until("rust").await.unwrap().unwrap();
    let ms = peer.shedlock_parse(&ours).await.unwrap().expect("Java parses our instant");
    assert_eq!(ms, super::ms(guard.locked_until()));
    assert_eq!(peer.shedlock_format(ms).await.unwrap(), ours, "byte for byte what ShedLock writes");
    assert!(peer.shedlock_is_locked(&cid, &format!("{root}/rust"), 0).await.unwrap(), "Java sees it locked");
    assert_eq!(peer.shedlock_lock(&cid, "h", &format!("{root}/rust"), 5 * SEC, Duration::ZERO, 0).await.unwrap(), None);
    guard.unlock().await.unwrap();

    // Java -> ours: ShedLock's instant parses here, and decides alike
    let until =
        peer.shedlock_lock(&cid, "h", &format!("{root}/java"), 5 * SEC, 2 * SEC, 0).await.unwrap().expect("taken");
    assert_eq!(lock.locked_until("java").await.unwrap().as_deref(), Some(until.as_str()));
    assert!(lock.is_locked("java").await.unwrap());
    assert!(lock.try_lock("java", SEC, Duration::ZERO).await.unwrap().is_none(), "skipped while Java holds");
    let unlocked = peer.shedlock_unlock(&cid, "h").await.unwrap();
    assert!(lock.try_lock("java", SEC, Duration::ZERO).await.unwrap().is_none(), "Java's at_least_for holds here");
    assert_eq!(lock.locked_until("java").await.unwrap().as_deref(), Some(unlocked.as_str()));
    let unlocked_ms = peer.shedlock_parse(&unlocked).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis((unlocked_ms - now_ms()).max(0) as u64 + 50)).await;
    let g = lock.try_lock("java", SEC, Duration::ZERO).await.unwrap().expect("free after Java's instant");
    g.unlock().await.unwrap();

    // instants in every month and at odd milliseconds format the same on both sides
    for i in 0..24i64 {
        let ms = 1_767_323_045_678 + i * 2_678_400_123;
        let java = peer.shedlock_format(ms).await.unwrap();
        assert_eq!(peer.shedlock_parse(&java).await.unwrap(), Some(ms));
        // ours wrote what Java writes: take with a clock at `ms - 1 s`, at_most 1 s
        let at = UNIX_EPOCH + Duration::from_millis((ms - 1000) as u64);
        let fixed = ShedLock::new(&fw).root(&root).unwrap().clock(move || at);
        let name = format!("fmt-{i}");
        let g = fixed.try_lock(&name, SEC, Duration::ZERO).await.unwrap().unwrap();
        assert_eq!(fixed.locked_until(&name).await.unwrap().unwrap(), java);
        std::mem::forget(g); // no unlock: the instant stays as written
    }
    peer.close(&cid).await.unwrap();
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_least_for_crosses_the_languages_both_ways() {
    let cs = fixtures::shared_server().await;
    let peer = peer().await;
    let cid = fixtures::unique("shedlock-least");
    peer.connect(&cid, &cs).await.unwrap();
    let fw = fixtures::framework(&cs).await;
    let lock = super::locks(&fw);
    let root = lock.root_path().to_string();
    // ours runs a fast job with at_least_for 2 s; Java, whose clock is 1 s behind, skips
    let g = lock.try_lock("t", 10 * SEC, 2 * SEC).await.unwrap().unwrap();
    g.unlock().await.unwrap();
    assert_eq!(
        peer.shedlock_lock(&cid, "h", &format!("{root}/t"), 10 * SEC, Duration::ZERO, -1000).await.unwrap(),
        None
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        peer.shedlock_lock(&cid, "h", &format!("{root}/t"), 10 * SEC, Duration::ZERO, -1000).await.unwrap(),
        None
    );
    let mut taken = None;
    for _ in 0..40 {
        taken = peer.shedlock_lock(&cid, "h", &format!("{root}/t"), 10 * SEC, 2 * SEC, -1000).await.unwrap();
        if taken.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(taken.is_some(), "Java takes once the instant passed by its clock");
    // and the other way: Java's fast job, our replica with a clock 1 s behind skips
    peer.shedlock_unlock(&cid, "h").await.unwrap();
    let late = ShedLock::new(&fw).root(&root).unwrap().clock(|| SystemTime::now() - SEC);
    assert!(late.try_lock("t", 10 * SEC, Duration::ZERO).await.unwrap().is_none());
    peer.close(&cid).await.unwrap();
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_pool_runs_each_tick_exactly_once() {
    const TICKS: usize = 12;
    const EACH: usize = 4;
    let cs = fixtures::shared_server().await;
    let peer = peer().await;
    let cids: Vec<String> = (0..EACH).map(|_| fixtures::unique("shedlock-pool")).collect();
    for cid in &cids {
        peer.connect(cid, &cs).await.unwrap();
    }
    let mut fws = Vec::new();
    for _ in 0..EACH {
        fws.push(fixtures::framework(&cs).await);
    }
    let root = format!("/{}", fixtures::unique("shedlock-pool"));
    let (mut java_wins, mut rust_wins) = (0, 0);
    for tick in 0..TICKS {
        let name = "job";
        // a third of the ticks Java starts 100 ms ahead, a third ours, a third a free race
        // with 0-30 ms of jitter each: both sides win some, both read the other's instant
        let lead = Duration::from_millis(100);
        let delay = move |java: bool| match (tick % 3, java) {
            (0, false) | (1, true) => lead,
            (2, _) => Duration::from_millis(fastrand::u64(0..30)),
            _ => Duration::ZERO,
        };
        let mut tries = Vec::new();
        for (i, cid) in cids.iter().enumerate() {
            let (peer, cid, root) = (peer.clone(), cid.clone(), root.clone());
            tries.push(tokio::spawn(async move {
                tokio::time::sleep(delay(true)).await;
                let hid = format!("t{tick}-{i}");
                let path = format!("{root}/{name}");
                let won = peer.shedlock_lock(&cid, &hid, &path, 10 * SEC, Duration::from_millis(300), 0);
                match won.await.unwrap() {
                    Some(_) => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        peer.shedlock_unlock(&cid, &hid).await.unwrap();
                        (true, true)
                    }
                    None => (true, false),
                }
            }));
        }
        for fw in &fws {
            let lock = ShedLock::new(fw).root(&root).unwrap();
            tries.push(tokio::spawn(async move {
                tokio::time::sleep(delay(false)).await;
                match lock.try_lock(name, 10 * SEC, Duration::from_millis(300)).await.unwrap() {
                    Some(g) => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        g.unlock().await.unwrap();
                        (false, true)
                    }
                    None => (false, false),
                }
            }));
        }
        let mut winners = Vec::new();
        for t in tries {
            let (java, won) = fixtures::within(20 * SEC, t).await.unwrap();
            if won {
                winners.push(java);
            }
        }
        assert_eq!(winners.len(), 1, "tick {tick}: exactly one runs ({winners:?})");
        if winners[0] {
            java_wins += 1;
        } else {
            rust_wins += 1;
        }
        // the next tick: after at_least_for
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    println!("mixed pool: Java ran {java_wins} ticks, Rust {rust_wins}");
    assert!(java_wins > 0 && rust_wins > 0, "both sides ran ticks: Java {java_wins}, Rust {rust_wins}");
    for cid in &cids {
        peer.close(cid).await.unwrap();
    }
    for fw in &fws {
        fw.close();
    }
}
