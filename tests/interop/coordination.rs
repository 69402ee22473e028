//! Coordination recipes shared with a real Apache Curator 5.4 process on the same paths:
//! SharedCount, DistributedDoubleBarrier and DistributedBarrier.
//!
//! One Curator JVM (`CuratorPeer::shared`) serves every test of this binary; each test uses
//! its own client ids and paths on the shared ZooKeeper server.

use std::sync::Arc;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use futures_util::StreamExt;
use zk_recipes::{DistributedBarrier, DistributedDoubleBarrier, Error, Framework, SharedCount};
use zk_recipes_testing::fixtures;

const LONG: Duration = Duration::from_secs(20);
const BLOCKED: Duration = Duration::from_millis(300);

async fn framework(cs: &str) -> Framework {
    fixtures::framework_with(cs, |builder| {
        builder.session_timeout(Duration::from_secs(10)).default_data(b"127.0.0.1".to_vec())
    })
    .await
}

/// How long a whole test may take.
const TEST_LIMIT: Duration = Duration::from_secs(90);

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit() && !c.is_ascii_uppercase(),
        })
}

/// Children of `path` (none when it is gone).
async fn children(fw: &Framework, path: &str) -> Vec<String> {
    match fw.children(path).await {
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Vec::new(),
        other => other.unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_increments_from_curator_and_from_us_add_up() {
    let cs = fixtures::shared_server().await;
    fixtures::within(TEST_LIMIT, async {
        let peer = crate::peer().await;
        let path = format!("/{}/count", fixtures::unique("interop-count"));
        const N: i32 = 25;
        peer.connect("sc-j1", &cs).await.unwrap();
        peer.connect("sc-j2", &cs).await.unwrap();
        let ours = [framework(&cs).await, framework(&cs).await];
        let count = SharedCount::new(&ours[0], &path, 0).unwrap();
        count.start().await.unwrap();
        let mut changes = Box::pin(count.changes());
        assert_eq!(changes.next().await.unwrap().unwrap().value, 0);

        let java = |cid: &'static str| {
            let (peer, path) = (peer.clone(), path.clone());
            async move {
                for _ in 0..N {
                    peer.shared_count_add(cid, &path, 1).await.unwrap();
                }
            }
        };
        let rust = |fw: Framework| {
            let path = path.clone();
            async move {
                let count = SharedCount::new(&fw, &path, 0).unwrap();
                let (mut done, mut conflicts) = (0, 0);
                while done < N {
                    let current = count.get().await.unwrap();
                    if count.try_set(&current, current.value + 1).await.unwrap() {
                        done += 1;
                    } else {
                        conflicts += 1;
                    }
                }
                conflicts
            }
        };
        let started = tokio::time::Instant::now();
        let ((), (), c1, c2) = tokio::join!(java("sc-j1"), java("sc-j2"), rust(ours[0].clone()), rust(ours[1].clone()));
        println!("4 x {N} increments (2 Curator, 2 ours) in {:?}; our conflicts {c1} + {c2}", started.elapsed());
        assert_eq!(peer.shared_count_get("sc-j1", &path).await.unwrap(), 4 * N, "Curator's view");
        assert_eq!(count.get().await.unwrap().value, 4 * N, "our view");

        // the stream has followed (coalescing allowed): its latest value is the total
        let mut latest = None;
        while let Ok(Some(item)) = tokio::time::timeout(BLOCKED, changes.next()).await {
            latest = Some(item.unwrap().value);
        }
        assert_eq!(latest, Some(4 * N));
        // and it sees a write by Curator alone
        assert_eq!(peer.shared_count_add("sc-j2", &path, -100).await.unwrap(), 4 * N - 100);
        let seen = tokio::time::timeout(LONG, changes.next()).await.expect("change in time").unwrap().unwrap();
        assert_eq!(seen.value, 4 * N - 100);
        // Curator reads what we set
        count.set(i32::MIN).await.unwrap();
        assert_eq!(peer.shared_count_get("sc-j2", &path).await.unwrap(), i32::MIN);

        peer.close("sc-j1").await.unwrap();
        peer.close("sc-j2").await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_with_curator_and_our_members_opens_and_closes() {
    let cs = fixtures::shared_server().await;
    fixtures::within(TEST_LIMIT, async {
        let peer = crate::peer().await;
        peer.connect("dbi-j1", &cs).await.unwrap();
        peer.connect("dbi-j2", &cs).await.unwrap();
        let ours = [framework(&cs).await, framework(&cs).await];
        let inspector = framework(&cs).await;
        // round 0: a Curator member arrives last; round 1: one of ours arrives last
        for round in 0..2 {
            let path = format!("/{}", fixtures::unique("interop-double"));
            let rust_members: Vec<_> =
                ours.iter().map(|fw| Arc::new(DistributedDoubleBarrier::new(fw, &path, 4).unwrap())).collect();
            let java_enter = |cid: &'static str| {
                let (peer, path) = (peer.clone(), path.clone());
                tokio::spawn(
                    async move { peer.dbarrier_enter(cid, "d", &path, 4, LONG).await.map_err(|e| e.to_string()) },
                )
            };
            let rust_enter = |m: &Arc<DistributedDoubleBarrier>| {
                let m = m.clone();
                tokio::spawn(async move { fixtures::finished(m.enter_timeout(LONG).await).map_err(|e| e.to_string()) })
            };
            let (first_three, last) = if round == 0 {
                (vec![rust_enter(&rust_members[0]), rust_enter(&rust_members[1]), java_enter("dbi-j1")], "dbi-j2")
            } else {
                (vec![java_enter("dbi-j1"), java_enter("dbi-j2"), rust_enter(&rust_members[0])], "ours")
            };
            tokio::time::sleep(BLOCKED).await;
            assert!(first_three.iter().all(|t| !t.is_finished()), "round {round}: passed with 3 of 4");
            let mut entered = first_three;
            entered.push(if last == "ours" { rust_enter(&rust_members[1]) } else { java_enter(last) });
            for t in entered {
                assert!(t.await.unwrap().unwrap(), "round {round}: a member did not enter");
            }
            // the layout both sides wrote: 4 ephemeral uuid members and a persistent `ready`
            let names = children(&inspector, &path).await;
            assert_eq!(names.len(), 5, "round {round}: {names:?}");
            for name in &names {
                let (_, stat) = inspector.get_data(&format!("{path}/{name}")).await.unwrap();
                if name == "ready" {
                    assert_eq!(stat.ephemeral_owner, 0);
                } else {
                    assert!(is_uuid(name), "{name}");
                    assert_ne!(stat.ephemeral_owner, 0);
                }
            }

            // all leave together
            let java_leave = |cid: &'static str| {
                let peer = peer.clone();
                tokio::spawn(async move { peer.dbarrier_leave(cid, "d", LONG).await.map_err(|e| e.to_string()) })
            };
            let leaving = [
                java_leave("dbi-j1"),
                java_leave("dbi-j2"),
                tokio::spawn({
                    let m = rust_members[0].clone();
                    async move { fixtures::finished(m.leave_timeout(LONG).await).map_err(|e| e.to_string()) }
                }),
                tokio::spawn({
                    let m = rust_members[1].clone();
                    async move { fixtures::finished(m.leave_timeout(LONG).await).map_err(|e| e.to_string()) }
                }),
            ];
            for t in leaving {
                assert!(t.await.unwrap().unwrap(), "round {round}: a member did not leave");
            }
            assert!(children(&inspector, &path).await.is_empty(), "round {round}: nodes left behind");
        }
        peer.close("dbi-j1").await.unwrap();
        peer.close("dbi-j2").await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn barrier_set_by_one_side_holds_the_other() {
    let cs = fixtures::shared_server().await;
    fixtures::within(TEST_LIMIT, async {
        let peer = crate::peer().await;
        peer.connect("bi-j", &cs).await.unwrap();
        let fw = framework(&cs).await;
        let path = format!("/{}/gate", fixtures::unique("interop-barrier"));
        let ours = DistributedBarrier::new(&fw, &path).unwrap();

        // Curator sets, we wait
        peer.barrier_set("bi-j", &path).await.unwrap();
        assert!(!fixtures::in_time(ours.wait_on_barrier_timeout(BLOCKED).await), "passed a barrier Curator set");
        let waiter = {
            let ours = ours.clone();
            tokio::spawn(async move { fixtures::finished(ours.wait_on_barrier_timeout(LONG).await) })
        };
        tokio::time::sleep(BLOCKED).await;
        assert!(!waiter.is_finished());
        peer.barrier_remove("bi-j", &path).await.unwrap();
        assert!(waiter.await.unwrap().unwrap(), "released by Curator's remove");

        // we set, Curator waits
        ours.set_barrier().await.unwrap();
        assert!(!peer.barrier_wait("bi-j", &path, BLOCKED).await.unwrap(), "Curator passed our barrier");
        let java_waiter = {
            let (peer, path) = (peer.clone(), path.clone());
            tokio::spawn(async move { peer.barrier_wait("bi-j", &path, LONG).await })
        };
        tokio::time::sleep(BLOCKED).await;
        assert!(!java_waiter.is_finished());
        ours.remove_barrier().await.unwrap();
        assert!(java_waiter.await.unwrap().unwrap(), "Curator released by our remove");

        peer.close("bi-j").await.unwrap();
    })
    .await;
}
