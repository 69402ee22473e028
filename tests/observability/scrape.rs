//! The `metrics` example's service in two child processes (this test binary, run again on the
//! ignored `service_child` entry point, runs the example's very code), scraped over HTTP.

#[path = "../../examples/metrics/service.rs"]
#[allow(dead_code)]
mod service;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use zk_recipes_testing::fixtures::{eventually, shared_server, unique};

const ROUNDS: u32 = 5;
const WAIT: Duration = Duration::from_secs(60);

/// The entry point of the child processes: runs the example's service as the environment says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of the scrape test, started by it"]
async fn service_child() {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is set by the parent"));
    let opts = service::Options {
        connect: var("OBS_CONNECT"),
        listen: var("OBS_LISTEN").parse().unwrap(),
        root: var("OBS_ROOT"),
        id: var("OBS_ID"),
        rounds: var("OBS_ROUNDS").parse().unwrap(),
        serve: true,
        expire: var("OBS_EXPIRE") == "1",
    };
    service::run(opts).await.unwrap();
}

/// A child process running the service; killed (by its pid) when dropped.
struct Instance {
    child: Child,
    listen: SocketAddr,
}

impl Instance {
    /// Starts it and waits until it serves (after its rounds and, if asked, the expiry).
    fn start(connect: &str, root: &str, id: &str, expire: bool) -> Instance {
        let listen = service::free_port().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "scrape::service_child", "--nocapture", "--test-threads=1"])
            .env("OBS_CONNECT", connect)
            .env("OBS_LISTEN", listen.to_string())
            .env("OBS_ROOT", root)
            .env("OBS_ID", id)
            .env("OBS_ROUNDS", ROUNDS.to_string())
            .env("OBS_EXPIRE", if expire { "1" } else { "0" })
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let instance = Instance { child, listen };
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if line == "serving" {
                return instance;
            }
        }
        panic!("instance {id} ended before serving");
    }

    async fn scrape(&self) -> Scraped {
        Scraped::parse(&service::scrape(self.listen).await.expect("the endpoint answers"))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One scrape: each sample's value by its name and labels.
struct Scraped(Vec<(String, BTreeMap<String, String>, f64)>);

impl Scraped {
    fn parse(text: &str) -> Scraped {
        let mut samples = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            let (series, value) = line.rsplit_once(' ').expect("a sample line");
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split("\",")
                .filter(|l| !l.is_empty())
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
                .collect();
            samples.push((name.to_string(), labels, value.parse().expect("a number")));
        }
        Scraped(samples)
    }

    /// The value of the sample `name` with exactly `labels`, if served.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let wanted: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.0.iter().find(|(n, l, _)| n == name && *l == wanted).map(|(_, _, v)| *v)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_serve_the_documented_metrics() {
    use zk_recipes::metrics::*;
    let cs = shared_server().await;
    let root = format!("/{}", unique("obs-example"));
    let (a, b) = tokio::task::spawn_blocking({
        let (cs, root) = (cs.clone(), root.clone());
        move || {
            let a = Instance::start(&cs, &root, "a", true);
            let b = Instance::start(&cs, &root, "b", false);
            (a, b)
        }
    })
    .await
    .unwrap();
    let leader_path = format!("{root}/leader");
    let leader = [("path", leader_path.as_str()), ("recipe", "latch")];
    // exactly one of the two leads (after a's expiry, once its latch queued again)
    eventually(WAIT, "one leader gauge at 1, the other at 0", || async {
        let (sa, sb) = (a.scrape().await, b.scrape().await);
        let mut values = [sa.get(LEADER, &leader), sb.get(LEADER, &leader)];
        values.sort_by(|x, y| x.partial_cmp(y).unwrap());
        values == [Some(0.0), Some(1.0)]
    })
    .await;
    let wait_count = format!("{LOCK_WAIT_SECONDS}_count");
    let hold_count = format!("{LOCK_HOLD_SECONDS}_count");
    for (instance, expired) in [(&a, 1.0), (&b, 0.0)] {
        let s = instance.scrape().await;
        assert_eq!(s.get(&wait_count, &[("kind", "mutex"), ("outcome", "acquired")]), Some(f64::from(ROUNDS)));
        assert_eq!(s.get(&hold_count, &[("kind", "mutex")]), Some(f64::from(ROUNDS)));
        assert_eq!(s.get(LOCK_HOLDERS, &[("kind", "mutex")]), Some(0.0));
        assert_eq!(s.get(SESSION_EXPIRIES, &[]).unwrap_or(0.0), expired);
        assert_eq!(s.get(SESSION_RECREATIONS, &[]).unwrap_or(0.0), expired);
        let connected = if expired > 0.0 { "RECONNECTED" } else { "CONNECTED" };
        assert_eq!(s.get(SESSION_STATE, &[("state", connected)]), Some(1.0));
        // both see the other's nodes: the root and 3 nodes of each instance
        eventually(WAIT, "the cache holds the tree", || async {
            instance.scrape().await.get(CACHE_NODES, &[("kind", "tree")]) == Some(7.0)
        })
        .await;
    }
    drop((a, b));
}
