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
