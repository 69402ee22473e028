//! `ZKR_TEST_TLS=1`: with the `tls` feature the shared server requires mutual TLS and the
//! fixtures connect to it over TLS; without it the shared server is refused with a typed error
//! (a suite meant to run over TLS must not pass over plaintext). In its own test binary, with a
//! single test, because it sets a process-wide environment variable that `shared_server` reads.

use zk_recipes::CreateMode;
use zk_recipes_testing::{shared_server, TLS_ENV};

#[tokio::test]
async fn zkr_test_tls_serves_mutual_tls_or_is_refused_without_the_feature() {
    // The only test of this binary: no other thread reads the environment meanwhile.
    std::env::set_var(TLS_ENV, "1");
    let result = shared_server().await;
    #[cfg(feature = "tls")]
    {
        use zk_recipes_testing::fixtures;
        let cs = result.expect("a shared TLS server");
        let fw = fixtures::framework(&cs).await;
        let path = format!("/{}", fixtures::unique("tls-env"));
        fw.create(&path, b"x", CreateMode::Ephemeral).await.expect("create over mutual TLS");
        zk_recipes_testing::expire_session(&fw).await.expect("expired through the plaintext port");
    }
    #[cfg(not(feature = "tls"))]
    match result {
        Err(zk_recipes_testing::Error::Unsupported(why)) => assert!(why.contains("`tls` feature"), "{why}"),
        other => panic!("expected Unsupported without the `tls` feature, got {other:?}"),
    }
}
