//! The count-down latch beside corrupt data and foreign children. Rules: the latch node's data
//! and a generation's count must be decimal text, else [`Error::CorruptData`]; children of the
//! latch node that are not `gen-<digits>` are ignored; under the current generation every
//! child is a participant's count-down (participant ids are free text, so a planted child
//! there counts down like one — the layout cannot tell it apart).

use zk_recipes::CreateMode;
use zk_recipes::{DistributedCountDownLatch, Error};

use crate::support::{self, junk_data, live, plant_junk};

/// Corrupt latch data is a typed error for every call; with valid data and junk children
/// beside the generations (re-created meanwhile), 3 participants open the latch once, the
/// waiters of 3 processes are released within the bound, and a participant counted twice
/// counts once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_reports_corrupt_data_and_opens_once_beside_junk() {
    let mut rng = support::rng("countdown");
    let fw = support::framework().await;
    let base = support::base("countdown");
    for i in 0..4 {
        let mut data = junk_data(&mut rng);
        if data.iter().all(u8::is_ascii_digit) {
            data.push(b'x');
        }
        let path = format!("{base}/bad-{i}");
        fw.create(&path, &data, CreateMode::Persistent).await.unwrap();
        let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
        let corrupt = |r: zk_recipes::Result<()>| matches!(r, Err(Error::CorruptData { .. }));
        assert!(corrupt(latch.count().await.map(drop)), "count over {} bytes", data.len());
        assert!(corrupt(latch.try_set_count(2).await.map(drop)), "set over {} bytes", data.len());
        assert!(corrupt(latch.count_down("p").await.map(drop)), "count down over {} bytes", data.len());
    }
    // a generation whose count is not a number
    let path = format!("{base}/bad-count");
    fw.create(&path, b"1", CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{path}/gen-0000000001"), b"\xff", CreateMode::Persistent).await.unwrap();
    let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
    assert!(matches!(latch.count().await, Err(Error::CorruptData { .. })));

    let path = format!("{base}/good");
    let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
    assert!(latch.try_set_count(3).await.unwrap());
    let junk = plant_junk(&mut rng, &fw, &path, "gen-", 4).await;
    let churn = support::churn(&fw, &path, junk.clone(), rng.u64(..));
    let fws = [support::framework().await, support::framework().await, support::framework().await];
    let mut waiters = Vec::new();
    for f in &fws {
        let (f, path) = (f.clone(), path.clone());
        waiters.push(tokio::spawn(async move { DistributedCountDownLatch::new(&f, &path).unwrap().wait().await }));
    }
    for (i, f) in fws.iter().enumerate() {
        let l = DistributedCountDownLatch::new(f, &path).unwrap();
        l.count_down(&format!("p{i}")).await.unwrap();
        l.count_down(&format!("p{i}")).await.unwrap();
        if i < 2 {
            assert!(l.count().await.unwrap() > 0, "not open before the third participant");
        }
    }
    live(&format!("waiters beside {junk:?}"), async {
        for w in waiters {
            w.await.unwrap().unwrap();
        }
    })
    .await;
    support::stop_churn(churn).await;
    assert_eq!(latch.count().await.unwrap(), 0);
    for f in fws {
        f.close();
    }
    fw.close();
}

/// Regression: a directory squatting on the next generation's name (`gen-0000000002` while
/// the latch is at generation 1) made every `try_set_count` fail with `NodeExists`: the
/// setter's transaction creates that directory. The setter now skips the squatted number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_squatted_next_generation_stops_no_setter() {
    let fw = support::framework().await;
    let path = support::base("countdown-squat");
    let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    latch.count_down("a").await.unwrap();
    fw.create(&format!("{path}/gen-0000000002"), b"7", CreateMode::Persistent).await.unwrap();
    fw.create(&format!("{path}/gen-0000000003"), b"x", CreateMode::Persistent).await.unwrap();
    assert!(live("setting a count beside squatters", latch.try_set_count(2)).await.unwrap());
    assert_eq!(latch.count().await.unwrap(), 2);
    let generation = latch.generation().await.unwrap().unwrap();
    assert!(generation > 3, "past the squatters: {generation}");
    for p in ["a", "b"] {
        latch.count_down(p).await.unwrap();
    }
    live("the new generation opens", latch.wait()).await.unwrap();
    fw.close();
}
