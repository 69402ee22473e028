//! `InterProcessMutex::acquire_and_read`: the read that comes with a hold shows every write
//! that earlier holders committed before they let go — whether the hold came from a listing
//! (the read pipelined behind it) or from a hand-off without one (read right after).

use futures_util::future::join_all;

use zk_recipes::CreateMode;
use zk_recipes::{Error, InterProcessMutex};
use zk_recipes_testing::fixtures;

use super::WAIT;

/// Sessions in three frameworks, two tasks each, increment one node under the mutex, each
/// increment a versioned write of what `acquire_and_read` returned: a read older than the
/// previous holder's write would be refused (an error here) or lose an increment (a wrong
/// total). Half the writes are committed with the release, half before it.
#[tokio::test]
async fn the_read_shows_every_write_made_before_the_previous_holder_let_go() {
    const ROUNDS: usize = 12;
    let cs = fixtures::shared_server().await;
    let base = format!("/{}", fixtures::unique("read-under-lock"));
    let (data, lock) = (format!("{base}-count"), format!("{base}/lock"));
    let mut frameworks = Vec::new();
    for _ in 0..3 {
        frameworks.push(fixtures::framework(&cs).await);
    }
    frameworks[0].create(&data, b"0", CreateMode::Persistent).await.unwrap();
    let tasks = frameworks.iter().flat_map(|fw| [fw.clone(), fw.clone()]).enumerate().map(|(task, fw)| {
        let (data, lock) = (data.clone(), lock.clone());
        async move {
            let mutex = InterProcessMutex::new(&fw, &lock).unwrap();
            for round in 0..ROUNDS {
                let (guard, read) = mutex.acquire_and_read(&data).await.unwrap();
                let read = read.expect("the node exists");
                let count: usize = String::from_utf8(read.value).unwrap().parse().unwrap();
                let next = (count + 1).to_string();
                if (task + round) % 2 == 0 {
                    let write = fw.transaction().set_data(&data, next.as_bytes(), Some(read.version));
                    guard.commit_and_release(write.without_marker()).await.unwrap();
                } else {
                    fw.set_data(&data, next.as_bytes(), Some(read.version)).await.unwrap();
                    guard.release().await.unwrap();
                }
            }
        }
    });
    tokio::time::timeout(WAIT * 3, join_all(tasks)).await.expect("every task finished its rounds");
    let (count, _) = frameworks[0].get_data(&data).await.unwrap();
    assert_eq!(String::from_utf8(count).unwrap(), (6 * ROUNDS).to_string(), "no increment lost");
    assert!(frameworks[0].children(&lock).await.unwrap().is_empty(), "no node left in the queue");
}

/// A missing node reads as `None` (and the lock is held); an invalid path is refused before
/// anything is created.
#[tokio::test]
async fn a_missing_node_reads_as_none_and_a_bad_path_is_refused() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("read-under-lock-missing"));
    let mutex = InterProcessMutex::new(&fw, &format!("{base}/lock")).unwrap();
    let (guard, read) = mutex.acquire_and_read(&format!("{base}/no-such-node")).await.unwrap();
    assert!(read.is_none());
    assert!(mutex.is_acquired_in_this_process());
    guard.release().await.unwrap();
    let bad = mutex.acquire_and_read("no-slash").await;
    assert!(matches!(bad, Err(Error::InvalidPath { .. })), "{:?}", bad.map(|(_, r)| r));
    assert!(fw.children(&format!("{base}/lock")).await.unwrap().is_empty(), "nothing left behind");
}
