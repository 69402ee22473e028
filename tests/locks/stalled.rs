//! A timed acquire against a server that does not answer (its link stalled, the connection
//! still up): it returns by its deadline plus the withdraw's grace (1 s), not when the retry
//! policy gives up (108 s before the bound, measured), and leaves no node behind.

use std::time::{Duration, Instant};

use zk_recipes::{Framework, InterProcessSemaphoreV2};
use zk_recipes_testing::{fixtures, ProxyMode, TcpProxy};

use super::{Kind, Lock, KINDS};

/// The deadline's grace for the withdraw, plus slack for a loaded machine.
const PAST_THE_DEADLINE: Duration = Duration::from_millis(1000 + 1000);

/// What the test contends for: every exclusive lock kind, and a semaphore's single lease.
#[derive(Debug, Clone, Copy)]
enum Contended {
    Lock(Kind),
    Lease,
}

#[derive(Clone)]
enum Contender {
    Lock(Lock),
    Lease(std::sync::Arc<InterProcessSemaphoreV2>),
}

impl Contender {
    fn new(what: Contended, fw: &Framework, path: &str) -> Contender {
        match what {
            Contended::Lock(kind) => Contender::Lock(Lock::new(kind, fw, path)),
            Contended::Lease => Contender::Lease(InterProcessSemaphoreV2::new(fw, path, 1).unwrap().into()),
        }
    }

    /// The held node's path and a release, `None` when `t` passed first.
    async fn acquire_timeout(&self, t: Duration) -> Option<(String, futures_util::future::BoxFuture<'static, ()>)> {
        match self {
            Contender::Lock(lock) => lock.acquire_timeout(t).await.map(|held| {
                let path = held.path().to_string();
                let release: futures_util::future::BoxFuture<'static, ()> =
                    Box::pin(async move { held.release().await.unwrap() });
                (path, release)
            }),
            Contender::Lease(sem) => match sem.acquire_timeout(t).await {
                Ok(lease) => {
                    let path = lease.path().to_string();
                    let release: futures_util::future::BoxFuture<'static, ()> =
                        Box::pin(async move { lease.release().await.unwrap() });
                    Some((path, release))
                }
                Err(e) if e.is_timeout() => None,
                Err(e) => panic!("acquire failed: {e}"),
            },
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_acquire_returns_by_its_deadline_when_the_server_does_not_answer() {
    let cs = fixtures::shared_server().await;
    let holder_fw = fixtures::framework(&cs).await;
    for what in KINDS.map(Contended::Lock).into_iter().chain([Contended::Lease]) {
        let proxy = TcpProxy::start(&cs).await.unwrap();
        // a session long enough that the stalls stay shorter than the client's read timeout
        let fw = fixtures::framework_with(proxy.connect_string(), |b| b.session_timeout(Duration::from_secs(15))).await;
        let path = format!("/{}", fixtures::unique("stalled"));
        let contender = Contender::new(what, &fw, &path);

        // no answer to the create: a try and a timed acquire
        proxy.set_mode(ProxyMode::Blackhole);
        for timeout in [Duration::ZERO, Duration::from_secs(1)] {
            let started = Instant::now();
            assert!(contender.acquire_timeout(timeout).await.is_none(), "{what:?}: not acquired");
            let took = started.elapsed();
            assert!(took < timeout + PAST_THE_DEADLINE, "{what:?}: a {timeout:?} acquire took {took:?}");
        }
        proxy.set_mode(ProxyMode::Pass);
        proxy.cut();

        // waiting behind a holder when the link stalls: the withdraw's delete gets no answer
        let (held, release) =
            Contender::new(what, &holder_fw, &path).acquire_timeout(Duration::from_secs(20)).await.unwrap();
        fw.wait_connected(Duration::from_secs(20)).await.unwrap();
        let waiter = contender.clone();
        let waiting = tokio::spawn(async move {
            let started = Instant::now();
            (waiter.acquire_timeout(Duration::from_secs(2)).await.is_none(), started.elapsed())
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        proxy.set_mode(ProxyMode::Blackhole);
        let (timed_out, took) = waiting.await.unwrap();
        assert!(timed_out, "{what:?}: the holder still holds");
        assert!(took < Duration::from_secs(2) + PAST_THE_DEADLINE, "{what:?}: a 2-s acquire took {took:?}");
        proxy.set_mode(ProxyMode::Pass);
        proxy.cut();

        // the link back: the same session deletes what the stalled acquires left, and acquires
        fixtures::eventually(Duration::from_secs(20), format!("{what:?}: only the holder's node"), || async {
            fixtures::ephemerals(&holder_fw, &path).await.unwrap() == [held.clone()]
        })
        .await;
        assert_eq!(fw.status().losses, 0, "{what:?}: the same session throughout");
        release.await;
        let (_, now) = contender.acquire_timeout(Duration::from_secs(10)).await.expect("free now");
        now.await;
        fw.close();
    }
}
