//! Leader election against real ZooKeeper: latch and selector, with failover.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use zk_recipes::leader::CloseMode;
use zk_recipes::leader::LeadershipEnd;
use zk_recipes::{Error, Framework, LeaderLatch, LeaderSelector, Leadership, LossReason};
use zk_recipes_testing::fixtures;
use zk_recipes_testing::{expire_session, TestingCluster};

const WAIT: Duration = Duration::from_secs(20);

/// Samples `has_leadership` of all latches every few ms; records the largest number of
/// simultaneous leaders seen, leaving out the latch marked in `ending` (index + 1; 0: none).
fn watch_leaders(latches: Vec<LeaderLatch>) -> (Arc<AtomicUsize>, Arc<AtomicBool>, tokio::task::JoinHandle<()>) {
    watch_leaders_but(latches, Arc::new(AtomicUsize::new(0)))
}

/// [`watch_leaders`], leaving out the latch whose index + 1 is in `ending`: its session is being
/// ended by the server, which deletes its node and tells the other sessions before this one
/// hears of it (ZooKeeper's order); until it hears, its view lags, and its fencing token is what
/// protects the resource.
fn watch_leaders_but(
    latches: Vec<LeaderLatch>,
    ending: Arc<AtomicUsize>,
) -> (Arc<AtomicUsize>, Arc<AtomicBool>, tokio::task::JoinHandle<()>) {
    let most = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (m, s) = (most.clone(), stop.clone());
    let task = tokio::spawn(async move {
        while !s.load(Ordering::SeqCst) {
            let skip = ending.load(Ordering::SeqCst);
            let n = latches.iter().enumerate().filter(|(i, l)| i + 1 != skip && l.has_leadership()).count();
            m.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    (most, stop, task)
}

async fn wait_for_one_leader(latches: &[LeaderLatch]) -> usize {
    let leader = std::cell::Cell::new(None);
    fixtures::eventually(WAIT, "a leader elected", || async {
        let leaders: Vec<usize> = (0..latches.len()).filter(|i| latches[*i].has_leadership()).collect();
        assert!(leaders.len() <= 1, "two leaders: {leaders:?}");
        leader.set(leaders.first().copied());
        leader.get().is_some()
    })
    .await;
    leader.get().expect("one leader")
}

#[tokio::test]
async fn one_leader_then_the_next_on_close_with_increasing_tokens() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("latch"));
    let mut latches = Vec::new();
    for i in 0..3 {
        let fw = fixtures::framework(&cs).await;
        let latch = LeaderLatch::new(&fw, &path, &format!("node-{i}")).unwrap();
        latch.start().await.unwrap();
        assert!(matches!(latch.start().await, Err(Error::InvalidState(_))), "start twice");
        latches.push(latch);
    }
    // every latch has queued its node before the rounds start
    fixtures::eventually(WAIT, "latches never queued", || async {
        latches[0].participants().await.unwrap().len() >= 3
    })
    .await;
    let mut last_token = i64::MIN;
    for round in 0..3 {
        let leader = wait_for_one_leader(&latches).await;
        let token = latches[leader].leadership().expect("a leader has its leadership").fencing_token();
        assert!(token > last_token, "round {round}: token {token} after {last_token}");
        last_token = token;
        let participants = latches[leader].participants().await.unwrap();
        assert_eq!(participants.len(), 3 - round);
        assert_eq!(participants[0].id, latches[leader].id());
        assert!(participants[0].is_leader && !participants[1..].iter().any(|p| p.is_leader));
        assert_eq!(latches[leader].leader().await.unwrap().unwrap().id, latches[leader].id());
        let closing = latches.remove(leader);
        closing.close().await.unwrap();
        assert!(!closing.has_leadership());
        if latches.is_empty() {
            break;
        }
    }
}

#[tokio::test]
async fn await_leadership_and_change_stream_and_silent_close() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("latch-stream"));
    let fw = fixtures::framework(&cs).await;
    let a = LeaderLatch::new(&fw, &path, "a").unwrap();
    let mut changes = Box::pin(a.leadership_changes());
    a.start().await.unwrap();
    let held = a.await_leadership_timeout(WAIT).await.unwrap();
    let first = tokio::time::timeout(WAIT, changes.next()).await.unwrap().unwrap();
    assert_eq!(first.as_ref(), Some(&held), "the stream tells of the leadership await_leadership returned");
    // the watch::Receiver holds the same current state
    let mut current = a.watch();
    assert_eq!(*current.borrow_and_update(), first);
    let b = LeaderLatch::new(&fw, &path, "b").unwrap();
    b.start().await.unwrap();
    assert!(!fixtures::in_time(b.await_leadership_timeout(Duration::from_millis(300)).await));
    a.close_with(CloseMode::NotifyLeader).await.unwrap();
    let ended = tokio::time::timeout(WAIT, changes.next()).await.unwrap().unwrap();
    assert_eq!(ended, None);
    tokio::time::timeout(WAIT, current.changed()).await.unwrap().unwrap();
    assert_eq!(*current.borrow(), ended, "the receiver sees the end too");
    a.close().await.unwrap(); // closing again is fine
    b.await_leadership().await.unwrap();
    let mut b_changes = Box::pin(b.leadership_changes());
    b.close_with(CloseMode::Silent).await.unwrap();
    assert!(!b.has_leadership());
    assert!(
        tokio::time::timeout(Duration::from_millis(300), b_changes.next()).await.is_err(),
        "a silent close tells nobody"
    );
}

