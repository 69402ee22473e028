//! Leader latch and selector beside foreign children. Rule: the lock engine's — a child whose
//! name does not end with `latch-` (selector: `lock-`) and a ZooKeeper sequence takes no part:
//! it neither leads nor is reported as a participant.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_recipes::{LeaderLatch, LeaderSelector};

use crate::support::{self, live, plant, plant_junk};

/// Regression: a node named `latch-` (no sequence) led the latch forever: no real
/// participant ever had leadership.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_node_without_a_sequence_does_not_lead() {
    let fw = support::framework().await;
    let path = support::base("latch-nosequence");
    plant(&fw, &path, "latch-", b"impostor", false).await;
    let latch = LeaderLatch::new(&fw, &path, "real").unwrap();
    latch.start().await.unwrap();
    latch.await_leadership_timeout(Duration::from_secs(5)).await.expect("the real participant leads");
    let leader = latch.leader().await.unwrap().expect("a leader");
    assert_eq!(leader.id, "real", "the junk is not reported as the leader");
    assert_eq!(latch.participants().await.unwrap().len(), 1);
    latch.close().await.unwrap();
    fw.close();
}

/// Regression: a node named `_c_x-lock-` (no sequence) under a selector's path led it
/// forever: the selector never ran its task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_node_without_a_sequence_does_not_lead() {
    let fw = support::framework().await;
    let path = support::base("selector-nosequence");
    plant(&fw, &path, "_c_x-lock-", b"impostor", false).await;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    let selector = LeaderSelector::new(&fw, &path, "real", move |_ctx| {
        let tx = tx.lock().unwrap().take();
        async move {
            if let Some(tx) = tx {
                let _ = tx.send(());
            }
        }
    })
    .unwrap();
    selector.start().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), rx).await.expect("the real participant leads").unwrap();
    selector.close().await.unwrap();
    fw.close();
}

/// Property: 3 latches (one process each) beside random junk (re-created meanwhile): one of
/// them leads within the bound, never two at once, the reported leader is a real one, and
/// leadership passes on as each leader closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latches_elect_one_real_leader_beside_random_junk() {
    let mut rng = support::rng("latch");
    for round in 0..5 {
        let path = support::base(&format!("latches-{round}"));
        let fws = [support::framework().await, support::framework().await, support::framework().await];
        let n = rng.usize(1..6);
        let junk = plant_junk(&mut rng, &fws[0], &path, "latch-", n).await;
        let churn = support::churn(&fws[0], &path, junk.clone(), rng.u64(..));
        let latches: Vec<LeaderLatch> =
            fws.iter().enumerate().map(|(i, fw)| LeaderLatch::new(fw, &path, &format!("p{i}")).unwrap()).collect();
        for l in &latches {
            l.start().await.unwrap();
        }
        let mut open: Vec<&LeaderLatch> = latches.iter().collect();
        while !open.is_empty() {
            let leader = live(&format!("round {round}: a leader among {} (junk {junk:?})", open.len()), async {
                loop {
                    if let Some(i) = open.iter().position(|l| l.has_leadership()) {
                        break i;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await;
            let leaders = open.iter().filter(|l| l.has_leadership()).count();
            assert_eq!(leaders, 1, "one leader at a time");
            let reported = open[leader].leader().await.unwrap().expect("a leader is reported");
            assert!(reported.id.starts_with('p'), "the reported leader is real: {reported:?}");
            open.remove(leader).close().await.unwrap();
        }
        support::stop_churn(churn).await;
        for fw in fws {
            fw.close();
        }
    }
}

/// Property: 3 selectors (auto-requeue) beside random junk run 9 leaderships in all, one at a
/// time, within the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_lead_one_at_a_time_beside_random_junk() {
    let mut rng = support::rng("selector");
    let path = support::base("selectors");
    let fws = [support::framework().await, support::framework().await, support::framework().await];
    let junk = plant_junk(&mut rng, &fws[0], &path, "lock-", 4).await;
    let churn = support::churn(&fws[0], &path, junk.clone(), rng.u64(..));
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let mut selectors = Vec::new();
    for (i, fw) in fws.iter().enumerate() {
        let (inside, most, runs) = (inside.clone(), most.clone(), runs.clone());
        let s = LeaderSelector::new(fw, &path, &format!("s{i}"), move |_ctx| {
            let (inside, most, runs) = (inside.clone(), most.clone(), runs.clone());
            async move {
                most.fetch_max(inside.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                runs.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap()
        .auto_requeue();
        s.start().await.unwrap();
        selectors.push(s);
    }
    live(&format!("9 leaderships beside junk {junk:?}"), async {
        while runs.load(Ordering::SeqCst) < 9 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    for s in &selectors {
        s.close().await.unwrap();
    }
    support::stop_churn(churn).await;
    assert_eq!(most.load(Ordering::SeqCst), 1, "never two leaders at once");
    for fw in fws {
        fw.close();
    }
}
