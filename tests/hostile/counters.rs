//! Counters beside corrupt data and foreign children. Rules: a counter's data of another
//! width than its own (4 bytes for `SharedCount` and the atomic integer, 8 for the atomic
//! long; empty is zero for the atomics) is [`Error::CorruptData`], never guessed at; children
//! of the counter node other than its own (`_lock_` queue, `_gate_`, `_txn_` markers) are
//! ignored, and foreign children of its `_lock_` queue hold nothing (the lock engine's rule).

use zk_recipes::CreateMode;
use zk_recipes::{DistributedAtomicInteger, DistributedAtomicLong, Error, SharedCount};

use crate::support::{self, live, plant, plant_junk};

/// Data of every wrong width gives a typed error, never a panic or a guess; a counter with
/// valid data counts every increment of 3 processes exactly once beside random junk children
/// (its own and its queue's), re-created meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_report_wrong_widths_and_count_exactly_once_beside_junk() {
    let mut rng = support::rng("counters");
    let fw = support::framework().await;
    let base = support::base("counters");
    for (i, data) in [vec![1u8, 2, 3], vec![0; 5], vec![0xFF; 7], vec![0xA5; 1_000_000], b"\xff\xfe\x00\x80".to_vec()]
        .into_iter()
        .enumerate()
    {
        let path = format!("{base}/bad-{i}");
        fw.create(&path, &data, CreateMode::Persistent).await.unwrap();
        let long = DistributedAtomicLong::new(&fw, &path).unwrap();
        let corrupt = |r: &zk_recipes::Result<_>| matches!(r, Err(Error::CorruptData { .. }));
        assert!(corrupt(&long.get().await.map(|_| ())), "long get of {} bytes", data.len());
        assert!(corrupt(&long.increment().await.map(|_| ())), "long increment of {} bytes", data.len());
        if data.len() != 4 {
            let int = DistributedAtomicInteger::new(&fw, &path).unwrap();
            assert!(corrupt(&int.get().await.map(|_| ())), "integer get of {} bytes", data.len());
            let count = SharedCount::new(&fw, &path, 0).unwrap();
            assert!(corrupt(&count.get().await.map(|_| ())), "shared count of {} bytes", data.len());
        }
        assert_eq!(fw.get_data(&path).await.unwrap().0, data, "corrupt data is left alone");
    }
    // a 4-byte node read as a long, an 8-byte one as an integer
    let four = format!("{base}/four");
    fw.create(&four, &7i32.to_be_bytes(), CreateMode::Persistent).await.unwrap();
    assert!(matches!(DistributedAtomicLong::new(&fw, &four).unwrap().get().await, Err(Error::CorruptData { .. })));
    assert_eq!(SharedCount::new(&fw, &four, 0).unwrap().get().await.unwrap().value, 7);

    // exactly once beside junk
    let path = format!("{base}/good");
    let fws = [support::framework().await, support::framework().await, support::framework().await];
    DistributedAtomicLong::new(&fw, &path).unwrap().initialize(0).await.unwrap();
    let mut junk = plant_junk(&mut rng, &fw, &path, "lock-", 3).await;
    let queue = format!("{path}/_lock_");
    let queue_junk = plant_junk(&mut rng, &fw, &queue, "lock-", 3).await;
    junk.push(plant(&fw, &path, "_txn_junk", b"\xff", false).await.rsplit('/').next().unwrap().to_string());
    let churn = support::churn(&fw, &queue, queue_junk.clone(), rng.u64(..));
    // the value's own children too: junk, and its gate deleted and re-created with junk data
    let mut own = junk.clone();
    own.push("_gate_".into());
    let own_churn = support::churn(&fws[0], &path, own, rng.u64(..));
    let mut tasks = Vec::new();
    for f in &fws {
        for _ in 0..2 {
            let (f, path) = (f.clone(), path.clone());
            tasks.push(tokio::spawn(async move {
                let counter = DistributedAtomicLong::new(&f, &path).unwrap();
                for _ in 0..10 {
                    let outcome = counter.increment().await.unwrap();
                    assert!(outcome.succeeded, "an increment that did not apply");
                }
            }));
        }
    }
    live(&format!("60 increments beside {junk:?} and {queue_junk:?}"), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    support::stop_churn(churn).await;
    support::stop_churn(own_churn).await;
    assert_eq!(DistributedAtomicLong::new(&fw, &path).unwrap().get().await.unwrap(), 60, "every increment once");
    for f in fws {
        f.close();
    }
    fw.close();
}