/// `await_leadership_timeout` (and `await_leadership`) end by the deadline of a caller's
/// `with_deadline` scope when it comes before their own, as every other wait does; the latch
/// stays in the election and leads once the leader goes.
#[tokio::test]
async fn awaiting_leadership_ends_by_the_callers_deadline() {
    const SCOPE: Duration = Duration::from_millis(400);
    const SLACK: Duration = Duration::from_secs(1);
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("latch-scope"));
    let fw = fixtures::framework(&cs).await;
    let leader = LeaderLatch::new(&fw, &path, "leader").unwrap();
    leader.start().await.unwrap();
    leader.await_leadership_timeout(WAIT).await.unwrap();
    let follower = LeaderLatch::new(&fw, &path, "follower").unwrap();
    follower.start().await.unwrap();
    for timeout in [Some(Duration::from_secs(3_600)), Some(Duration::MAX), None] {
        let started = tokio::time::Instant::now();
        let waited = zk_recipes::with_deadline(SCOPE, async {
            match timeout {
                Some(timeout) => follower.await_leadership_timeout(timeout).await,
                None => follower.await_leadership().await,
            }
        });
        // a wait that ignored the scope is cut here, well after the scope's deadline + slack
        let waited = tokio::time::timeout(SCOPE + SLACK * 3, waited).await;
        let took = started.elapsed();
        assert!(
            matches!(&waited, Ok(Err(e)) if e.is_timeout()),
            "timeout {timeout:?} under a {SCOPE:?} scope: {waited:?} after {took:?}"
        );
        assert!(took <= SCOPE + SLACK, "timeout {timeout:?}: returned after {took:?}, past the scope's deadline");
    }
    assert_eq!(follower.participants().await.unwrap().len(), 2, "the follower stays in the election");
    leader.close().await.unwrap();
    follower.await_leadership_timeout(WAIT).await.expect("the follower leads once the leader has gone");
    follower.close().await.unwrap();
}

#[tokio::test]
async fn exactly_one_leader_while_the_leaders_session_expires() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("latch-expire"));
    let mut latches = Vec::new();
    let mut frameworks = Vec::new();
    for i in 0..5 {
        let fw = fixtures::framework(&cs).await;
        let latch = LeaderLatch::new(&fw, &path, &format!("p{i}")).unwrap();
        latch.start().await.unwrap();
        latches.push(latch);
        frameworks.push(fw);
    }
    let ending = Arc::new(AtomicUsize::new(0));
    let (most, stop, sampler) = watch_leaders_but(latches.clone(), ending.clone());
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let leader = wait_for_one_leader(&latches).await;
        tokens.push(latches[leader].leadership().unwrap().fencing_token());
        ending.store(leader + 1, Ordering::SeqCst);
        expire_session(&frameworks[leader]).await.unwrap();
        // the expired leader stops leading at once: by the time its expiry is done
        assert!(
            !latches[leader].has_leadership()
                || latches[leader].leadership().map(|l| l.fencing_token()) != tokens.last().copied()
        );
        ending.store(0, Ordering::SeqCst);
    }
    wait_for_one_leader(&latches).await;
    stop.store(true, Ordering::SeqCst);
    sampler.await.unwrap();
    // (a leader in every round: wait_for_one_leader; the sampler may have seen it only while
    // its session was ending, when it is left out)
    assert!(most.load(Ordering::SeqCst) <= 1, "never two leaders at once");
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens increase: {tokens:?}");
    for l in &latches {
        l.close().await.unwrap();
    }
}

