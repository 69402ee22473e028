//! `zkr` over TLS: `lock` over mutual TLS (the held node checked by a TLS framework), the same
//! options from the environment, and exit 69 with a message that names the cause for a wrong CA,
//! a missing client certificate and a wrong SASL password; zkr and a Curator process over mutual
//! TLS exclude each other on one mutex.

use std::time::Duration;

use tokio::time::Instant;
use zk_recipes::{Framework, TlsConfig};
use zk_recipes_testing::{TestCertificates, TestingServer};

use super::{check_held_line, children, path, run, run_with, Zkr};

fn display(p: std::path::PathBuf) -> String {
    p.display().to_string()
}

/// `--tls-*` options for `certs`' CA and client certificate.
fn tls_args(certs: &TestCertificates) -> Vec<String> {
    vec![
        "--tls-ca".into(),
        display(certs.ca_path()),
        "--tls-cert".into(),
        display(certs.client_cert_path()),
        "--tls-key".into(),
        display(certs.client_key_path()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_over_mutual_tls_and_exit_69_naming_the_tls_failure() {
    let server = TestingServer::builder().tls().unwrap().tls_client_auth(true).start().await.expect("server");
    let certs = server.tls_certificates().unwrap().clone();
    let secure = server.secure_connect_string().unwrap();
    let tls = TlsConfig::from_ca_file(certs.ca_path())
        .unwrap()
        .with_client_identity_files(certs.client_cert_path(), certs.client_key_path())
        .unwrap();
    let fw = Framework::builder().connect_string(&secure).tls(tls).connect().await.expect("mTLS framework");

    // hold a lock over mTLS: the node is on the server, ephemeral, released after CMD
    let lock = path("tls");
    let mut args: Vec<String> = tls_args(&certs);
    args.extend(
        ["lock", &lock, "--", "sh", "-c", "echo \"$ZK_LOCK_PATH $ZK_FENCING_TOKEN\"; sleep 0.3"].map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut zkr = Zkr::start(&secure, &args, &[]);
    let line = zkr.line().await;
    check_held_line(&fw, &line, &lock).await;
    assert_eq!(zkr.exit_code().await, 0, "{}", zkr.stderr());
    assert!(children(&fw, &lock).await.is_empty(), "released after CMD");

    // the same from the environment
    let (ca, cert, key) =
        (display(certs.ca_path()), display(certs.client_cert_path()), display(certs.client_key_path()));
    let env = [("ZK_TLS_CA", ca.as_str()), ("ZK_TLS_CERT", cert.as_str()), ("ZK_TLS_KEY", key.as_str())];
    let (code, out, err) = run_with(&secure, &["atomic", &path("tls-counter"), "add", "1"], &env).await;
    assert_eq!((code, out), (0, vec!["1".to_string()]), "{err}");

    // a CA that did not sign the server's certificate: 69, naming the server and the cause
    let other = TestCertificates::generate().unwrap();
    let mut args = tls_args(&other);
    args.extend(["lock", &lock, "--", "true"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let (code, _, err) = run(&secure, &args).await;
    assert_eq!(code, 69, "{err}");
    assert_eq!(err.trim(), format!("zkr: TLS handshake with {secure} failed: unknown certificate authority"));
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());

    // no client certificate for a server that requires one
    let (code, _, err) = run(&secure, &["--tls-ca", &ca, "lock", &lock, "--", "true"]).await;
    assert_eq!(code, 69, "{err}");
    assert!(err.contains("requires a client certificate"), "{err}");

    // a client certificate without its key is a usage error
    let (code, _, err) = run(&secure, &["--tls-ca", &ca, "--tls-cert", &cert, "lock", &lock, "--", "true"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(children(&fw, &lock).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_login_and_exit_69_for_a_wrong_password() {
    let server = TestingServer::builder().sasl_digest([("zkr", "s3cret")]).start().await.expect("server");
    let cs = server.connect_string();
    let dir = tempfile::tempdir().unwrap();
    let (good, bad) = (dir.path().join("good"), dir.path().join("bad"));
    std::fs::write(&good, "s3cret\n").unwrap();
    std::fs::write(&bad, "guess\n").unwrap();
    let counter = path("sasl");
    let (code, out, err) =
        run(cs, &["--sasl-user", "zkr", "--sasl-password-file", &display(good), "atomic", &counter, "add", "1"]).await;
    assert_eq!((code, out), (0, vec!["1".to_string()]), "{err}");
    let env = [("ZK_SASL_USER", "zkr"), ("ZK_SASL_PASSWORD_FILE", bad.to_str().unwrap())];
    let (code, _, err) = run_with(cs, &["atomic", &counter, "get"], &env).await;
    assert_eq!(code, 69, "{err}");
    assert!(err.contains("authentication refused"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_and_a_curator_process_exclude_each_other_over_mutual_tls() {
    const SHORT: Duration = Duration::from_millis(300);
    const LONG: Duration = Duration::from_secs(30);
    let server = TestingServer::builder().tls().unwrap().tls_client_auth(true).start().await.expect("server");
    let certs = server.tls_certificates().unwrap().clone();
    let secure = server.secure_connect_string().unwrap();
    let peer = zk_recipes_testing::curator::CuratorPeer::shared().await.expect("Curator peer");
    let cid = format!("zkr-tls-{}", std::process::id());
    peer.connect_tls(&cid, &secure, Duration::from_secs(10), &certs).await.expect("Curator over mutual TLS");
    let lock = path("tls-curator");
    let tls: Vec<String> = tls_args(&certs);
    let with_tls =
        |rest: &[&str]| -> Vec<String> { tls.iter().cloned().chain(rest.iter().map(|s| s.to_string())).collect() };

    // Curator holds: zkr over TLS times out (exit 75)
    assert!(peer.mutex_acquire(&cid, "h1", &lock, LONG).await.unwrap());
    let args = with_tls(&["lock", &lock, "--timeout", "300ms", "--", "true"]);
    let (code, _, err) = run(&secure, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(code, 75, "zkr got the lock Curator holds: {err}");
    assert_eq!(peer.mutex_release(&cid, "h1").await.unwrap(), 0);

    // zkr holds: Curator cannot acquire; once zkr has released, Curator can
    let args = with_tls(&["lock", &lock, "--", "sh", "-c", "echo held; sleep 2"]);
    let mut zkr = Zkr::start(&secure, &args.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    assert_eq!(zkr.line().await, "held");
    assert!(!peer.mutex_acquire(&cid, "h2", &lock, SHORT).await.unwrap(), "Curator acquired while zkr holds");
    assert_eq!(zkr.exit_code().await, 0, "{}", zkr.stderr());
    assert!(peer.mutex_acquire(&cid, "h3", &lock, LONG).await.unwrap(), "Curator acquires after zkr");
    assert_eq!(peer.mutex_release(&cid, "h3").await.unwrap(), 0);
    peer.close(&cid).await.unwrap();
}
