//! Scheduled jobs against a real ZooKeeper server: the ShedLock-compatible lock (taking,
//! at-least/at-most, clocks, keep-alive, fencing, bad input) and the scheduler over it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use zk_recipes::scheduled::TickOutcome;
use zk_recipes::CreateMode;
use zk_recipes::{Error, Framework, LossReason, Scheduled, ShedLock};
use zk_recipes_testing::fixtures;

mod java;

const SEC: Duration = Duration::from_secs(1);

/// A lock under a root of its own, so that tests never share a name.
fn locks(fw: &Framework) -> ShedLock {
    ShedLock::new(fw).root(&format!("/{}", fixtures::unique("shedlock"))).unwrap()
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, exactly.
fn is_stored_format(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

fn ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takes_skips_and_unlocks_in_shedlocks_format() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let a = locks(&fw);
    let b = ShedLock::new(&other).root(a.root_path()).unwrap();

    let guard = a.try_lock("job", 10 * SEC, 2 * SEC).await.unwrap().expect("free: taken");
    // the node is persistent, its data the lock-until instant in ShedLock's format
    let (data, stat) = fw.get_data(guard.path()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, 0, "a persistent node");
    let text = String::from_utf8(data).unwrap();
    assert!(is_stored_format(&text), "{text}");
    assert_eq!(a.locked_until("job").await.unwrap().as_deref(), Some(text.as_str()));
    let until = ms(guard.locked_until());
    assert_eq!(until - ms(guard.taken_at()), 10_000);
    assert!(b.try_lock("job", 10 * SEC, SEC).await.unwrap().is_none(), "held: skipped");
    assert!(b.is_locked("job").await.unwrap());

    let taken_at = ms(guard.taken_at());
    guard.unlock().await.unwrap();
    // unlocked early: max(now, taken_at + at_least_for) = taken_at + 2 s
    let stored = a.locked_until("job").await.unwrap().unwrap();
    let stored_ms = ms(UNIX_EPOCH) + parse_stored(&stored);
    assert_eq!(stored_ms, taken_at + 2_000, "{stored}");
    assert!(b.try_lock("job", 10 * SEC, SEC).await.unwrap().is_none(), "at_least_for holds");
    fixtures::eventually(5 * SEC, "taken after at_least_for", || async {
        match b.try_lock("job", 10 * SEC, Duration::ZERO).await.unwrap() {
            Some(g) => {
                g.unlock().await.unwrap();
                true
            }
            None => false,
        }
    })
    .await;
    // the node is never deleted
    assert!(fw.exists(&a.path_of("job").unwrap()).await.unwrap().is_some());
    fw.close();
    other.close();
}

/// Milliseconds since the epoch of a stored instant (`YYYY-MM-DDTHH:MM:SS.mmmZ`), computed
/// independently of the library.
fn parse_stored(s: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // days since the epoch by counting (slow, simple, independent)
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut days = 0;
    for year in 1970..y {
        days += if leap(year) { 366 } else { 365 };
    }
    let month_days = [31, if leap(y) { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    days += month_days[..(m - 1) as usize].iter().sum::<i64>() + d - 1;
    ((days * 24 + n(11..13)) * 60 + n(14..16)) * 60_000 + n(17..19) * 1000 + n(20..23)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_or_unparsable_data_counts_as_locked_and_javas_shorter_forms_parse() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let lock = locks(&fw);
    for (name, data) in [("empty", &b""[..]), ("garbage", b"locked by a script"), ("no-zone", b"2000-01-01T00:00:00")] {
        fw.create(&lock.path_of(name).unwrap(), data, CreateMode::Persistent).await.unwrap();
        assert!(lock.try_lock(name, SEC, Duration::ZERO).await.unwrap().is_none(), "{name}: counts as locked");
        assert!(lock.is_locked(name).await.unwrap(), "{name}");
    }
    // what Java's Instant.parse reads, in the past: free
    for (name, data) in [
        ("no-fraction", &b"2000-01-01T00:00:00Z"[..]),
        ("nanos", b"2000-01-01T00:00:00.123456789Z"),
        ("offset", b"2000-01-01T01:00:00.000+01:00"),
    ] {
        fw.create(&lock.path_of(name).unwrap(), data, CreateMode::Persistent).await.unwrap();
        let guard = lock.try_lock(name, SEC, Duration::ZERO).await.unwrap();
        assert!(guard.is_some(), "{name}: a past instant is free");
        guard.unwrap().unlock().await.unwrap();
    }
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_typed() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let lock = locks(&fw);
    let invalid = |r: Result<_, Error>| matches!(r, Err(Error::InvalidArgument { .. }));
    assert!(invalid(lock.try_lock("", SEC, Duration::ZERO).await.map(drop)), "empty name");
    assert!(invalid(lock.try_lock("a/b", SEC, Duration::ZERO).await.map(drop)), "a slash");
    assert!(invalid(lock.try_lock("j", SEC, 2 * SEC).await.map(drop)), "at_least_for > at_most_for");
    assert!(invalid(lock.try_lock("j", Duration::ZERO, Duration::ZERO).await.map(drop)), "zero at_most_for");
    let forever = Duration::from_secs(400 * 365 * 86_400 * 25);
    assert!(invalid(lock.try_lock("j", forever, Duration::ZERO).await.map(drop)), "past year 9999");
    assert!(matches!(ShedLock::new(&fw).root("no-slash"), Err(Error::InvalidPath { .. })));
    assert!(matches!(ShedLock::new(&fw).root("/"), Err(Error::InvalidPath { .. })));
    // nothing was written
    assert!(fw.exists(lock.root_path()).await.unwrap().is_none());

    let guard = lock.try_lock("j", SEC, Duration::ZERO).await.unwrap().unwrap();
    assert!(invalid(guard.extend(Duration::ZERO).await));
    guard.unlock().await.unwrap();

    let job = |s: Scheduled| async move { s.start(|_| async { Ok::<_, String>(()) }).await.map(drop) };
    let every = Scheduled::new(&fw, "s").every(SEC);
    assert!(invalid(job(every.clone()).await), "no at_most_for");
    assert!(invalid(job(Scheduled::new(&fw, "s").at_most_for(SEC)).await), "no schedule");
    assert!(invalid(job(Scheduled::new(&fw, "s").every(Duration::ZERO).at_most_for(SEC)).await), "zero interval");
    assert!(invalid(job(Scheduled::new(&fw, "s").cron("61 * * * *").at_most_for(SEC)).await), "bad cron");
    assert!(invalid(job(every.clone().at_most_for(SEC).at_least_for(2 * SEC)).await));
    assert!(invalid(job(Scheduled::new(&fw, "").every(SEC).at_most_for(SEC)).await), "empty name");
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_tick_alike_on_every_replica() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
    let every = Scheduled::new(&fw, "j").every(Duration::from_secs(60));
    assert_eq!(every.next_tick(at(90)).unwrap(), at(120));
    assert_eq!(every.next_tick(at(120)).unwrap(), at(180), "strictly after");
    let nightly = Scheduled::new(&fw, "j").cron("0 3 * * *");
    // 2026-01-02T03:04:05Z -> 2026-01-03T03:00:00Z
    assert_eq!(nightly.next_tick(at(1_767_323_045)).unwrap(), at(1_767_409_200));
    let seconds = Scheduled::new(&fw, "j").cron("*/10 * * * * *");
    assert_eq!(seconds.next_tick(at(1_767_323_045)).unwrap(), at(1_767_323_050));
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_least_for_holds_against_a_replica_whose_clock_is_behind() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let a = locks(&fw);
    // B's clock is 1 s behind: it fires "the same tick" 1 s late
    let b = ShedLock::new(&fw).root(a.root_path()).unwrap().clock(|| SystemTime::now() - SEC);
    // C's clock is 4 s ahead, more than at_least_for: the limit of the clock assumption
    let c = ShedLock::new(&fw).root(a.root_path()).unwrap().clock(|| SystemTime::now() + 4 * SEC);

    let guard = a.try_lock("tick", 30 * SEC, 3 * SEC).await.unwrap().unwrap();
    let taken = tokio::time::Instant::now();
    guard.unlock().await.unwrap(); // a fast job
    assert!(b.try_lock("tick", 30 * SEC, Duration::ZERO).await.unwrap().is_none(), "B late by its clock");
    tokio::time::sleep_until(taken + 1500 * Duration::from_millis(1)).await;
    assert!(b.try_lock("tick", 30 * SEC, Duration::ZERO).await.unwrap().is_none(), "B still within at_least_for");
    let early = c.try_lock("tick", SEC, Duration::ZERO).await.unwrap();
    assert!(early.is_some(), "a clock ahead by more than at_least_for takes early: the stated assumption");
    drop(early);
    // once B's own clock passes taken_at + at_least_for, it takes the lock
    fixtures::eventually(10 * SEC, "B takes once at_least_for passed by its clock", || async {
        b.try_lock("tick", 30 * SEC, Duration::ZERO).await.unwrap().is_some()
    })
    .await;
    assert!(taken.elapsed() >= 4 * SEC - Duration::from_millis(100), "not before 3 s + B's 1 s lag");
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_clock_behind_the_server_shortens_the_hold() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    // our clock is 5 s behind the server's; we write until = (now - 5 s) + 8 s
    let lock = locks(&fw).clock(|| SystemTime::now() - 5 * SEC);
    let guard = lock.try_lock("j", 8 * SEC, Duration::ZERO).await.unwrap().unwrap();
    let left = guard.deadline().saturating_duration_since(tokio::time::Instant::now());
    assert!(left <= 3 * SEC + Duration::from_millis(200), "by the server's mtime, ~3 s are left, not 8: {left:?}");
    assert!(left >= 2 * SEC, "{left:?}");
    let reason = fixtures::within(5 * SEC, guard.lost()).await;
    assert_eq!(reason, LossReason::Expired);
    assert!(matches!(guard.unlock().await, Err(Error::LockLost { reason: LossReason::Expired, .. })));
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_dies_mid_job_frees_the_name_after_at_most_for() {
    let cs = fixtures::shared_server().await;
    let dying = fixtures::framework(&cs).await;
    let fw = fixtures::framework(&cs).await;
    let root = locks(&fw).root_path().to_string();
    let guard = ShedLock::new(&dying).root(&root).unwrap().try_lock("job", 2 * SEC, Duration::ZERO).await.unwrap();
    let taken = tokio::time::Instant::now();
    // the process dies: no unlock, its session gone
    std::mem::forget(guard.unwrap());
    dying.close();
    let lock = ShedLock::new(&fw).root(&root).unwrap();
    assert!(lock.try_lock("job", SEC, Duration::ZERO).await.unwrap().is_none(), "held after its holder died");
    fixtures::eventually(5 * SEC, "free after at_most_for", || async {
        lock.try_lock("job", SEC, Duration::ZERO).await.unwrap().is_some()
    })
    .await;
    assert!(taken.elapsed() >= 2 * SEC - Duration::from_millis(50), "not before at_most_for: {:?}", taken.elapsed());
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_alive_holder_is_never_taken_over_while_alive() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let lock = locks(&fw);
    let rival = ShedLock::new(&other).root(lock.root_path()).unwrap();
    let guard = lock.try_lock("long", Duration::from_millis(1500), Duration::ZERO).await.unwrap().unwrap();
    guard.keep_alive();
    let first_until = guard.locked_until();
    let until = tokio::time::Instant::now() + 5 * SEC; // more than three times at_most_for
    while tokio::time::Instant::now() < until {
        assert!(rival.try_lock("long", SEC, Duration::ZERO).await.unwrap().is_none(), "taken over while alive");
        assert!(!guard.is_lost());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(guard.locked_until() > first_until + 3 * SEC, "extended");
    let token = guard.fencing_token();
    guard.unlock().await.unwrap();
    let next = rival.try_lock("long", SEC, Duration::ZERO).await.unwrap().expect("free once unlocked");
    assert!(next.fencing_token() > token);
    next.unlock().await.unwrap();
    fw.close();
    other.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_increase_and_a_taken_over_holder_is_told() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let lock = locks(&fw);
    let rival = ShedLock::new(&other).root(lock.root_path()).unwrap();
    let mut last = 0;
    for _ in 0..3 {
        let g = lock.try_lock("f", SEC, Duration::ZERO).await.unwrap().unwrap();
        assert!(g.fencing_token() > last);
        last = g.fencing_token();
        g.extend(2 * SEC).await.unwrap();
        assert_eq!(g.fencing_token(), last, "extending keeps the token");
        g.unlock().await.unwrap();
    }
    // a holder that stalled past at_most_for; a rival takes over
    let stalled = lock.try_lock("f", Duration::from_millis(300), Duration::ZERO).await.unwrap().unwrap();
    let watching = tokio::spawn({
        let stalled_lost = async move {
            let reason = stalled.lost().await;
            (reason, stalled)
        };
        stalled_lost
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let winner = rival.try_lock("f", 10 * SEC, Duration::ZERO).await.unwrap().expect("free after at_most_for");
    assert!(winner.fencing_token() > last);
    let (reason, stalled) = fixtures::within(5 * SEC, watching).await.unwrap();
    assert_eq!(reason, LossReason::Expired);
    assert!(matches!(stalled.extend(SEC).await, Err(Error::LockLost { .. })), "extend refused");
    let before = rival.locked_until("f").await.unwrap();
    assert!(matches!(stalled.unlock().await, Err(Error::LockLost { .. })), "unlock refused");
    assert_eq!(rival.locked_until("f").await.unwrap(), before, "the winner's instant is not overwritten");
    // a foreign write while we hold (within our instant) is a loss too
    winner.unlock().await.unwrap();
    let held = lock.try_lock("f", 10 * SEC, Duration::ZERO).await.unwrap().unwrap();
    fw.set_data(held.path(), b"2000-01-01T00:00:00.000Z", None).await.unwrap();
    assert_eq!(fixtures::within(5 * SEC, held.lost()).await, LossReason::Expired);
    fw.close();
    other.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_replicas_run_each_of_30_ticks_exactly_once() {
    const REPLICAS: usize = 16;
    const TICKS: usize = 30;
    // at_least_for defaults to half of it: a replica whose timer fires up to 500 ms late (a
    // loaded machine) still finds its tick taken
    let period = Duration::from_secs(1);
    let cs = fixtures::shared_server().await;
    let root = format!("/{}", fixtures::unique("shedlock"));
    let ran: Arc<Mutex<BTreeMap<i64, Vec<usize>>>> = Arc::default();
    let mut replicas = Vec::new();
    for replica in 0..REPLICAS {
        let fw = fixtures::framework(&cs).await;
        let ran = ran.clone();
        let job = Scheduled::new(&fw, "tick")
            .lock(ShedLock::new(&fw).root(&root).unwrap())
            .every(period)
            .at_most_for(10 * SEC)
            .start(move |ctx| {
                let ran = ran.clone();
                async move {
                    ran.lock().unwrap().entry(ms(ctx.tick)).or_default().push(replica);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<_, String>(())
                }
            })
            .await
            .unwrap();
        replicas.push((fw, job));
    }
    // every replica's outcomes, from its first event on, until it has seen TICKS + 1 ticks
    let mut seen = Vec::new();
    for (_, job) in &replicas {
        let events = job.events();
        seen.push(tokio::spawn(async move {
            let events = std::pin::pin!(events);
            events.take(TICKS + 2).collect::<Vec<TickOutcome>>().await
        }));
    }
    let mut outcomes: BTreeMap<i64, Vec<TickOutcome>> = BTreeMap::new();
    for s in seen {
        for o in fixtures::within(period * (TICKS as u32 + 10), s).await.unwrap() {
            outcomes.entry(ms(o.tick())).or_default().push(o);
        }
    }
    for (fw, job) in &replicas {
        job.close().await.unwrap();
        job.close().await.unwrap();
        fw.close();
    }
    // the ticks every replica decided
    let full: Vec<i64> = outcomes.iter().filter(|(_, v)| v.len() == REPLICAS).map(|(t, _)| *t).collect();
    assert!(full.len() >= TICKS, "{} ticks decided by all {REPLICAS} replicas", full.len());
    let ran = ran.lock().unwrap();
    for tick in &full {
        let here = &outcomes[tick];
        let runs = here.iter().filter(|o| o.ran_here()).count();
        assert_eq!(runs, 1, "tick {tick}: {here:?}");
        assert!(here.iter().all(|o| matches!(o, TickOutcome::Ran { .. } | TickOutcome::Skipped { .. })), "{here:?}");
        assert_eq!(ran.get(tick).map(Vec::len), Some(1), "tick {tick} ran by {:?}", ran.get(tick));
    }
    // no tick ran twice anywhere, also those not every replica reported
    assert!(ran.values().all(|r| r.len() == 1), "{ran:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_reports_failures_and_cancels_a_job_that_lost_its_lock() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let lock = locks(&fw);
    let failing = Scheduled::new(&fw, "failing")
        .lock(lock.clone())
        .every(Duration::from_millis(300))
        .at_most_for(5 * SEC)
        .start(|_| async { Err::<(), _>("disk full") })
        .await
        .unwrap();
    let mut events = std::pin::pin!(failing.events());
    let first = fixtures::within(5 * SEC, events.next()).await.unwrap();
    assert!(matches!(&first, TickOutcome::Failed { error, .. } if error == "disk full"), "{first:?}");
    failing.close().await.unwrap();
    // the events end once the schedule is closed, also while the handle lives
    while fixtures::within(5 * SEC, events.next()).await.is_some() {}
    assert!(fixtures::within(SEC, std::pin::pin!(failing.events()).next()).await.is_none());

    // without keep-alive, a job still running at at_most_for is cancelled
    let dropped = Arc::new(tokio::sync::Notify::new());
    let notify = dropped.clone();
    let stuck = Scheduled::new(&fw, "stuck")
        .lock(lock)
        .every(Duration::from_millis(200))
        .at_most_for(Duration::from_millis(600))
        .keep_alive(false)
        .start(move |_| {
            let notify = notify.clone();
            async move {
                struct Dropped(Arc<tokio::sync::Notify>);
                impl Drop for Dropped {
                    fn drop(&mut self) {
                        self.0.notify_one();
                    }
                }
                let _d = Dropped(notify);
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<_, String>(())
            }
        })
        .await
        .unwrap();
    let mut events = std::pin::pin!(stuck.events());
    let outcome = fixtures::within(5 * SEC, events.next()).await.unwrap();
    assert!(matches!(outcome, TickOutcome::Cancelled { reason: LossReason::Expired, .. }), "{outcome:?}");
    fixtures::within(SEC, dropped.notified()).await;
    stuck.close().await.unwrap();
    fw.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hold_outlives_a_session_and_a_dropped_guard_unlocks() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let other = fixtures::framework(&cs).await;
    let lock = locks(&fw);
    let rival = ShedLock::new(&other).root(lock.root_path()).unwrap();
    // bound to its instant, not to the session: a new session changes nothing
    let guard = lock.try_lock("s", 20 * SEC, Duration::ZERO).await.unwrap().unwrap();
    zk_recipes_testing::expire_session(&fw).await.unwrap();
    fw.wait_connected(10 * SEC).await.unwrap();
    assert!(!guard.is_lost(), "{:?}", guard.loss());
    assert!(rival.try_lock("s", SEC, Duration::ZERO).await.unwrap().is_none());
    guard.extend(20 * SEC).await.unwrap();
    guard.unlock().await.unwrap();
    // a dropped guard unlocks in the background (at_least_for 0: free at once)
    let dropped = lock.try_lock("d", 20 * SEC, Duration::ZERO).await.unwrap().unwrap();
    drop(dropped);
    fixtures::eventually(5 * SEC, "free after the background unlock", || async {
        rival.try_lock("d", SEC, Duration::ZERO).await.unwrap().is_some()
    })
    .await;
    fw.close();
    other.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_framework_is_a_loss() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let guard = locks(&fw).try_lock("c", 20 * SEC, Duration::ZERO).await.unwrap().unwrap();
    let watching = tokio::spawn(async move { guard.lost().await });
    tokio::time::sleep(Duration::from_millis(200)).await; // the node watch is set
    fw.close();
    assert_eq!(fixtures::within(5 * SEC, watching).await.unwrap(), LossReason::Closed);
}