#[tokio::test]
async fn exactly_one_leader_while_the_leaders_server_is_killed() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let cs = cluster.connect_string().to_string();
    let path = "/election";
    let mut latches = Vec::new();
    let mut frameworks = Vec::new();
    for i in 0..5 {
        let fw = fixtures::framework(&cs).await;
        let latch = LeaderLatch::new(&fw, path, &format!("p{i}")).unwrap();
        latch.start().await.unwrap();
        latches.push(latch);
        frameworks.push(fw);
    }
    let (most, stop, sampler) = watch_leaders(latches.clone());
    let leader = wait_for_one_leader(&latches).await;
    let token = latches[leader].leadership().unwrap().fencing_token();
    let server = fixtures::server_of_session(&cluster, frameworks[leader].status().session_id).await.expect("server");
    cluster.kill(server).unwrap();
    // the leader's connection dropped: it gives up leadership (standard policy); someone leads
    // again after the ensemble recovers (a new leader, or the same one with a new token)
    fixtures::eventually(WAIT, "new leadership after the kill", || async {
        let now = (0..5).find(|i| latches[*i].has_leadership());
        now.and_then(|i| latches[i].leadership()).is_some_and(|l| l.fencing_token() > token)
    })
    .await;
    cluster.restart(server).await.unwrap();
    stop.store(true, Ordering::SeqCst);
    sampler.await.unwrap();
    assert_eq!(most.load(Ordering::SeqCst), 1, "never two leaders at once");
}

#[tokio::test]
async fn selector_runs_the_task_and_cancels_it_on_loss_or_interrupt() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("selector"));
    let fw = fixtures::framework(&cs).await;
    let running = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let (r, n) = (running.clone(), runs.clone());
    let selector = LeaderSelector::new(&fw, &path, "worker-1", move |ctx| {
        let (r, n) = (r.clone(), n.clone());
        async move {
            assert!(ctx.fencing_token() > 0);
            n.fetch_add(1, Ordering::SeqCst);
            r.fetch_add(1, Ordering::SeqCst);
            struct Done(Arc<AtomicUsize>);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.fetch_sub(1, Ordering::SeqCst);
                }
            }
            let _done = Done(r);
            std::future::pending::<()>().await; // leads until cancelled
        }
    })
    .unwrap()
    .auto_requeue();
    let mut ends = selector.leadership_ends();
    selector.start().await.unwrap();
    fixtures::eventually(WAIT, "the selector leads", || async { selector.has_leadership() }).await;
    assert_eq!(selector.leader().await.unwrap().unwrap().id, "worker-1");
    let first_token = selector.fencing_token().unwrap();
    // interrupt: the task is cancelled (dropped), leadership released, then requeued
    selector.interrupt_leadership();
    let end = tokio::time::timeout(WAIT, ends.wait_for(|e| e.is_some())).await.unwrap().unwrap().unwrap();
    assert_eq!(end, LeadershipEnd::Interrupted);
    ends.borrow_and_update();
    fixtures::eventually(WAIT, "requeued leadership", || async {
        selector.fencing_token().is_some_and(|t| t != first_token)
    })
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(running.load(Ordering::SeqCst), 1, "the first task was dropped");
    // session expiry: the task is cancelled with the loss
    expire_session(&fw).await.unwrap();
    tokio::time::timeout(WAIT, ends.changed()).await.unwrap().unwrap();
    assert!(matches!(*ends.borrow(), Some(LeadershipEnd::Lost(_))), "{:?}", *ends.borrow());
    // requeued after the loss: a new task runs (under load the new session may be lost
    // again, and then requeued again: wait for a running task, at most one at a time)
    fixtures::eventually(WAIT, "requeued after the loss", || async {
        let done = runs.load(Ordering::SeqCst) >= 3 && running.load(Ordering::SeqCst) == 1;
        assert!(done || running.load(Ordering::SeqCst) <= 1, "two leadership tasks at once");
        done
    })
    .await;
    selector.close().await.unwrap();
    assert_eq!(running.load(Ordering::SeqCst), 0, "close resolves once the task is cancelled");
    assert!(!selector.has_leadership() && selector.fencing_token().is_none());
    selector.close().await.unwrap(); // idempotent
    fixtures::settle(&[&fw]).await;
    assert!(selector.participants().await.unwrap().is_empty(), "our node is gone after close");
}

