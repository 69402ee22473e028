//! Barriers beside foreign children and corrupt data. Rules: a barrier is its node's
//! existence — data and children are ignored; a double barrier's members are the children
//! named by a UUID (ours and Curator's), so any other child but `ready` is foreign: it counts
//! neither to open the barrier nor as a member still to leave.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use zk_recipes::CreateMode;
use zk_recipes::{DistributedBarrier, DistributedDoubleBarrier};

use crate::support::{self, junk_data, live, plant, plant_junk};

/// Regression: one persistent junk child of a double barrier (`foo`) counted as a member:
/// the barrier opened one member early, and every leave waited for it forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_junk_child_is_no_double_barrier_member() {
    let fw = support::framework().await;
    let path = support::base("double-junk");
    plant(&fw, &path, "foo", b"", false).await;
    let fws = [support::framework().await, support::framework().await];
    let a = DistributedDoubleBarrier::new(&fws[0], &path, 2).unwrap();
    let b = DistributedDoubleBarrier::new(&fws[1], &path, 2).unwrap();
    // alone, a does not enter: the junk is no second member
    assert!(a.enter_timeout(std::time::Duration::from_millis(500)).await.is_err(), "opened with a junk member");
    let (ea, eb) = tokio::join!(a.enter(), b.enter());
    ea.unwrap();
    eb.unwrap();
    let (la, lb) = live("leaving beside a junk child", async { tokio::join!(a.leave(), b.leave()) }).await;
    la.unwrap();
    lb.unwrap();
    for f in fws {
        f.close();
    }
    fw.close();
}

/// Property: 3 members of a double barrier beside random junk children (re-created
/// meanwhile) enter together and leave together, round after round, within the bound; a
/// barrier with junk data and children holds its waiters until removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barriers_hold_and_release_beside_random_junk() {
    let mut rng = support::rng("barriers");
    let fws = [support::framework().await, support::framework().await, support::framework().await];
    for round in 0..3 {
        let path = support::base(&format!("double-{round}"));
        let junk = plant_junk(&mut rng, &fws[0], &path, "ready", 4).await;
        let churn = support::churn(&fws[0], &path, junk.clone(), rng.u64(..));
        let (arrived, entered) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut members = Vec::new();
        for f in &fws {
            let (f, path, arrived, entered) = (f.clone(), path.clone(), arrived.clone(), entered.clone());
            members.push(tokio::spawn(async move {
                let m = DistributedDoubleBarrier::new(&f, &path, 3).unwrap();
                arrived.fetch_add(1, Ordering::SeqCst);
                m.enter().await.unwrap();
                assert_eq!(arrived.load(Ordering::SeqCst), 3, "entered before all three arrived");
                entered.fetch_add(1, Ordering::SeqCst);
                m.leave().await.unwrap();
            }));
        }
        live(&format!("round {round}: enter and leave beside {junk:?}"), async {
            for m in members {
                m.await.unwrap();
            }
        })
        .await;
        support::stop_churn(churn).await;
        assert_eq!(entered.load(Ordering::SeqCst), 3);
    }
    // the plain barrier: its data and children mean nothing
    let path = support::base("barrier");
    let data = junk_data(&mut rng);
    fws[0].create(&path, &data, CreateMode::Persistent).await.unwrap();
    plant_junk(&mut rng, &fws[0], &path, "ready", 3).await;
    let waiter = {
        let (f, path) = (fws[1].clone(), path.clone());
        tokio::spawn(async move { DistributedBarrier::new(&f, &path).unwrap().wait_on_barrier().await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "a set barrier with junk in it let a waiter through");
    for c in fws[0].children(&path).await.unwrap() {
        fws[0].delete(&format!("{path}/{c}")).await.unwrap();
    }
    DistributedBarrier::new(&fws[0], &path).unwrap().remove_barrier().await.unwrap();
    live("the barrier's waiter", waiter).await.unwrap().unwrap();
    for f in fws {
        f.close();
    }
}
