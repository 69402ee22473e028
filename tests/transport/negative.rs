//! Connections that can never work fail with an error that says why, well within the
//! connection timeout, and leave no connection behind on the server.

use assert_matches::assert_matches;
use std::time::{Duration, Instant};

use zk_recipes::{Error, FrameworkBuilder, SaslConfig, TlsFailure};
use zk_recipes_testing::{four_letter_word, TestCertificates, TestingServer};

use crate::{builder, tls, CONNECTION_TIMEOUT};

/// Connects with `framework` and returns the error, which must come within the connection
/// timeout.
async fn refused(framework: FrameworkBuilder) -> Error {
    let started = Instant::now();
    let error = framework.connect().await.expect_err("a connection that cannot work succeeded");
    let took = started.elapsed();
    assert!(took < CONNECTION_TIMEOUT, "{error} after {took:?}, not within {CONNECTION_TIMEOUT:?}");
    error
}

fn tls_failure(error: &Error) -> &TlsFailure {
    match error {
        Error::Tls { failure, .. } => failure,
        other => panic!("expected a TLS error, got {other:?}"),
    }
}

/// Waits until the server has no client connection but the `cons` that asks.
async fn no_connection_left(server: &TestingServer) {
    zk_recipes_testing::fixtures::eventually(Duration::from_secs(10), "no client connection left", || async {
        let cons = four_letter_word(server.connect_string(), "cons").await.unwrap_or_default();
        cons.lines().filter(|line| line.contains("queued=")).count() <= 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_ca_missing_client_certificate_and_wrong_ports_are_named() {
    let server =
        TestingServer::builder().tls().expect("certificates").tls_client_auth(true).start().await.expect("server");
    let certs = server.tls_certificates().expect("TLS server").clone();
    let secure = server.secure_connect_string().expect("secure port");
    let other = TestCertificates::generate().expect("another CA");

    // a CA that did not sign the server's certificate
    let error = refused(builder(&secure).tls(tls(&other, true))).await;
    assert_eq!(tls_failure(&error), &TlsFailure::UnknownCa, "{error}");
    assert_matches!(&error, Error::Tls { server, failure: TlsFailure::UnknownCa, .. } if *server == secure);
    assert!(error.to_string().contains("unknown certificate authority"), "{error}");

    // no client certificate for a server that requires one
    let error = refused(builder(&secure).tls(tls(&certs, false))).await;
    assert_eq!(tls_failure(&error), &TlsFailure::ClientCertificateRequired, "{error}");

    // a client certificate from another CA
    let foreign = tls(&certs, false)
        .with_client_identity_files(other.client_cert_path(), other.client_key_path())
        .expect("identity");
    let error = refused(builder(&secure).tls(foreign)).await;
    assert!(matches!(tls_failure(&error), TlsFailure::ClientCertificateRejected(_)), "{error}");

    // plaintext to the TLS port
    let error = refused(builder(&secure)).await;
    assert_eq!(tls_failure(&error), &TlsFailure::PlaintextToTlsPort, "{error}");

    // TLS to the plaintext port
    let error = refused(builder(server.connect_string()).tls(tls(&certs, true))).await;
    assert_eq!(tls_failure(&error), &TlsFailure::NotTls, "{error}");

    no_connection_left(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_server_certificate_is_named() {
    let expired = std::sync::Arc::new(TestCertificates::generate_expired().expect("certificates"));
    let server = TestingServer::builder().tls_certificates(expired.clone()).start().await.expect("server");
    let secure = server.secure_connect_string().expect("secure port");
    let error = refused(builder(&secure).tls(tls(&expired, false))).await;
    assert_eq!(tls_failure(&error), &TlsFailure::CertificateExpired, "{error}");
    no_connection_left(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_digest_logs_in_and_a_wrong_password_is_refused() {
    let server = TestingServer::builder().sasl_digest([("alice", "wonderland")]).start().await.expect("server");
    let cs = server.connect_string();

    let fw = builder(cs).sasl(SaslConfig::digest_md5("alice", "wonderland")).connect().await.expect("SASL login");
    let whoami = fw.client().expect("client").list_auth_users().await.expect("whoami");
    assert!(whoami.iter().any(|u| u.scheme() == "sasl" && u.user() == "alice"), "{whoami:?}");
    fw.close();

    let error = refused(builder(cs).sasl(SaslConfig::digest_md5("alice", "looking-glass"))).await;
    assert_matches!(&error, Error::AuthFailed { connect_string, .. } if connect_string == cs);
    no_connection_left(&server).await;
}