#[tokio::test]
async fn selector_without_requeue_leads_once_and_bad_input() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("selector-once"));
    let fw = fixtures::framework(&cs).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let n = runs.clone();
    let selector = LeaderSelector::new(&fw, &path, "once", move |_| {
        let n = n.clone();
        async move {
            n.fetch_add(1, Ordering::SeqCst);
        }
    })
    .unwrap();
    let mut ends = selector.leadership_ends();
    selector.start().await.unwrap();
    tokio::time::timeout(WAIT, ends.wait_for(|e| *e == Some(LeadershipEnd::Finished))).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "no requeue without auto_requeue");
    assert!(!selector.has_leadership());
    selector.requeue();
    fixtures::eventually(WAIT, "requeue() leads again", || async { runs.load(Ordering::SeqCst) >= 2 }).await;
    assert!(matches!(LeaderLatch::new(&fw, "relative", "x"), Err(Error::InvalidPath { .. })));
    assert!(matches!(LeaderSelector::new(&fw, "/a/", "x", |_| async {}), Err(Error::InvalidPath { .. })));
}

#[tokio::test]
async fn observe_reports_the_leader_and_each_change() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("observe"));
    let watcher_fw = fixtures::framework(&cs).await;
    let mut leaders = Box::pin(LeaderLatch::observe(&watcher_fw, &path));
    let first = tokio::time::timeout(WAIT, leaders.next()).await.unwrap();
    assert_eq!(first.unwrap().unwrap(), None, "nobody leads a missing path");
    let fw = fixtures::framework(&cs).await;
    let a = LeaderLatch::new(&fw, &path, "a").unwrap();
    a.start().await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, leaders.next()).await.unwrap().unwrap().unwrap().unwrap().id, "a");
    let b = LeaderLatch::new(&fw, &path, "b").unwrap();
    b.start().await.unwrap();
    b.participants().await.unwrap();
    a.close().await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, leaders.next()).await.unwrap().unwrap().unwrap().unwrap().id, "b");
    b.close().await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, leaders.next()).await.unwrap().unwrap().unwrap(), None);
}

/// The czxid of `leadership`'s node, read by another framework.
async fn czxid(fw: &Framework, leadership: &Leadership) -> i64 {
    fw.exists(leadership.node()).await.unwrap().expect("the leadership's node exists").czxid
}

/// `lost()` has not resolved (within a short while).
async fn not_lost(leadership: &Leadership) {
    assert!(!leadership.is_lost() && leadership.loss().is_none());
    let early = tokio::time::timeout(Duration::from_millis(200), leadership.lost()).await;
    assert!(early.is_err(), "lost() resolved while leading: {early:?}");
}

/// What `await_leadership` returns is that leadership: its token is its node's czxid, and
/// `lost()` resolves when the latch closes (at once for a later call); `is_lost()` needs no
/// prior `lost()`.
#[tokio::test]
async fn await_leadership_returns_the_leadership_which_is_lost_on_close() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("held-close"));
    let (fw, reader) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let latch = LeaderLatch::new(&fw, &path, "a").unwrap();
    latch.start().await.unwrap();
    let leadership = latch.await_leadership_timeout(WAIT).await.unwrap();
    assert_eq!(leadership.fencing_token(), czxid(&reader, &leadership).await, "the token is that node's czxid");
    assert!(leadership.node().starts_with(&format!("{path}/")));
    assert_eq!(latch.leadership().as_ref(), Some(&leadership), "the latch holds the same leadership");
    assert_eq!(latch.await_leadership().await.unwrap(), leadership, "leading already: the same one at once");
    not_lost(&leadership).await;
    let watcher = leadership.clone();
    let ended = tokio::spawn(async move { watcher.lost().await });
    latch.close().await.unwrap();
    // known at once, without a call to lost() on this value
    assert_eq!(leadership.loss(), Some(LossReason::Closed));
    assert!(leadership.is_lost());
    assert_eq!(tokio::time::timeout(WAIT, ended).await.unwrap().unwrap(), LossReason::Closed);
    assert_eq!(tokio::time::timeout(WAIT, leadership.lost()).await.unwrap(), LossReason::Closed, "at once after");
    assert_eq!(latch.leadership(), None);
}

