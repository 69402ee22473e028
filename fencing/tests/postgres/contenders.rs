//! Many holders of one lock writing one resource, fenced: no increment lost, no stale write
//! applied, under the default isolation and under SERIALIZABLE.

use std::sync::Arc;

use tokio::sync::Barrier;
use zk_recipes::InterProcessMutex;
use zk_recipes_fencing::tokio_postgres::IsolationLevel;
use zk_recipes_fencing::{Fence, FenceError, FencingToken};
use zk_recipes_testing::fixtures::{framework, shared_server, unique};

use super::{connect, counter, counter_table, highest, table};

const CONTENDERS: usize = 16;
const INCREMENTS: usize = 200;

/// 16 contenders (each its own ZooKeeper session and PostgreSQL connection) × 200 increments
/// under one lock: exactly 3,200. Each contender, once it holds again, also tries a write with
/// the token of its previous hold, which the database has superseded by then: every one of
/// those is refused and none is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_contenders_make_exactly_their_increments_and_every_stale_write_is_refused() {
    let cs = shared_server().await;
    let (lock, name) = (format!("/{}", unique("fenced-count")), table("count"));
    let db = connect().await;
    counter_table(&db, &name).await;
    let fence = Fence::open(&db).await.unwrap();
    let increment = format!("UPDATE {name} SET n = n + 1, last = $1 WHERE key = 'k'");
    let stale = format!("UPDATE {name} SET stale = stale + 1 WHERE key = 'k'");

    let mut tasks = Vec::new();
    for _ in 0..CONTENDERS {
        let (cs, lock, fence, increment, stale) =
            (cs.clone(), lock.clone(), fence.clone(), increment.clone(), stale.clone());
        tasks.push(tokio::spawn(async move {
            let fw = framework(&cs).await;
            let mut db = connect().await;
            let mutex = InterProcessMutex::new(&fw, &lock).unwrap();
            let (mut previous, mut refused): (Option<FencingToken>, usize) = (None, 0);
            for _ in 0..INCREMENTS {
                let guard = mutex.acquire().await.unwrap();
                let token = FencingToken::of(&guard);
                assert_eq!(fence.execute(&mut db, &token, "k", &increment, &[&token.value()]).await.unwrap(), 1);
                if let Some(old) = previous.replace(token.clone()) {
                    match fence.execute(&mut db, &old, "k", &stale, &[]).await {
                        Err(FenceError::Stale { highest, .. }) => {
                            assert_eq!(highest, token.value(), "the highest is our current hold's");
                            refused += 1;
                        }
                        other => panic!("a superseded token's write was not refused: {other:?}"),
                    }
                }
                drop(guard);
            }
            fw.close();
            refused
        }));
    }
    let mut refused = 0;
    for task in tasks {
        refused += task.await.unwrap();
    }
    let (n, applied_stale, last) = counter(&db, &name).await;
    assert_eq!(n, (CONTENDERS * INCREMENTS) as i64, "no increment lost");
    assert_eq!(applied_stale, 0, "no stale write applied");
    assert_eq!(refused, CONTENDERS * (INCREMENTS - 1), "every stale attempt refused");
    assert_eq!(highest(&db, &lock, "k").await, Some(last), "the last increment's token is the highest");
}

/// Writers racing without a lock, each with its own token of one scope, under SERIALIZABLE
/// (the fence reruns a transaction that fails to serialize) and under the default isolation:
/// the writes applied are exactly those whose token was at least every earlier applied one, in
/// the order they committed, and the highest token is always applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_writers_apply_only_nondecreasing_tokens_under_both_isolation_levels() {
    for isolation in [None, Some(IsolationLevel::Serializable)] {
        let (scope, name) = (format!("/{}", unique("fenced-race")), table("race"));
        let db = connect().await;
        db.batch_execute(&format!("CREATE TABLE {name} (id bigserial PRIMARY KEY, token bigint NOT NULL)"))
            .await
            .unwrap();
        let mut fence = Fence::open(&db).await.unwrap().with_attempts(1000);
        if let Some(isolation) = isolation {
            fence = fence.with_isolation(isolation);
        }
        let insert = format!("INSERT INTO {name} (token) VALUES ($1)");
        const WRITERS: i64 = 16;
        const ROUNDS: i64 = 10;
        let start = Arc::new(Barrier::new(WRITERS as usize));
        let mut tasks = Vec::new();
        for writer in 0..WRITERS {
            let (fence, insert, scope, start) = (fence.clone(), insert.clone(), scope.clone(), start.clone());
            tasks.push(tokio::spawn(async move {
                let mut db = connect().await;
                let mut outcomes = Vec::new();
                start.wait().await;
                for round in 0..ROUNDS {
                    // tokens interleave across writers and grow round by round
                    let token = FencingToken::new(scope.as_str(), round * WRITERS + writer + 1).unwrap();
                    match fence.execute(&mut db, &token, "r", &insert, &[&token.value()]).await {
                        Ok(1) => outcomes.push((token.value(), true)),
                        Err(FenceError::Stale { .. }) => outcomes.push((token.value(), false)),
                        other => panic!("neither applied nor refused as stale ({isolation:?}): {other:?}"),
                    }
                }
                outcomes
            }));
        }
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.extend(task.await.unwrap());
        }
        let applied: Vec<i64> = db
            .query(&format!("SELECT token FROM {name} ORDER BY id"), &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert!(applied.windows(2).all(|w| w[0] <= w[1]), "applied out of order ({isolation:?}): {applied:?}");
        let mut told: Vec<i64> = outcomes.iter().filter(|(_, ok)| *ok).map(|(t, _)| *t).collect();
        told.sort();
        assert_eq!(told, applied, "what the callers were told is what was applied ({isolation:?})");
        assert_eq!(applied.last(), Some(&(WRITERS * ROUNDS)), "the highest token is applied ({isolation:?})");
        assert_eq!(outcomes.len() as i64, WRITERS * ROUNDS);
        assert_eq!(highest(&db, &scope, "r").await, Some(WRITERS * ROUNDS));
    }
}
