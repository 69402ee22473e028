//! `Framework::capabilities()` against real servers: what Debian's 3.8 supports, TTL nodes
//! only where the server enables them, and a server made to look older by a proxy.

use zk_recipes::Capabilities;
use zk_recipes::CreateMode;
use zk_recipes_testing::{fixtures, refusing, RefusingProxy, TestingServer};

fn all_but_ttl() -> Capabilities {
    let mut c = Capabilities::default();
    c.containers = true;
    c.multi_read = true;
    c.persistent_watches = true;
    c.whoami = true;
    c
}

/// The paths the server holds watches on (the `wchp` four-letter word).
async fn watched(cs: &str) -> Vec<String> {
    let out = zk_recipes_testing::four_letter_word(cs, "wchp").await.unwrap();
    out.lines().filter(|l| l.starts_with('/')).map(str::to_string).collect()
}

#[tokio::test]
async fn a_3_8_server_without_extended_types() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let roots = fw.children("/").await.unwrap();
    let caps = fw.capabilities().await.unwrap();
    assert_eq!(caps, all_but_ttl());
    assert_eq!(fw.capabilities().await.unwrap(), caps, "asked again: the same");
    assert_eq!(fw.children("/").await.unwrap(), roots, "the probes wrote nothing");
    fixtures::eventually(fixtures::SETTLE_TIMEOUT, "the probe's watch is gone", || async {
        !watched(&cs).await.iter().any(|p| p.starts_with("/zk-recipes-probe-"))
    })
    .await;
}

#[tokio::test]
async fn ttl_nodes_where_the_server_enables_them() {
    let server = TestingServer::builder().config("extendedTypesEnabled", "true").start().await.unwrap();
    let fw = fixtures::framework(server.connect_string()).await;
    let mut want = all_but_ttl();
    want.ttl_nodes = true;
    assert_eq!(fw.capabilities().await.unwrap(), want);
}

#[tokio::test]
async fn a_server_that_looks_older() {
    let cs = fixtures::shared_server().await;
    // a 3.5 server: neither persistent watches, multiRead nor whoami; the probe stops at the
    // first refusal (which closes the connection) and the framework goes on
    let old =
        RefusingProxy::start(&cs, &[refusing::ADD_WATCH, refusing::MULTI_READ, refusing::WHO_AM_I]).await.unwrap();
    let fw = fixtures::framework(old.connect_string()).await;
    let mut want = Capabilities::default();
    want.containers = true;
    assert_eq!(fw.capabilities().await.unwrap(), want);
    fw.create("/caps-after-probe", b"", CreateMode::Ephemeral).await.unwrap();
    // 3.6 without whoami
    let no_whoami = RefusingProxy::start(&cs, &[refusing::WHO_AM_I]).await.unwrap();
    let fw = fixtures::framework(no_whoami.connect_string()).await;
    let mut want = all_but_ttl();
    want.whoami = false;
    assert_eq!(fw.capabilities().await.unwrap(), want);
}