/// Our node deleted by another client: `lost()` resolves with `NodeDeleted`; the latch queues
/// again, and the next `await_leadership` returns a new leadership with a larger token while
/// the old one stays lost.
#[tokio::test]
async fn a_deleted_node_ends_the_leadership_and_the_next_one_is_a_new_value() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("held-deleted"));
    let (fw, other) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let latch = LeaderLatch::new(&fw, &path, "a").unwrap();
    latch.start().await.unwrap();
    let first = latch.await_leadership_timeout(WAIT).await.unwrap();
    assert_eq!(first.fencing_token(), czxid(&other, &first).await);
    not_lost(&first).await;
    other.delete(first.node()).await.unwrap();
    let observer = first.clone();
    // is_lost() turns true by itself (nobody awaits lost() on any clone meanwhile)
    fixtures::eventually(WAIT, "the deletion is known", || async { observer.is_lost() }).await;
    assert_eq!(first.loss(), Some(LossReason::NodeDeleted));
    assert_eq!(tokio::time::timeout(WAIT, first.lost()).await.unwrap(), LossReason::NodeDeleted);
    let second = latch.await_leadership_timeout(WAIT).await.unwrap();
    assert_ne!(second, first);
    assert!(
        second.fencing_token() > first.fencing_token(),
        "{} after {}",
        second.fencing_token(),
        first.fencing_token()
    );
    assert_eq!(second.fencing_token(), czxid(&other, &second).await);
    assert!(first.is_lost(), "the old leadership stays lost");
    not_lost(&second).await;
    latch.close().await.unwrap();
    assert!(second.is_lost());
}

/// The session expires: the leadership is lost by the time the expiry is done, without a call
/// to `lost()`; the latch leads again in the new session with a larger token.
#[tokio::test]
async fn an_expired_session_ends_the_leadership() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("held-expired"));
    let (fw, reader) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let latch = LeaderLatch::new(&fw, &path, "a").unwrap();
    latch.start().await.unwrap();
    let first = latch.await_leadership_timeout(WAIT).await.unwrap();
    not_lost(&first).await;
    expire_session(&fw).await.unwrap();
    // Which sign of the end comes first is the server's order: the framework, moved off its
    // session by the kit's impostor, may reconnect to it before the impostor's close lands; the
    // close then deletes the node under the latch's watch (NodeDeleted) before the connection
    // drops (Suspended) and the session is reported gone (SessionLost). Each is the truth.
    let reason = first.loss();
    let ended = |r: &LossReason| matches!(r, LossReason::SessionLost | LossReason::Suspended | LossReason::NodeDeleted);
    assert!(reason.as_ref().is_some_and(ended), "{reason:?}");
    let told = tokio::time::timeout(WAIT, first.lost()).await.unwrap();
    assert!(ended(&told), "{told:?}");
    assert_eq!(Some(told), reason, "one loss, reported the same each time");
    let second = latch.await_leadership_timeout(WAIT).await.unwrap();
    assert!(second.fencing_token() > first.fencing_token());
    assert_eq!(second.fencing_token(), czxid(&reader, &second).await);
    assert!(first.is_lost() && !second.is_lost());
    latch.close().await.unwrap();
}

/// A selector's context derefs to its `Leadership`: the token is the node's czxid, and a clone
/// kept past the task tells when that leadership ended (interrupted: `Closed`).
#[tokio::test]
async fn a_selectors_context_is_its_leadership() {
    let cs = fixtures::shared_server().await;
    let path = format!("/{}", fixtures::unique("held-selector"));
    let (fw, reader) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let selector = LeaderSelector::new(&fw, &path, "worker", move |ctx| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(ctx.clone());
            std::future::pending::<()>().await;
        }
    })
    .unwrap();
    selector.start().await.unwrap();
    let ctx = tokio::time::timeout(WAIT, rx.recv()).await.unwrap().unwrap();
    assert_eq!(ctx.id(), "worker");
    assert_eq!(ctx.fencing_token(), czxid(&reader, ctx.leadership()).await);
    assert_eq!(selector.fencing_token(), Some(ctx.fencing_token()));
    not_lost(&ctx).await;
    selector.interrupt_leadership();
    assert_eq!(tokio::time::timeout(WAIT, ctx.lost()).await.unwrap(), LossReason::Closed);
    assert!(ctx.is_lost());
    selector.close().await.unwrap();
}
