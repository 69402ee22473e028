//! Errors from a real server classify themselves and print each message of their chain once.

use std::time::Duration;

use zk_recipes::CreateMode;
use zk_recipes::ZooKeeperError;
use zk_recipes::{Error, RetryNTimes};
use zk_recipes_testing::{fixtures, TestingServer};

/// Each message of `e`'s chain (itself, then every `source()`), as a chain printer shows them.
fn chain(e: &Error) -> Vec<String> {
    std::iter::successors(Some(e as &dyn std::error::Error), |e| e.source()).map(|e| e.to_string()).collect()
}

/// No message of the chain contains a later one (none printed twice by `anyhow`'s `{:#}`).
fn assert_printed_once(e: &Error) -> Vec<String> {
    let messages = chain(e);
    for (i, m) in messages.iter().enumerate() {
        for later in &messages[i + 1..] {
            assert!(!m.contains(later.as_str()), "{e:?}: {m:?} repeats {later:?}");
        }
    }
    messages
}

#[tokio::test]
async fn answers_of_the_server_are_not_found_or_conflicts_never_retryable() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = format!("/{}", fixtures::unique("errors"));
    let missing = fw.get_data(&format!("{root}/missing")).await.unwrap_err();
    assert!(missing.is_not_found() && !missing.is_retryable() && !missing.is_conflict(), "{missing:?}");
    assert_eq!(assert_printed_once(&missing), vec![ZooKeeperError::NoNode.to_string()]);

    fw.create(&root, b"", CreateMode::Persistent).await.unwrap();
    let exists = fw.create(&root, b"", CreateMode::Persistent).await.unwrap_err();
    assert!(exists.is_conflict() && !exists.is_retryable(), "{exists:?}");
    let stale = fw.set_data(&root, b"x", Some(41)).await.unwrap_err();
    assert!(stale.is_conflict(), "{stale:?}");

    let refused = fw.transaction().set_data(&root, b"x", Some(41)).commit().await.unwrap_err();
    assert!(refused.is_conflict() && !refused.is_retryable(), "{refused:?}");
    let messages = assert_printed_once(&refused);
    assert_eq!(messages.len(), 2, "the server's answer is the source: {messages:?}");
    assert_eq!(messages[1], ZooKeeperError::BadVersion.to_string());

    let bad = fw.get_data("relative").await.unwrap_err();
    assert!(bad.is_invalid_input() && !bad.is_retryable(), "{bad:?}");
}

#[tokio::test]
async fn an_unreachable_server_is_a_retryable_connection_error_with_its_cause_as_source() {
    let server = TestingServer::start().await.unwrap();
    let fw = fixtures::framework_with(server.connect_string(), |b| {
        b.connection_timeout(Duration::from_millis(500))
            .session_timeout(Duration::from_secs(20))
            .retry_policy(RetryNTimes::new(1, Duration::from_millis(10)))
    })
    .await;
    server.stop().await;
    let e = fw.get_data("/x").await.unwrap_err();
    assert!(matches!(e, Error::RetriesExhausted { attempts: 2, .. }), "{e:?}");
    assert!(e.is_retryable() && e.is_connection(), "{e:?}");
    assert!(!e.is_lost() && !e.is_timeout() && !e.is_closed(), "{e:?}");
    let messages = assert_printed_once(&e);
    assert_eq!(messages.len(), 2, "{messages:?}");
    fw.close();
    let closed = fw.get_data("/x").await.unwrap_err();
    assert!(closed.is_closed() && !closed.is_retryable(), "{closed:?}");
}

/// `Framework::retry` / `retry_with`, the raw client's escape hatch (the recipes go through the
/// framework's own requests, so nothing else runs this path): the client's retryable errors
/// are retried, its other answers returned at once as this crate's errors, and the policy
/// decides when to give up.
#[tokio::test]
async fn the_raw_clients_retry_retries_what_is_retryable_and_returns_the_rest() {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    use zk_recipes::zk::Error as ZkError;

    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("raw-retry"));
    // a connection loss, then the server's answer
    let attempts = AtomicU32::new(0);
    let stat = fw
        .retry(|client| {
            let (first, path) = (attempts.fetch_add(1, SeqCst) == 0, path.clone());
            async move {
                match first {
                    true => Err(ZkError::ConnectionLoss),
                    false => client.check_stat(&path).await,
                }
            }
        })
        .await
        .unwrap();
    assert_eq!((stat, attempts.load(SeqCst)), (None, 2));
    // an answer that is not retryable: once, as Error::ZooKeeper
    let attempts = AtomicU32::new(0);
    let missing = fw
        .retry(|client| {
            attempts.fetch_add(1, SeqCst);
            let path = path.clone();
            async move { client.get_data(&path).await }
        })
        .await
        .unwrap_err();
    assert!(matches!(missing, Error::ZooKeeper(ZooKeeperError::NoNode)), "{missing:?}");
    assert_eq!(attempts.load(SeqCst), 1);
    // the policy gives up: 1 + 2 retries
    let policy = RetryNTimes::new(2, Duration::from_millis(1));
    let gave_up = fw.retry_with(&policy, |_| async { Err::<(), _>(ZkError::SessionMoved) }).await.unwrap_err();
    assert!(
        matches!(gave_up, Error::RetriesExhausted { attempts: 3, last: ZooKeeperError::SessionMoved, .. }),
        "{gave_up:?}"
    );
}
