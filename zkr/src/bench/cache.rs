//! The cache workloads: `cache-load` (time to `Initialized` of a tree cache over a pre-built
//! tree of N nodes, and the resident memory) and `cache-delay` (how long a change takes to
//! arrive as a cache event under a steady write load).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zk_recipes::ZooKeeperError;

use futures_util::{stream, StreamExt};
use tokio::time::Instant;
use zk_recipes::zk::Acls;
use zk_recipes::CreateMode;
use zk_recipes::{Cache, CacheEvent, Framework};

use super::{fail, rss_mb, BenchArgs, Failure, Report};

/// Creates unanswered at most, while building a tree.
const IN_FLIGHT: usize = 1_000;
/// The data of every node of a built tree.
const DATA: &[u8] = b"0123456789abcdef0123456789abcdef";
/// The root's data once its tree is complete.
const COMPLETE: &[u8] = b"complete";

/// The paths of the tree of `nodes` nodes at `root`: the root, 100 directories `d0..d99`, and
/// the rest as leaves `n<j>` spread round-robin over the directories (the same shape as
/// CuratorBench.java builds).
pub(crate) fn tree_paths(root: &str, nodes: usize) -> Vec<String> {
    let dirs = nodes.saturating_sub(1).min(100);
    let mut paths = Vec::with_capacity(nodes);
    paths.push(root.to_string());
    paths.extend((0..dirs).map(|d| format!("{root}/d{d}")));
    let leaves = nodes.saturating_sub(1 + dirs);
    paths.extend((0..leaves).map(|j| format!("{root}/d{}/n{j}", j % dirs)));
    paths
}

/// Creates `root` (persistent; missing parents as containers) unless it exists.
async fn create_root(fw: &Framework, root: &str) -> Result<(), Failure> {
    match fw.create(root, b"", CreateMode::Persistent).await {
        Ok(_) | Err(zk_recipes::Error::ZooKeeper(ZooKeeperError::NodeExists)) => Ok(()),
        Err(e) => Err(fail(e)),
    }
}

