//! `DistributedCountDownLatch` on the shared server: counting, idempotence, generations,
//! concurrent setters, bad input.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::latch::CountDown;
use zk_recipes::CreateMode;
use zk_recipes::{DistributedCountDownLatch, Error};
use zk_recipes_testing::fixtures;

const WAIT: Duration = Duration::from_secs(20);
/// How long a waiter must stay blocked to count as blocked.
const BLOCKED: Duration = Duration::from_millis(300);

fn latch_path() -> String {
    format!("/{}/latch", fixtures::unique("latch"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_down_once_per_participant_and_opens_at_zero() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = latch_path();
    let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
    // no latch yet: count zero, nothing to count down, waiters pass
    assert_eq!(latch.count().await.unwrap(), 0);
    assert_eq!(latch.generation().await.unwrap(), None);
    assert_eq!(latch.count_down("a").await.unwrap(), CountDown::NotCounting);
    assert!(fixtures::in_time(latch.wait_timeout(BLOCKED).await));
    assert!(fw.exists(&path).await.unwrap().is_none(), "reading and waiting create nothing");

    assert!(latch.try_set_count(3).await.unwrap());
    assert!(!latch.try_set_count(5).await.unwrap(), "a count is set already");
    assert_eq!(latch.count().await.unwrap(), 3);
    assert_eq!(latch.generation().await.unwrap(), Some(1));

    let opened = Arc::new(AtomicBool::new(false));
    let last_counted = Arc::new(AtomicBool::new(false));
    let waiter = {
        let (fw, path, opened, last_counted) =
            (fixtures::framework(&cs).await, path.clone(), opened.clone(), last_counted.clone());
        tokio::spawn(async move {
            DistributedCountDownLatch::new(&fw, &path).unwrap().wait().await.unwrap();
            assert!(last_counted.load(Ordering::SeqCst), "the latch opened before the last count-down");
            opened.store(true, Ordering::SeqCst);
            fw.close();
        })
    };
    assert_eq!(latch.count_down("a").await.unwrap(), CountDown::Counted { generation: 1, remaining: 2 });
    assert_eq!(latch.count_down("a").await.unwrap(), CountDown::AlreadyCounted { generation: 1, remaining: 2 });
    assert_eq!(latch.count_down("b").await.unwrap(), CountDown::Counted { generation: 1, remaining: 1 });
    assert_eq!(latch.count().await.unwrap(), 1);
    assert!(!fixtures::in_time(latch.wait_timeout(BLOCKED).await), "open with one count-down missing");
    assert!(!opened.load(Ordering::SeqCst));
    last_counted.store(true, Ordering::SeqCst);
    assert_eq!(latch.count_down("c").await.unwrap(), CountDown::Counted { generation: 1, remaining: 0 });
    fixtures::within(WAIT, waiter).await.unwrap();
    assert!(fixtures::in_time(latch.wait_timeout(BLOCKED).await));
    // open for good: more count-downs change nothing
    assert_eq!(latch.count_down("b").await.unwrap(), CountDown::AlreadyCounted { generation: 1, remaining: 0 });
    assert_eq!(latch.count().await.unwrap(), 0);
    let (data, stat) = fw.get_data(&path).await.unwrap();
    assert_eq!((data.as_slice(), stat.ephemeral_owner), (&b"1"[..], 0), "generation 1, persistent");
    let gen = format!("{path}/gen-0000000001");
    assert_eq!(fw.get_data(&gen).await.unwrap().0, b"3");
    let mut counted = fw.children(&gen).await.unwrap();
    counted.sort();
    assert_eq!(counted, ["a", "b", "c"]);
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generations_keep_their_waiters_apart() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = latch_path();
    let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
    assert!(latch.try_set_count(2).await.unwrap());
    // a waiter of generation 1, released by generation 1 even if it only looks after the reset
    let first = {
        let fw = fixtures::framework(&cs).await;
        let path = path.clone();
        tokio::spawn(async move {
            let released = DistributedCountDownLatch::new(&fw, &path).unwrap().wait_timeout(WAIT).await;
            fw.close();
            released
        })
    };
    fixtures::eventually(WAIT, "the waiter watches generation 1", || async {
        fw.children(&format!("{path}/gen-0000000001")).await.is_ok()
    })
    .await;
    latch.count_down("x").await.unwrap();
    latch.count_down("y").await.unwrap();
    assert!(latch.try_set_count(1).await.unwrap(), "generation 1 is open: a new count can be set");
    assert_eq!(latch.generation().await.unwrap(), Some(2));
    assert!(fixtures::in_time(fixtures::within(WAIT, first).await.unwrap()), "the generation-1 waiter is released");
    // generation 1's count-downs do not open generation 2
    assert_eq!(latch.count().await.unwrap(), 1);
    assert!(!fixtures::in_time(latch.wait_timeout(BLOCKED).await));
    assert!(fw.exists(&format!("{path}/gen-0000000001")).await.unwrap().is_none(), "the old generation is gone");
    assert!(!latch.try_set_count(4).await.unwrap(), "generation 2 is counting");
    // the same participant counts again in the new generation
    assert_eq!(latch.count_down("x").await.unwrap(), CountDown::Counted { generation: 2, remaining: 0 });
    assert!(fixtures::in_time(latch.wait_timeout(WAIT).await));
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_of_many_concurrent_setters_wins() {
    let cs = fixtures::shared_server().await;
    let path = latch_path();
    for round in 1..=2u64 {
        let mut setters = Vec::new();
        for _ in 0..6 {
            let (fw, path) = (fixtures::framework(&cs).await, path.clone());
            setters.push(tokio::spawn(async move {
                let set = DistributedCountDownLatch::new(&fw, &path).unwrap().try_set_count(1).await.unwrap();
                fw.close();
                set
            }));
        }
        let mut wins = 0;
        for s in setters {
            wins += usize::from(fixtures::within(WAIT, s).await.unwrap());
        }
        assert_eq!(wins, 1, "round {round}: exactly one setter wins");
        let fw = fixtures::framework(&cs).await;
        let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
        assert_eq!(latch.generation().await.unwrap(), Some(round));
        latch.count_down("only").await.unwrap();
        fw.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_typed_errors() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    for bad in ["", "/", "relative", "/a//b", "/a/"] {
        assert!(matches!(DistributedCountDownLatch::new(&fw, bad), Err(Error::InvalidPath { .. })), "{bad:?}");
    }
    let path = latch_path();
    let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
    assert!(matches!(latch.try_set_count(0).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(latch.try_set_count(u64::MAX).await, Err(Error::InvalidArgument { .. })));
    assert!(fw.exists(&path).await.unwrap().is_none(), "a refused count leaves nothing");
    assert!(latch.try_set_count(2).await.unwrap());
    let long = "p".repeat(256);
    for bad in ["", "a/b", ".", "..", "nul\u{0}", long.as_str()] {
        assert!(matches!(latch.count_down(bad).await, Err(Error::InvalidArgument { .. })), "{bad:?}");
    }
    assert_eq!(latch.count().await.unwrap(), 2, "refused count-downs count nothing");
    // a latch node that this recipe did not write
    let other = format!("/{}", fixtures::unique("not-a-latch"));
    fw.create(&other, b"hello", CreateMode::Persistent).await.unwrap();
    let foreign = DistributedCountDownLatch::new(&fw, &other).unwrap();
    assert!(matches!(foreign.count().await, Err(Error::CorruptData { .. })));
    assert!(matches!(foreign.try_set_count(1).await, Err(Error::CorruptData { .. })));
    fw.close();
}
