//! Bad input across every subcommand and the global options (paths, ids, payloads, durations,
//! leases, counts, priorities, certificates that do not parse): exit 2 with a message on stderr and
//! nothing on stdout, never a panic — and nothing left behind on the server.

use super::{path, run, temp_file};
use zk_recipes_testing::fixtures;

#[tokio::test]
async fn thirty_plus_bad_inputs_exit_2_and_leave_nothing_behind() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = path("bad");
    let at = |rest: &str| format!("{base}/{rest}");
    let dir = tempfile::tempdir().unwrap();
    let garbage = temp_file(&dir, "garbage.pem");
    std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n").unwrap();
    let missing = dir.path().join("missing.pem").display().to_string();
    let (l, s, e, b, c, g, q) = (at("l"), at("s"), at("e"), at("b"), at("c"), at("g"), at("q"));
    let cases: Vec<Vec<&str>> = vec![
        // lock: leases, durations, paths, actions
        vec!["lock", &l, "--lease", "0s", "--", "true"],
        vec!["lock", &l, "--renew-on-output", "--", "true"],
        vec!["lock", &l, "--timeout", "soon", "--", "true"],
        vec!["lock", &l, "--kill-after", "-1s", "--", "true"],
        vec!["lock", &l, "--on-lost", "explode", "--", "true"],
        vec!["lock", "/a/./b", "--", "true"],
        vec!["lock", "/a/../b", "--", "true"],
        vec!["lock", &l, "--kind", "read", "--lease", "1x", "--", "true"],
        // semaphore, elect, barriers
        vec!["semaphore", &s, "--leases", "99999999999999999999999"],
        vec!["semaphore", "relative", "--leases", "1"],
        vec!["semaphore", &s, "--leases", "1", "--count", "0"],
        vec!["elect", "relative", "--", "true"],
        vec!["elect", &e, "--observe", "--", "true"],
        vec!["elect", &e, "--timeout", "1 fortnight", "--", "true"],
        vec!["barrier", &b, "open"],
        vec!["barrier", "/b/", "wait"],
        vec!["double-barrier", &b, "--members", "-1"],
        // counters
        vec!["atomic", &c, "cas", "1"],
        vec!["atomic", &c, "set", "3000000000", "--int"],
        vec!["atomic", &c, "add", "twelve"],
        vec!["shared-count", &c, "set", "3000000000"],
        vec!["shared-count", "relative", "get"],
        // inspect, watch
        vec!["inspect", "/trailing/"],
        vec!["watch", &base, "--max-depth", "-1"],
        vec!["watch", &base, "--mode", "forest"],
        // group: ids and paths
        vec!["group", "join", &g, "--id", "a/b", "--", "true"],
        vec!["group", "join", &g, "--id", "", "--", "true"],
        vec!["group", "join", &g, "--id", "..", "--", "true"],
        vec!["group", "join", "relative", "--id", "m", "--", "true"],
        vec!["group", "members", "/g//h"],
        // discover: names, bases, payloads
        vec!["discover", "register", "orders", "--base", "relative", "--address", "h", "--port", "1"],
        vec!["discover", "register", "a/b", "--base", &base, "--address", "h", "--port", "1"],
        vec!["discover", "register", "orders", "--base", &base, "--address", "h", "--port", "1", "--payload", "[1,"],
        vec!["discover", "register", "orders", "--base", &base, "--address", "h", "--port", "-1"],
        vec!["discover", "list", "..", "--base", &base],
        vec!["discover", "names", "--base", "/x//y"],
        // queues: kinds, payloads, priorities, delays, paths
        vec!["queue", "put", &q, "--kind", "nope", "x"],
        vec!["queue", "put", &q, ""],
        vec!["queue", "put", &q, "--priority", "-3", "x"],
        vec!["queue", "put", &q, "--delay", "1x", "x"],
        vec!["queue", "put", "relative", "x"],
        vec!["queue", "take", &q, "--timeout", "soon"],
        // latches: counts, ids, durations, paths
        vec!["latch", "set", &l, "0"],
        vec!["latch", "set", "relative", "2"],
        vec!["latch", "down", &l, "--id", "a/b"],
        vec!["latch", "down", &l, "--id", ""],
        vec!["latch", "wait", &l, "--timeout", "never"],
        // global options: timeouts, namespaces, certificates that do not parse, SASL files
        vec!["--session-timeout", "0s", "inspect", &base],
        vec!["--connection-timeout", "0s", "inspect", &base],
        vec!["--session-timeout", "5 parsecs", "inspect", &base],
        vec!["--namespace", "ns/", "inspect", &base],
        vec!["--tls-ca", &garbage, "inspect", &base],
        vec!["--tls-ca", &missing, "inspect", &base],
        vec!["--tls-ca", &garbage, "--tls-cert", &garbage, "--tls-key", &garbage, "inspect", &base],
        vec!["--tls-cert", &garbage, "inspect", &base],
        vec!["--sasl-user", "u", "--sasl-password-file", &missing, "inspect", &base],
    ];
    assert!(cases.len() >= 45, "{} cases", cases.len());
    let mut failed = Vec::new();
    for args in &cases {
        let (code, out, err) = run(&cs, args).await;
        let panicked = err.contains("panicked");
        if code != 2 || !out.is_empty() || err.trim().is_empty() || panicked {
            failed.push(format!("zkr {args:?}: exit {code}, stdout {out:?}, stderr {err:?}"));
        }
    }
    assert!(failed.is_empty(), "bad inputs without exit 2 and a message:\n{}", failed.join("\n"));
    // nothing left behind: no node under the base, not even the base
    assert_eq!(fw.exists(&base).await.unwrap(), None, "a refused zkr created {base}");
    fw.close();
}
