//! A leader's writes, fenced by its leadership's token: refused once the leadership moved.

use std::time::Duration;

use zk_recipes::LeaderLatch;
use zk_recipes_fencing::{Fence, FenceError, FencingToken};
use zk_recipes_testing::fixtures::{framework, shared_server, unique};

use super::{connect, counter, counter_table, highest, table};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaders_write_is_refused_after_the_leadership_moved() {
    let cs = shared_server().await;
    let (path, name) = (format!("/{}", unique("fenced-leader")), table("leader"));
    let mut db = connect().await;
    counter_table(&db, &name).await;
    let fence = Fence::open(&db).await.unwrap();
    let sql = format!("UPDATE {name} SET n = n + 1, last = $1 WHERE key = 'k'");
    let (fw_a, fw_b) = (framework(&cs).await, framework(&cs).await);
    let a = LeaderLatch::new(&fw_a, &path, "a").unwrap();
    a.start().await.unwrap();
    let leadership_a = a.await_leadership_timeout(Duration::from_secs(10)).await.unwrap();
    let b = LeaderLatch::new(&fw_b, &path, "b").unwrap();
    b.start().await.unwrap();
    assert!(b.leadership().is_none(), "b does not lead while a does");

    let token_a = FencingToken::of_leadership(&leadership_a);
    assert_eq!(token_a.scope(), path, "a leadership's scope is the latch's path");
    fence.execute(&mut db, &token_a, "k", &sql, &[&token_a.value()]).await.unwrap();

    // The leadership moves to b, which writes; a, still holding its old token, is refused.
    a.close().await.unwrap();
    assert!(leadership_a.is_lost(), "a's leadership ended with its latch");
    let token_b = FencingToken::of_leadership(&b.await_leadership_timeout(Duration::from_secs(10)).await.unwrap());
    assert!(token_b.value() > token_a.value());
    fence.execute(&mut db, &token_b, "k", &sql, &[&token_b.value()]).await.unwrap();
    let refused = fence.execute(&mut db, &token_a, "k", &sql, &[&token_a.value()]).await;
    match refused {
        Err(FenceError::Stale { token, highest, .. }) => {
            assert_eq!((token, highest), (token_a.value(), token_b.value()))
        }
        other => panic!("the old leader's write was not refused: {other:?}"),
    }
    assert_eq!(counter(&db, &name).await, (2, 0, token_b.value()));
    assert_eq!(highest(&db, &path, "k").await, Some(token_b.value()));
    b.close().await.unwrap();
}
