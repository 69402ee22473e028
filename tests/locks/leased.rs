//! Lease-bounded holds: a lease not renewed ends on time and the lock goes to the next
//! contender; a renewed one is kept; guarded writes after the end are refused.

use assert_matches::assert_matches;
use std::time::Duration;

use tokio::time::Instant;

use zk_recipes::CreateMode;
use zk_recipes::{Error, InterProcessSemaphoreV2, LossReason, TimedHold};
use zk_recipes_testing::fixtures;

use super::{Lock, KINDS, WAIT};

/// How late a lease may end: its timer task's wake-up and the loss signal, on a loaded 2-core
/// machine (a lease that did not end at all fails on `WAIT`).
const LATE: Duration = Duration::from_millis(250);

#[tokio::test]
async fn a_lease_not_renewed_ends_on_time_and_the_next_contender_holds() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let lease = Duration::from_millis(800);
    for kind in KINDS {
        let path = format!("/{}", fixtures::unique("leased"));
        let data = format!("{path}-data");
        fw.create(&data, b"", CreateMode::Persistent).await.unwrap();
        let lock = Lock::new(kind, &fw, &path);
        let started = Instant::now();
        let held = TimedHold::acquire(&*lock.0, lease).await.unwrap();
        // The lease runs from inside `acquire`: between `started` and `held_at`.
        let held_at = Instant::now();
        let next = tokio::spawn({
            let lock = Lock::new(kind, &other, &path);
            async move { lock.acquire_timeout(WAIT).await.expect("the next contender holds") }
        });
        fw.transaction().while_held(&held).set_data(&data, b"in time", None).commit().await.unwrap();
        assert_eq!(tokio::time::timeout(WAIT, held.lost()).await.unwrap(), LossReason::Expired, "{kind:?}");
        let (ended, late) = (started.elapsed(), held_at.elapsed().saturating_sub(lease));
        assert!(ended >= lease, "{kind:?}: ended after {ended:?}, before its lease of {lease:?}");
        assert!(late <= LATE, "{kind:?}: ended {late:?} after its lease of {lease:?}");
        let refused = fw.transaction().while_held(&held).set_data(&data, b"late", None).commit().await;
        assert!(matches!(refused, Err(Error::LockLost { reason: LossReason::Expired, .. })), "{kind:?}: {refused:?}");
        assert_matches!(
            held.renew(lease).unwrap_err(),
            Error::LockLost { path, reason: LossReason::Expired, .. } if path == held.path()
        );
        let taken = next.await.unwrap();
        assert!(started.elapsed() < lease + Duration::from_secs(2), "{kind:?}: handed on promptly");
        assert_eq!(fw.get_data(&data).await.unwrap().0, b"in time");
        assert!(matches!(held.release().await, Err(Error::LockLost { .. })));
        taken.release().await.unwrap();
    }
}

#[tokio::test]
async fn a_renewed_lease_keeps_the_hold() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("leased-renew"));
    let lease = Duration::from_millis(500);
    let held = TimedHold::acquire(&*Lock::new(super::Kind::Mutex, &fw, &path).0, lease).await.unwrap();
    let rival = Lock::new(super::Kind::Mutex, &other, &path);
    for _ in 0..8 {
        tokio::time::sleep(lease / 3).await;
        held.renew(lease).unwrap();
    }
    assert!(!held.is_lost(), "renewed for {:?}", lease / 3 * 8);
    assert!(rival.acquire_timeout(Duration::from_millis(100)).await.is_none(), "still ours");
    let stop = Instant::now();
    assert_eq!(tokio::time::timeout(WAIT, held.lost()).await.unwrap(), LossReason::Expired);
    assert!(stop.elapsed() <= lease + LATE, "ended {:?} after the last renewal", stop.elapsed());
    rival.acquire_timeout(WAIT).await.expect("free after the lease").release().await.unwrap();
}

#[tokio::test]
async fn a_semaphore_lease_and_bad_input() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("leased-sem"));
    let semaphore = InterProcessSemaphoreV2::new(&fw, &path, 1).unwrap();
    let lock = Lock::new(super::Kind::Mutex, &fw, &format!("{path}-m"));
    assert!(matches!(TimedHold::acquire(&*lock.0, Duration::ZERO).await, Err(Error::InvalidArgument { .. })));
    let held = TimedHold::new(semaphore.acquire().await.unwrap(), Duration::from_millis(300)).unwrap();
    assert!(matches!(held.renew(Duration::ZERO), Err(Error::InvalidArgument { .. })));
    assert_eq!(tokio::time::timeout(WAIT, held.lost()).await.unwrap(), LossReason::Expired);
    let again = tokio::time::timeout(WAIT, semaphore.acquire()).await.expect("the lease is free again").unwrap();
    drop(again);
    // released before the deadline: nothing fires later
    let held = TimedHold::acquire(&*lock.0, Duration::from_millis(200)).await.unwrap();
    held.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let next = lock.acquire_timeout(WAIT).await.expect("free");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!next.is_lost(), "an old lease does not end a new hold");
    next.release().await.unwrap();
}
