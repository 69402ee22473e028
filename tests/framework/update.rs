//! `Framework::update_many` against a real server: no lost update under 16 contenders, typed
//! errors for bad input, exactly once when a commit's reply is lost.

use std::time::Duration;

use zk_recipes::CreateMode;
use zk_recipes::{Error, Framework, RetryNTimes};
use zk_recipes_testing::{fixtures, ProxyMode, TcpProxy};

pub fn number(v: &Option<Vec<u8>>) -> i64 {
    v.as_deref().and_then(|b| std::str::from_utf8(b).ok()?.parse().ok()).unwrap_or(0)
}

pub fn text(n: i64) -> Option<Vec<u8>> {
    Some(n.to_string().into_bytes())
}

/// One transfer of 1 from account `from` to account `to` (of `accounts`), counted in `ops`.
pub async fn transfer(fw: &Framework, accounts: &[String], ops: &str, from: usize, to: usize) {
    let paths = [accounts[from].as_str(), accounts[to].as_str(), ops];
    fw.update_many(&paths, |v| vec![text(number(&v[0]) - 1), text(number(&v[1]) + 1), text(number(&v[2]) + 1)])
        .await
        .unwrap();
}

#[tokio::test]
async fn sixteen_contenders_lose_no_update() {
    let cs = fixtures::shared_server().await;
    let base = format!("/{}", fixtures::unique("update-many"));
    let accounts: Vec<String> = (0..4).map(|i| format!("{base}/acct{i}")).collect();
    let ops = format!("{base}/ops");
    let setup = fixtures::framework(&cs).await;
    setup.create(&base, b"", CreateMode::Persistent).await.unwrap();
    for a in &accounts {
        setup.create(a, b"100", CreateMode::Persistent).await.unwrap();
    }
    const PER_TASK: usize = 15;
    let mut tasks = Vec::new();
    for t in 0..16 {
        let fw = fixtures::framework(&cs).await;
        let (accounts, ops) = (accounts.clone(), ops.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..PER_TASK {
                // `ops` is missing at first: the first commit creates it, racing the others
                transfer(&fw, &accounts, &ops, (t + i) % 4, (t + i + 1 + i % 3) % 4).await;
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(120), t).await.expect("the contenders finish").unwrap();
    }
    let mut total = 0;
    for a in &accounts {
        total += number(&Some(setup.get_data(a).await.unwrap().0));
    }
    assert_eq!(total, 400, "money is neither made nor lost");
    assert_eq!(number(&Some(setup.get_data(&ops).await.unwrap().0)), 16 * PER_TASK as i64, "no lost update");
}

#[tokio::test]
async fn bad_input_is_a_typed_error() {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let keep = |v: &[Option<Vec<u8>>]| v.to_vec();
    assert!(matches!(fw.update_many(&[], keep).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(fw.update_many(&["/a", "/a"], keep).await, Err(Error::InvalidArgument { .. })));
    assert!(matches!(fw.update_many(&["a"], keep).await, Err(Error::InvalidPath { .. })));
    let short = fw.update_many(&["/upd-a", "/upd-b"], |_| vec![Some(b"x".to_vec())]).await;
    assert!(matches!(short, Err(Error::InvalidArgument { .. })), "{short:?}");
    assert_eq!(fw.exists("/upd-a").await.unwrap(), None, "nothing written");
    // deleting and leaving missing
    let path = format!("/{}", fixtures::unique("upd-del"));
    fw.create(&path, b"1", CreateMode::Persistent).await.unwrap();
    fw.update_many(&[path.as_str(), "/upd-never"], |_| vec![None, None]).await.unwrap();
    assert_eq!(fw.exists(&path).await.unwrap(), None);
}

/// Each update's commit reaches the server; its reply is dropped; after the reconnect the
/// update is reported done and counted once (update_many does not run `update` again then).
#[tokio::test]
async fn a_lost_reply_counts_once() {
    let cs = fixtures::shared_server().await;
    let proxy = std::sync::Arc::new(TcpProxy::start(&cs).await.unwrap());
    let fw = fixtures::framework(proxy.connect_string()).await;
    let direct = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("upd-lost"));
    fw.update_many(&[path.as_str()], |v| vec![text(number(&v[0]) + 1)]).await.unwrap();
    for round in 2..=5 {
        let pending = tokio::spawn({
            let (fw, path, proxy) = (fw.clone(), path.clone(), proxy.clone());
            async move {
                let mut calls = 0;
                let committed = fw
                    .update_many(&[path.as_str()], |v| {
                        // read: from now on the server's replies are lost, the commit's too
                        proxy.set_mode(ProxyMode::DropReplies);
                        calls += 1;
                        vec![text(number(&v[0]) + 1)]
                    })
                    .await;
                (committed, calls)
            }
        });
        fixtures::eventually(Duration::from_secs(10), "the commit reached the server", || async {
            number(&Some(direct.get_data(&path).await.unwrap().0)) >= round
        })
        .await;
        proxy.set_mode(ProxyMode::Pass);
        proxy.cut();
        let (committed, calls) = pending.await.unwrap();
        assert_eq!(committed.unwrap(), vec![text(round)], "round {round}");
        assert_eq!(calls, 1, "round {round}: not computed again");
        assert_eq!(number(&Some(direct.get_data(&path).await.unwrap().0)), round, "round {round}: once");
    }
}

/// 8 contenders keep transferring while the ensemble's leader is killed and restarted: every
/// transfer completes, none lost, none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contenders_lose_no_update_when_the_leader_is_killed() {
    use zk_recipes_testing::TestingCluster;
    let cluster = TestingCluster::start(3).await.unwrap();
    let base = "/update-many-faults";
    let accounts: Vec<String> = (0..3).map(|i| format!("{base}/acct{i}")).collect();
    let ops = format!("{base}/ops");
    let setup = fixtures::framework(cluster.connect_string()).await;
    setup.create(base, b"", CreateMode::Persistent).await.unwrap();
    for a in &accounts {
        setup.create(a, b"100", CreateMode::Persistent).await.unwrap();
    }
    const PER_TASK: usize = 25;
    let mut tasks = Vec::new();
    for t in 0..8 {
        let fw = Framework::builder()
            .connect_string(cluster.connect_string())
            .session_timeout(Duration::from_secs(10))
            .connection_timeout(Duration::from_secs(5))
            .retry_policy(RetryNTimes::new(100, Duration::from_millis(100)))
            .connect()
            .await
            .unwrap();
        let (accounts, ops) = (accounts.clone(), ops.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..PER_TASK {
                transfer(&fw, &accounts, &ops, (t + i) % 3, (t + i + 1) % 3).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let leader = cluster.leader().await.unwrap().expect("a leader");
    cluster.kill(leader).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.restart(leader).await.unwrap();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(120), t).await.expect("the contenders finish").unwrap();
    }
    let mut total = 0;
    for a in &accounts {
        total += number(&Some(setup.get_data(a).await.unwrap().0));
    }
    assert_eq!(total, 300, "money is neither made nor lost");
    assert_eq!(number(&Some(setup.get_data(&ops).await.unwrap().0)), 8 * PER_TASK as i64, "every transfer, once");
}
