//! `circuit_breaking` on a real link that flaps: the framework's own stream reports every cut,
//! the breaker one suspension and one recovery for the whole outage.

use std::time::Duration;

use futures_util::StreamExt;
use zk_recipes::retry::RetryNTimes;
use zk_recipes::{circuit_breaking, ConnectionState};
use zk_recipes_testing::{fixtures, TcpProxy};

const FLAPS: u64 = 3;

#[tokio::test]
async fn a_flapping_link_reads_as_one_outage_through_the_breaker() {
    let cs = fixtures::shared_server().await;
    let proxy = TcpProxy::start(&cs).await.unwrap();
    let fw = fixtures::framework(proxy.connect_string()).await;
    let (raw_tx, mut raw_rx) = tokio::sync::mpsc::unbounded_channel();
    let (broken_tx, mut broken_rx) = tokio::sync::mpsc::unbounded_channel();
    let raw = fw.connection_states();
    let broken = circuit_breaking(fw.connection_states(), RetryNTimes::new(5, Duration::from_secs(8)));
    let forward = |states: std::pin::Pin<Box<dyn futures_core::Stream<Item = ConnectionState> + Send>>,
                   tx: tokio::sync::mpsc::UnboundedSender<ConnectionState>| {
        tokio::spawn(async move {
            let mut states = states;
            while let Some(state) = states.next().await {
                let _ = tx.send(state);
            }
        })
    };
    let tasks = [forward(Box::pin(raw), raw_tx), forward(Box::pin(broken), broken_tx)];

    // each cut: the connection drops and comes back on the same session
    let mut status = fw.status_watch();
    for _ in 0..FLAPS {
        let before = status.borrow_and_update().suspensions;
        proxy.cut();
        let back = status.wait_for(|s| s.suspensions > before && s.state.is_connected());
        tokio::time::timeout(Duration::from_secs(10), back).await.expect("reconnected").unwrap();
    }
    // the breaker passes the first suspension, then the recovery once its pause is over (8 s:
    // the cuts above take about 1 s here, leave room for a loaded machine)
    let mut through_breaker = Vec::new();
    while through_breaker.last() != Some(&ConnectionState::Reconnected) {
        let next = tokio::time::timeout(Duration::from_secs(15), broken_rx.recv()).await;
        through_breaker.push(next.expect("the breaker closes").expect("a state"));
    }
    assert_eq!(through_breaker, [ConnectionState::Suspended, ConnectionState::Reconnected]);
    let mut direct = Vec::new();
    while let Ok(state) = raw_rx.try_recv() {
        direct.push(state);
    }
    let suspended = direct.iter().filter(|s| **s == ConnectionState::Suspended).count();
    assert_eq!(suspended as u64, FLAPS, "the framework's own stream reports every cut: {direct:?}");
    // and nothing more passes once the link is steady
    assert!(tokio::time::timeout(Duration::from_millis(500), broken_rx.recv()).await.is_err());
    fw.close();
    for task in tasks {
        task.abort();
    }
}
