//! The latch's count-down across a lost reply (needs the crate-private `count_down_in`).
use std::time::Duration;

use zk_recipes_testing::{ProxyMode, TcpProxy};

use super::*;

/// A count-down whose create reaches the server but whose reply is lost: the retry finds
/// its own node (by the call's token) and reports it counted, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_down_whose_reply_is_lost_counts_once_and_says_so() {
    let cs = zk_recipes_testing::shared_server().await.unwrap();
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let connect = |cs: String| async move {
        Framework::builder()
            .connect_string(&cs)
            .session_timeout(Duration::from_secs(4))
            .retry_policy(crate::RetryNTimes::new(20, Duration::from_millis(100)))
            .connect()
            .await
            .unwrap()
    };
    let (fw, direct) = (connect(proxy.connect_string().to_string()).await, connect(cs.clone()).await);
    let path = format!("/latch-lost-reply-{}-{}", std::process::id(), uuid::Uuid::new_v4().simple());
    let latch = DistributedCountDownLatch::new(&fw, &path).unwrap();
    assert!(latch.try_set_count(2).await.unwrap());
    // the generation is read; from the create on, the server's replies are lost
    proxy.set_mode(ProxyMode::DropReplies);
    let pending = tokio::spawn({
        let latch = latch.clone();
        async move { latch.count_down_in(1, "p").await }
    });
    let node = format!("{path}/gen-0000000001/p");
    let deadline = crate::framework::deadline::after(Duration::from_secs(20));
    while direct.exists(&node).await.unwrap().is_none() {
        assert!(tokio::time::Instant::now() < deadline, "the count-down never reached the server");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    proxy.set_mode(ProxyMode::Pass);
    proxy.cut();
    let outcome = tokio::time::timeout(Duration::from_secs(20), pending).await.unwrap().unwrap().unwrap();
    assert_eq!(outcome, CountDown::Counted { generation: 1, remaining: 1 });
    assert_eq!(latch.count_down("p").await.unwrap(), CountDown::AlreadyCounted { generation: 1, remaining: 1 });
    assert_eq!(direct.children(&format!("{path}/gen-0000000001")).await.unwrap(), ["p"]);
    fw.close();
    direct.close();
}
