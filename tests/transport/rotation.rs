//! Refused sessions and certificate rotation: a re-created session that the ensemble refuses
//! (TLS handshake, SASL login) is reported as the `REFUSED` state (no endless retries;
//! operations fail at once with the refusal), and `Framework::reload` reads renewed
//! certificate files, after which the next session connects.

use assert_matches::assert_matches;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use zk_recipes::CreateMode;
use zk_recipes::{ConnectionState, Error, SaslConfig, TlsConfig, TlsFailure};
use zk_recipes_testing::{expire_session, fixtures, TestCertificates, TestingServer};

use crate::builder;

/// Copies `from`'s CA certificate, client certificate and key into `dir`: the files the
/// client's [`TlsConfig`] reads.
fn install_client_files(from: &TestCertificates, dir: &Path) {
    std::fs::copy(from.ca_path(), dir.join("ca.pem")).expect("copy CA");
    std::fs::copy(from.client_cert_path(), dir.join("client.pem")).expect("copy certificate");
    std::fs::copy(from.client_key_path(), dir.join("client-key.pem")).expect("copy key");
}

/// Client TLS settings reading the files of [`install_client_files`].
fn client_tls(dir: &Path) -> TlsConfig {
    TlsConfig::from_ca_file(dir.join("ca.pem"))
        .and_then(|tls| tls.with_client_identity_files(dir.join("client.pem"), dir.join("client-key.pem")))
        .expect("TLS files")
}

/// Replaces the files a server started with `to` reads (its key store and its trusted CA) by
/// `from`'s: the server's side of a rotation to another CA, effective at its next start.
fn install_server_files(from: &TestCertificates, to: &TestCertificates) {
    std::fs::copy(from.server_key_store_path(), to.server_key_store_path()).expect("copy key store");
    std::fs::copy(from.ca_path(), to.ca_path()).expect("copy CA");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_session_is_reported_and_reload_with_rotated_certificates_connects_again() {
    let served = Arc::new(TestCertificates::generate().expect("certificates"));
    let server =
        TestingServer::builder().tls_certificates(served.clone()).tls_client_auth(true).start().await.expect("server");
    let cs = server.secure_connect_string().expect("secure port");
    let client_dir = tempfile::tempdir().expect("temp dir");
    install_client_files(&served, client_dir.path());
    let fw = builder(&cs).tls(client_tls(client_dir.path())).connect().await.expect("mTLS connect");
    let first = fw.status().session_id;
    let mut states = Box::pin(fw.connection_states());

    // The ensemble moves to a new CA; this client still has the old one's files. Its session
    // cannot reconnect, is lost, and the new session it builds is refused.
    let renewed = TestCertificates::generate().expect("the new CA");
    install_server_files(&renewed, &served);
    server.restart().await.expect("restart with the new CA");
    let mut status = fw.status_watch();
    fixtures::within(Duration::from_secs(30), status.wait_for(|s| s.state == ConnectionState::Refused))
        .await
        .expect("REFUSED");
    let refusal = |e: &Error| matches!(e, Error::Tls { server, failure: TlsFailure::UnknownCa, .. } if *server == cs);
    assert_matches!(fw.refusal(), Some(e) if refusal(&e));
    assert!(fw.status().losses >= 1);
    let mut seen = Vec::new();
    while let Some(state) = fixtures::within(Duration::from_secs(5), states.next()).await {
        seen.push(state);
        if state == ConnectionState::Refused {
            break;
        }
    }
    assert_eq!(seen.iter().rev().take(2).collect::<Vec<_>>(), [&ConnectionState::Refused, &ConnectionState::Lost]);

    // Operations fail at once with the refusal, not after the retry policy's attempts.
    let started = Instant::now();
    assert_matches!(fw.exists("/").await, Err(e) if refusal(&e));
    assert_matches!(fw.wait_connected(Duration::from_secs(5)).await, Err(e) if refusal(&e));
    assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());

    // A reload whose files cannot be read keeps the certificates in use and the state.
    std::fs::remove_file(client_dir.path().join("client-key.pem")).expect("remove key");
    assert!(matches!(fw.reload(), Err(Error::InvalidArgument { .. })), "an unreadable key is refused");
    assert_eq!(fw.connection_state(), ConnectionState::Refused);

    // The client's files are rotated to the new CA: a reload, and the next session connects.
    install_client_files(&renewed, client_dir.path());
    fw.reload().expect("reload");
    let status =
        fixtures::within(Duration::from_secs(20), status.wait_for(|s| s.state == ConnectionState::Reconnected))
            .await
            .expect("reconnected")
            .to_owned();
    assert_ne!(status.session_id, first, "a new session");
    assert_matches!(fw.refusal(), None);
    let path = fixtures::unique("/transport/rotated");
    fw.create(&path, b"x", CreateMode::Persistent).await.expect("create over the new certificates");
    assert!(fw.exists(&path).await.expect("exists").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_re_created_after_the_password_changed_is_refused() {
    let server = TestingServer::builder().sasl_digest([("alice", "wonderland")]).start().await.expect("server");
    let cs = server.connect_string().to_owned();
    let fw = builder(&cs).sasl(SaslConfig::digest_md5("alice", "wonderland")).connect().await.expect("SASL login");
    let first = fw.status().session_id;

    // alice's password changes on the server; the session is expired: the new one is refused
    server.set_sasl_users([("alice", "looking-glass")]).expect("new JAAS file");
    server.restart().await.expect("restart");
    expire_session(&fw).await.expect("expire");
    let mut status = fw.status_watch();
    fixtures::within(Duration::from_secs(30), status.wait_for(|s| s.state == ConnectionState::Refused))
        .await
        .expect("REFUSED");
    let refusal = |e: &Error| matches!(e, Error::AuthFailed { connect_string, .. } if *connect_string == cs);
    assert_matches!(fw.refusal(), Some(e) if refusal(&e));
    let started = Instant::now();
    assert_matches!(fw.get_data("/").await.map(drop), Err(e) if refusal(&e));
    assert_matches!(fw.wait_connected(Duration::from_secs(5)).await, Err(e) if refusal(&e));
    assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
    assert_eq!(fw.status().session_id, first, "no new session");
}