/// Builds the tree of `nodes` nodes at `root` unless it is there already (its root's data says
/// `complete`, written last); a partly built one is completed. Untimed.
async fn ensure_tree(fw: &Framework, root: &str, nodes: usize) -> Result<(), Failure> {
    create_root(fw, root).await?;
    if matches!(fw.get_data(root).await, Ok((data, _)) if data == COMPLETE) {
        return Ok(());
    }
    let started = Instant::now();
    let client = fw.client().map_err(fail)?;
    let options = zk_recipes::zk::CreateMode::Persistent.with_acls(Acls::anyone_all());
    let paths = tree_paths(root, nodes);
    let mut created = stream::iter(&paths[1..]).map(|p| client.create(p, DATA, &options)).buffered(IN_FLIGHT);
    let bar = crate::progress::bar(paths.len().saturating_sub(1) as u64, "nodes");
    bar.set_message("building the tree");
    while let Some(result) = created.next().await {
        bar.inc(1);
        match result {
            Ok(_) | Err(zk_recipes::zk::Error::NodeExists) => {}
            Err(e) => {
                bar.finish_and_clear();
                return Err(fail(e));
            }
        }
    }
    bar.finish_and_clear();
    fw.set_data(root, COMPLETE, None).await.map_err(fail)?;
    eprintln!("built the tree of {nodes} nodes at {root} in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Time from `start` to `Initialized` of a tree cache (with data) over the tree of `--nodes`
/// nodes at `<base>/cache-tree-<nodes>` (built once, kept for the next runs), and the resident
/// memory before and once loaded.
pub(crate) async fn load(fw: &Framework, args: &BenchArgs) -> Result<Report, Failure> {
    let root = format!("{}/cache-tree-{}", args.base.trim_end_matches('/'), args.nodes);
    ensure_tree(fw, &root, args.nodes).await?;
    let before = rss_mb();
    let started = Instant::now();
    let cache = Cache::tree(fw, &root).build().map_err(|e| (2, e.to_string()))?;
    cache.start().await.map_err(fail)?;
    cache.initialized_timeout(Duration::from_secs(600)).await.map_err(fail)?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let rss = rss_mb();
    let loaded = cache.len();
    // its task ends before the session does (else it may poll a watch whose channel is gone):
    // close resolves once it has
    let _ = cache.close().await;
    if loaded != args.nodes {
        return Err((1, format!("the cache holds {loaded} nodes, not {}", args.nodes)));
    }
    Ok(Report {
        latencies_ms: vec![ms],
        extra: vec![
            ("nodes", args.nodes as f64),
            ("load_ms", ms),
            ("rss_mb", rss),
            ("rss_mb_before", before),
            ("rss_delta_mb", rss - before),
        ],
        ops_override: Some(args.nodes as u64),
        ..Default::default()
    })
}

/// A tree cache over `--nodes` nodes; a writer (its own session) sets their data round-robin at
/// `--rate` writes per second, each write's data the time it was sent (µs since the run's
/// start); each `Changed` event's delay is its arrival minus that time. Counted: writes sent
/// inside the window.
pub(crate) async fn delay(fw: &Framework, base: &str, args: &BenchArgs) -> Result<Report, Failure> {
    let root = format!("{base}/tree");
    create_root(fw, &root).await?;
    let paths = tree_paths(&root, args.nodes.max(2));
    let client = fw.client().map_err(fail)?;
    let options = zk_recipes::zk::CreateMode::Persistent.with_acls(Acls::anyone_all());
    let mut created = stream::iter(&paths[1..]).map(|p| client.create(p, b"0", &options)).buffered(IN_FLIGHT);
    while let Some(result) = created.next().await {
        result.map_err(fail)?;
    }
    let leaves: Vec<String> =
        paths.iter().filter(|p| p.matches('/').count() > root.matches('/').count()).cloned().collect();
    let cache = Cache::tree(fw, &root).event_capacity(1 << 20).build().map_err(|e| (2, e.to_string()))?;
    let mut events = Box::pin(cache.events());
    cache.start().await.map_err(fail)?;
    while !matches!(events.next().await, Some(CacheEvent::Initialized) | None) {}

    let writer = Framework::builder()
        .connect_string(fw.connect_string())
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(10))
        .connect()
        .await
        .map_err(|e| (69, e.to_string()))?;
    let origin = Instant::now();
    let start_us = (args.warmup_seconds * 1e6) as u64;
    let end_us = start_us + (args.seconds * 1e6) as u64;
    let errors = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let writing = {
        let (wclient, errors, sent) = (writer.client().map_err(fail)?, errors.clone(), sent.clone());
        let per_tick = (args.rate / 100).max(1);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut next = 0usize;
            loop {
                tick.tick().await;
                let now_us = origin.elapsed().as_micros() as u64;
                if now_us > end_us {
                    break;
                }
                let mut writes = Vec::with_capacity(per_tick);
                for _ in 0..per_tick {
                    let us = origin.elapsed().as_micros() as u64;
                    writes.push(wclient.set_data(&leaves[next % leaves.len()], us.to_string().as_bytes(), None));
                    next += 1;
                    if (start_us..end_us).contains(&us) {
                        sent.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let errors = errors.clone();
                tokio::spawn(async move {
                    for w in futures_util::future::join_all(writes).await {
                        if w.is_err() {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        })
    };
    let mut latencies_ms = Vec::new();
    let mut resyncs = 0u64;
    let stop = tokio::time::sleep_until(origin + Duration::from_micros(end_us) + Duration::from_secs(2));
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            event = events.next() => match event {
                Some(CacheEvent::Changed { new, .. }) => {
                    let now_us = origin.elapsed().as_micros() as u64;
                    let written: Option<u64> =
                        new.data.as_deref().and_then(|d| std::str::from_utf8(d).ok()).and_then(|s| s.parse().ok());
                    if let Some(us) = written.filter(|us| (start_us..end_us).contains(us)) {
                        latencies_ms.push(now_us.saturating_sub(us) as f64 / 1000.0);
                    }
                }
                Some(CacheEvent::Resynced { .. }) => resyncs += 1,
                Some(_) => {}
                None => break,
            },
        }
    }
    let _ = writing.await;
    // its task ends before the session does (else it may poll a watch whose channel is gone):
    // close resolves once it has
    let _ = cache.close().await;
    writer.close();
    let sent = sent.load(Ordering::Relaxed);
    // a write whose event never came (coalesced into a later one of the same node, or lost)
    let missed = sent.saturating_sub(latencies_ms.len() as u64);
    Ok(Report {
        latencies_ms,
        errors: errors.load(Ordering::Relaxed),
        extra: vec![
            ("nodes", args.nodes as f64),
            ("rate", args.rate as f64),
            ("writes", sent as f64),
            ("missed", missed as f64),
            ("resyncs", resyncs as f64),
        ],
        ..Default::default()
    })
}
