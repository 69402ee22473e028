//! The engine's tests against a real server: the local queue and shared listings at scale.

use std::sync::atomic::{AtomicUsize, Ordering};

use std::sync::{Arc, Mutex};

use super::super::session::{SessionLocks, DEPTH};
use crate::sync::lock;
use crate::{Framework, InterProcessMutex};

/// 1,000 waiters of one process on one session: eight of them are nodes in ZooKeeper's
/// queue and the rest wait in the local queue; they queue with a handful of listings and
/// drain with at most one per entrant (a hand-off from a local holder needs none), in
/// queue order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_waiters_queue_locally_share_listings_and_drain_in_order() {
    const WAITERS: usize = 1_000;
    let cs = zk_recipes_testing::shared_server().await.unwrap();
    let fw = Framework::connect(&cs).await.unwrap();
    let path = format!("/listings-test-{}", std::process::id());
    let mutex = InterProcessMutex::new(&fw, &path).unwrap();
    let first = mutex.acquire().await.unwrap();
    let sent = || SessionLocks::of(&fw).listings.sent();
    let before = sent();
    let inside = Arc::new(AtomicUsize::new(0));
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..WAITERS {
        let (m, inside, order) = (mutex.clone(), inside.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let g = m.acquire().await.unwrap();
            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
            lock(&order).push(g.fencing_token());
            inside.fetch_sub(1, Ordering::SeqCst);
            g.release().await.unwrap();
        }));
    }
    while fw.children(&path).await.unwrap().len() < DEPTH + 1 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // every entrant has its listing once it watches its predecessor: wait for that
    let deadline = crate::framework::deadline::after(std::time::Duration::from_secs(30));
    while SessionLocks::of(&fw).listings.any_in_flight() {
        assert!(tokio::time::Instant::now() < deadline, "listings never settled");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let queued = sent() - before;
    assert!(queued <= DEPTH as u64, "{queued} listings for {DEPTH} entrants");
    assert_eq!(fw.children(&path).await.unwrap().len(), DEPTH + 1, "the rest wait locally");
    drop(first);
    for t in tasks {
        t.await.unwrap();
    }
    // each entrant behind a local contender lists once (none after a hand-off), or twice
    // when its predecessor was gone before its watch was set
    let drained = sent() - before - queued;
    assert!(drained <= 2 * WAITERS as u64, "{drained} listings to drain {WAITERS} local waiters");
    let order = lock(&order).clone();
    assert_eq!(order.len(), WAITERS);
    assert!(order.windows(2).all(|w| w[0] < w[1]), "held in queue order, tokens increasing");
    assert_eq!(SessionLocks::of(&fw).local_queues.paths(), 0, "the local queue outlived its acquires");
    // (the container may be reaped already)
    let left = fw.children(&path).await;
    assert!(
        matches!(&left, Ok(c) if c.is_empty())
            || matches!(left, Err(crate::Error::ZooKeeper(crate::ZooKeeperError::NoNode))),
        "no node left: {left:?}"
    );
    fw.close();
}

#[test]
fn forever_has_no_deadline_and_until_has_its_own() {
    use super::{never_timed_out, Forever, TimedOut, Until, Wait};
    assert!(Forever.deadline().is_none());
    let at = tokio::time::Instant::now();
    assert_eq!(Until(at).instant(), Some(at));
    assert_eq!(never_timed_out::<u8>(Ok(7)), 7);
    let _: TimedOut = TimedOut;
}

#[tokio::test]
async fn the_three_forms_of_every_kind() {
    use super::{forever, now, within, Forever, TimedOut, Until, Wait, Waited};
    use crate::error::Error;
    async fn acquire<W: Wait>(wait: W, hold: bool) -> crate::Result<Waited<u8, W>> {
        match (hold, wait.deadline()) {
            (true, _) => Ok(Ok(3)),
            (false, Some((_, timed_out))) => Ok(Err(timed_out)),
            (false, None) => unreachable!("a forever wait that does not hold never returns"),
        }
    }
    assert_eq!(forever(acquire(Forever, true)).await.unwrap(), 3);
    let timeout = std::time::Duration::from_millis(5);
    let timed_out = within(timeout, |w| acquire(w, false)).await;
    assert!(matches!(timed_out, Err(Error::Timeout { timeout: t, step: crate::TimeoutStep::Waiting }) if t == timeout));
    // Duration::MAX is no bound, not a panic
    assert_eq!(within(std::time::Duration::MAX, |w: Until| acquire(w, true)).await.unwrap(), 3);
    assert_eq!(now(acquire(Until::now(), false)).await.unwrap(), None);
    assert_eq!(now(acquire(Until::now(), true)).await.unwrap(), Some(3));
    let _ = TimedOut;
}
