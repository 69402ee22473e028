//! Caches over a hostile tree. Rule: a cache holds whatever the server holds — every name
//! and every byte is data to it (odd unicode, non-UTF-8, empty, 1 MB), nothing is parsed;
//! nodes deleted and re-created while it reads converge to the server's state.

use std::collections::BTreeMap;

use zk_recipes::cache::WatchMode;
use zk_recipes::CreateMode;
use zk_recipes::{Cache, Framework};

use crate::support::{self, junk_data, junk_name, live};

/// The tree under `root` as the server has it: path → data.
async fn server_tree(fw: &Framework, root: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_string()];
    while let Some(path) = todo.pop() {
        let Ok((data, _)) = fw.get_data(&path).await else { continue };
        for c in fw.children(&path).await.unwrap_or_default() {
            todo.push(format!("{path}/{c}"));
        }
        out.insert(path, data);
    }
    out
}

/// Property: tree caches (persistent and one-shot watches) over random junk names and data,
/// while a churn task deletes and re-creates nodes, equal the server's tree once it stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_converge_on_a_hostile_tree() {
    let mut rng = support::rng("caches");
    let fw = support::framework().await;
    for (round, mode) in [WatchMode::Persistent, WatchMode::OneShot].into_iter().enumerate() {
        let root = support::base(&format!("cache-{round}"));
        fw.create(&root, b"", CreateMode::Persistent).await.unwrap();
        let mut names = Vec::new();
        for _ in 0..8 {
            let name = junk_name(&mut rng, "lock-");
            let data = junk_data(&mut rng);
            let parent = if rng.bool() && !names.is_empty() {
                format!("{root}/{}", names[rng.usize(..names.len())])
            } else {
                root.clone()
            };
            let _ = fw.create(&format!("{parent}/{name}"), &data, CreateMode::Persistent).await;
            names.push(name);
        }
        let cache = Cache::tree(&fw, &root).watch_mode(mode).build().unwrap();
        let churn = support::churn(&fw, &root, names.clone(), rng.u64(..));
        live("cache start", cache.start()).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        support::stop_churn(churn).await;
        live(&format!("{mode:?} cache converging"), async {
            loop {
                let want = server_tree(&fw, &root).await;
                let have: BTreeMap<String, Vec<u8>> =
                    cache.snapshot().into_iter().map(|(p, n)| (p, n.data.unwrap_or_default())).collect();
                if want == have {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(cache.failure().is_none(), "{:?}", cache.failure());
        cache.close().await.unwrap();
    }
    fw.close();
}
