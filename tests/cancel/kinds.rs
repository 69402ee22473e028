//! One round per kind of acquire/wait future: another framework (`b`, connected directly)
//! makes the wait real (holds the lock, leads, sets the barrier...), the fuzzed framework (`a`,
//! through the proxy) waits, the wait is dropped after `cancel` unless it finished first, and
//! `b` lets go after `release` (maybe before the cancel, so that some waits finish just as they
//! are dropped).

use std::future::Future;
use std::time::Duration;

use zk_recipes::{
    DistributedAtomicLong, DistributedBarrier, DistributedCountDownLatch, DistributedDoubleBarrier, DistributedQueue,
    Framework, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex, InterProcessSemaphoreV2,
    LeaderLatch,
};

/// Every kind the fuzzer drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Mutex,
    Semaphore,
    SemaphoreMutex,
    RwRead,
    RwWrite,
    Leader,
    Barrier,
    DoubleBarrier,
    Latch,
    QueueTake,
    Counter,
}

pub const KINDS: [Kind; 11] = [
    Kind::Mutex,
    Kind::Semaphore,
    Kind::SemaphoreMutex,
    Kind::RwRead,
    Kind::RwWrite,
    Kind::Leader,
    Kind::Barrier,
    Kind::DoubleBarrier,
    Kind::Latch,
    Kind::QueueTake,
    Kind::Counter,
];

/// The wait of `a`, dropped after `cancel` if not finished: whether it finished (with
/// whatever it returned dropped at once, as a caller that lost interest does).
async fn dropped_after<F: Future>(cancel: Duration, wait: F) -> bool {
    tokio::time::timeout(cancel, wait).await.is_ok()
}

async fn after<T>(delay: Duration, f: impl Future<Output = T>) -> T {
    tokio::time::sleep(delay).await;
    f.await
}

/// One round of `kind` at `path`; returns whether `a`'s wait finished before its drop.
pub async fn round(kind: Kind, a: &Framework, b: &Framework, path: &str, cancel: Duration, release: Duration) -> bool {
    match kind {
        Kind::Mutex => {
            let held = InterProcessMutex::new(b, path).unwrap().acquire().await.unwrap();
            let mutex = InterProcessMutex::new(a, path).unwrap();
            let (done, _) = tokio::join!(
                dropped_after(cancel, mutex.acquire()),
                after(release, async { drop(held.release().await) })
            );
            done
        }
        Kind::Semaphore => {
            let held = InterProcessSemaphoreV2::new(b, path, 1).unwrap().acquire().await.unwrap();
            let semaphore = InterProcessSemaphoreV2::new(a, path, 1).unwrap();
            let (done, _) = tokio::join!(
                dropped_after(cancel, semaphore.acquire()),
                after(release, async { drop(held.release().await) })
            );
            done
        }
        Kind::SemaphoreMutex => {
            let held = InterProcessSemaphoreMutex::new(b, path).unwrap().acquire().await.unwrap();
            let mutex = InterProcessSemaphoreMutex::new(a, path).unwrap();
            let (done, _) = tokio::join!(
                dropped_after(cancel, mutex.acquire()),
                after(release, async { drop(held.release().await) })
            );
            done
        }
        Kind::RwRead => {
            let held = InterProcessReadWriteLock::new(b, path).unwrap().write().await.unwrap();
            let rw = InterProcessReadWriteLock::new(a, path).unwrap();
            let (done, _) =
                tokio::join!(dropped_after(cancel, rw.read()), after(release, async { drop(held.release().await) }));
            done
        }
        Kind::RwWrite => {
            let held = InterProcessReadWriteLock::new(b, path).unwrap().read().await.unwrap();
            let rw = InterProcessReadWriteLock::new(a, path).unwrap();
            let (done, _) =
                tokio::join!(dropped_after(cancel, rw.write()), after(release, async { drop(held.release().await) }));
            done
        }
        Kind::Leader => {
            let leader = LeaderLatch::new(b, path, "b").unwrap();
            leader.start().await.unwrap();
            leader.await_leadership().await.unwrap();
            let latch = LeaderLatch::new(a, path, "a").unwrap();
            let wait = async {
                latch.start().await?;
                latch.await_leadership().await
            };
            let (done, _) =
                tokio::join!(dropped_after(cancel, wait), after(release, async { drop(leader.close().await) }));
            // the documented way out: close (a latch dropped unclosed keeps its node until the
            // session ends)
            let _ = latch.close().await;
            done
        }
        Kind::Barrier => {
            let setter = DistributedBarrier::new(b, path).unwrap();
            setter.set_barrier().await.unwrap();
            let barrier = DistributedBarrier::new(a, path).unwrap();
            let (done, _) = tokio::join!(
                dropped_after(cancel, barrier.wait_on_barrier()),
                after(release, async { drop(setter.remove_barrier().await) })
            );
            let _ = setter.remove_barrier().await;
            done
        }
        Kind::DoubleBarrier => {
            // two members needed, one comes: the wait lasts until dropped
            let barrier = DistributedDoubleBarrier::new(a, path, 2).unwrap();
            dropped_after(cancel, barrier.enter()).await
        }
        Kind::Latch => {
            let latch = DistributedCountDownLatch::new(b, path).unwrap();
            latch.try_set_count(1).await.unwrap();
            let waiter = DistributedCountDownLatch::new(a, path).unwrap();
            let (done, _) = tokio::join!(
                dropped_after(cancel, waiter.wait()),
                after(release, async { drop(latch.count_down("b").await) })
            );
            done
        }
        Kind::QueueTake => {
            let queue: DistributedQueue = DistributedQueue::new(a, path).unwrap();
            let producer: DistributedQueue = DistributedQueue::new(b, path).unwrap();
            let (done, _) = tokio::join!(
                dropped_after(cancel, queue.take()),
                after(release, async { drop(producer.put(&b"x".to_vec()).await) })
            );
            done
        }
        Kind::Counter => {
            // contention: `b` increments the same counter meanwhile, so `a` may queue on the
            // counter's own lock
            let counter = DistributedAtomicLong::new(a, path).unwrap();
            let other = DistributedAtomicLong::new(b, path).unwrap();
            let rival = async {
                let until = tokio::time::Instant::now() + release;
                while tokio::time::Instant::now() < until {
                    let _ = other.increment().await;
                }
            };
            // an increment takes milliseconds: drop it within its first few
            let (done, _) = tokio::join!(dropped_after(cancel / 20, counter.increment()), rival);
            done
        }
    }
}
