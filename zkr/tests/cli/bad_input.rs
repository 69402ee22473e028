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

/// Durations at their extremes never panic: about `u64::MAX` seconds (`580000000000y`, the
/// largest humantime reads) is "as long as it takes". A free lock's `--timeout` runs CMD; a
/// queue's `take --timeout` takes the item there; an open barrier and a latch never set let a
/// wait through; a lease that runs out still ends CMD with `--kill-after` that long (SIGTERM,
/// which CMD obeys); `--delay` that long puts an item for the far future. The bench refuses a
/// window or counts past what it can hold (exit 2).
#[tokio::test]
async fn durations_at_their_extremes_never_panic() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let base = path("extreme");
    let at = |rest: &str| format!("{base}/{rest}");
    const HUGE: &str = "580000000000y";
    let (lock, queue, barrier, latch, elect, delayed) =
        (at("lock"), at("queue"), at("barrier"), at("latch"), at("elect"), at("delayed"));
    let (code, _, err) = run(&cs, &["queue", "put", &queue, "item"]).await;
    assert_eq!(code, 0, "{err}");
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["lock", &lock, "--timeout", HUGE, "--", "true"], 0),
        (vec!["elect", &elect, "--timeout", HUGE, "--", "true"], 0),
        (vec!["queue", "take", &queue, "--timeout", HUGE], 0),
        (vec!["barrier", "wait", &barrier, "--timeout", HUGE], 0),
        (vec!["latch", "wait", &latch, "--timeout", HUGE], 0),
        (vec!["queue", "put", &delayed, "--kind", "delay", "--delay", HUGE, "later"], 0),
        (vec!["lock", &lock, "--lease", "300ms", "--kill-after", HUGE, "--", "sleep", "20"], 76),
        // the bench's own window and counts: refused (exit 2), not an overflow
        (vec!["bench", "--recipe", "mutex", "--seconds", "inf"], 2),
        (vec!["bench", "--recipe", "mutex", "--seconds", "1e300"], 2),
        (vec!["bench", "--recipe", "mutex", "--warmup-seconds", "inf"], 2),
        (vec!["bench", "--recipe", "mutex", "--clients", "18446744073709551615"], 2),
        (vec!["bench", "--recipe", "mutex", "--tasks", "18446744073709551615"], 2),
    ];
    let mut failed = Vec::new();
    for (args, want) in &cases {
        let started = std::time::Instant::now();
        let (code, out, err) = run(&cs, args).await;
        let took = started.elapsed();
        if code != *want || err.contains("panicked") || took > std::time::Duration::from_secs(15) {
            failed.push(format!(
                "zkr {args:?}: exit {code} (want {want}) after {took:?}, stdout {out:?}, stderr {err:?}"
            ));
        }
    }
    assert!(failed.is_empty(), "extreme durations:\n{}", failed.join("\n"));
    let _ = fw.delete_recursive(&base).await;
    fw.close();
}
