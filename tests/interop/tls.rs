//! Curator over mutual TLS: a Curator client connected to a server's TLS port (ZooKeeper's
//! Netty client socket, PEM key and trust stores) and a framework of ours over mutual TLS
//! exclude each other on one mutex.

use std::time::Duration;

use zk_recipes::InterProcessMutex;
use zk_recipes_testing::{fixtures, TestingServer};

/// A timeout that must pass while the other side holds.
const SHORT: Duration = Duration::from_millis(300);
/// A timeout that must never pass.
const LONG: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_mutex_and_ours_exclude_each_other_over_mutual_tls() {
    let server =
        TestingServer::builder().tls().expect("certificates").tls_client_auth(true).start().await.expect("server");
    let certs = server.tls_certificates().expect("TLS server").clone();
    let cs = server.secure_connect_string().expect("secure port");
    let peer = crate::peer().await;
    let cid = fixtures::unique("java-tls");
    peer.connect_tls(&cid, &cs, Duration::from_secs(10), &certs).await.expect("Curator connects over mutual TLS");
    // fixtures::framework connects to a kit server's TLS port with its certificates
    let fw = fixtures::framework(&cs).await;
    let path = format!("/{}", fixtures::unique("tls-mutex"));
    let mutex = InterProcessMutex::new(&fw, &path).expect("mutex");

    // Curator holds: ours cannot acquire; Curator releases: ours acquires.
    assert!(peer.mutex_acquire(&cid, "h1", &path, LONG).await.expect("Curator acquires"));
    assert!(mutex.acquire_timeout(SHORT).await.is_err_and(|e| e.is_timeout()), "acquired while Curator holds");
    assert_eq!(peer.mutex_release(&cid, "h1").await.expect("Curator releases"), 0);
    let guard = fixtures::within(LONG, mutex.acquire()).await.expect("ours acquires after Curator's release");

    // Ours holds: Curator cannot acquire; ours releases: Curator acquires.
    assert!(!peer.mutex_acquire(&cid, "h2", &path, SHORT).await.expect("Curator tries"), "Curator acquired too");
    guard.release().await.expect("release");
    assert!(peer.mutex_acquire(&cid, "h3", &path, LONG).await.expect("Curator acquires after ours"));
    assert_eq!(peer.mutex_release(&cid, "h3").await.expect("Curator releases"), 0);

    peer.close(&cid).await.expect("close the Curator client");
    fw.close();
}
