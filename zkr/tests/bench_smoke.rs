//! A short smoke run of every `zkr bench` recipe: one JSON line, no violation, no error.
//! (Benchmarks are measured by `bench/compare.sh`, never in tests.)

use std::process::Command;
use zk_recipes_testing::fixtures;

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    line[at..].split([',', '}']).next()
}

fn bench(cs: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args(["--connect", cs, "bench", "--seconds", "1", "--warmup-seconds", "0.2"])
        .args(args)
        .output()
        .expect("run zkr bench");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn every_recipe_runs_clean() {
    let cs = fixtures::shared_server().await;
    let base = format!("/{}", fixtures::unique("bench"));
    let mut runs: Vec<Vec<&str>> = [
        "mutex",
        "rwlock",
        "semaphore",
        "semaphore_mutex",
        "counter",
        "shared_count",
        "double_barrier",
        "raw",
        "raw_set",
        "raw_seq",
    ]
    .iter()
    .map(|r| vec!["--recipe", r, "--clients", "3"])
    .collect();
    runs.push(vec!["--recipe", "mutex", "--clients", "3", "--peer", "zookeeper-client"]);
    runs.push(vec!["--recipe", "raw_set", "--clients", "2", "--peer", "zookeeper-client"]);
    // many tasks on one session share one counter handle; the run checks exactly-once itself
    runs.push(vec!["--recipe", "counter", "--clients", "1", "--tasks", "16"]);
    runs.push(vec!["--recipe", "drain", "--clients", "2", "--waiters", "30"]);
    runs.push(vec!["--recipe", "waiters_memory", "--waiters", "200"]);
    // replicas deciding the ticks of one scheduled job; each tick checked: exactly one winner
    // (many replicas: with the winner unlocking before all had answered, this run found about
    // 80 ticks taken twice in each of 2 tries, while 8 replicas found none; 48 stays under the
    // test server's default limit of 60 connections per host)
    runs.push(vec!["--recipe", "shedlock", "--clients", "48"]);
    // a lock per entity: tasks on one session over a few entities (so that they contend), the
    // stock of every entity checked after the window; skewed too, and zookeeper-client's lock
    runs.push(vec!["--recipe", "entity", "--clients", "1", "--tasks", "16", "--paths", "20"]);
    runs.push(vec!["--recipe", "entity", "--clients", "1", "--tasks", "16", "--paths", "20", "--skew", "zipf"]);
    runs.push(vec![
        "--recipe",
        "entity",
        "--clients",
        "1",
        "--tasks",
        "8",
        "--paths",
        "20",
        "--peer",
        "zookeeper-client",
    ]);
    // the per-entity ceiling: an entity sale's requests without a lock, tasks on one session
    runs.push(vec!["--recipe", "raw_entity", "--clients", "1", "--tasks", "8"]);
    // many locks held at once by one session, every one acquired and released
    runs.push(vec!["--recipe", "holders", "--clients", "1", "--holders", "1500", "--tasks", "32"]);
    for mut args in runs {
        args.extend(["--base", base.as_str()]);
        let (code, stdout) = bench(&cs, &args);
        assert_eq!(code, 0, "{args:?}: exit {code}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: exactly one line: {stdout:?}");
        let line = lines[0];
        assert_eq!(field(line, "violations"), Some("0"), "{args:?}: {line}");
        assert_eq!(field(line, "errors"), Some("0"), "{args:?}: {line}");
        let ops: f64 = field(line, "ops").unwrap().parse().unwrap();
        assert!(ops > 0.0, "{args:?}: no operation counted: {line}");
        if let Some(at) = args.iter().position(|a| *a == "--tasks") {
            assert_eq!(field(line, "tasks"), Some(args[at + 1]), "{args:?}: {line}");
        }
    }
    let (code, stdout) = bench(&cs, &["--recipe", "no-such-recipe"]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    let (code, _) = bench(&cs, &["--recipe", "rwlock", "--peer", "zookeeper-client"]);
    assert_eq!(code, 2, "zookeeper-client has only a mutex and the floors");
    let (code, _) = bench(&cs, &["--recipe", "drain", "--tasks", "2"]);
    assert_eq!(code, 2, "--tasks is for the timed loops");
    let (code, _) = bench(&cs, &["--recipe", "entity", "--clients", "2"]);
    assert_eq!(code, 2, "the entity recipe runs on one session");
    let (code, _) = bench(&cs, &["--recipe", "entity", "--skew", "pareto"]);
    assert_eq!(code, 2, "an unknown skew");
}

/// A run long enough for the progress bar (3 s and more): with stderr piped nothing but the
/// result line comes out, stderr holds no bar; on a terminal (`script` gives zkr one) the bar
/// is drawn, so the piped check can fail.
#[tokio::test]
async fn progress_only_on_a_terminal() {
    let cs = fixtures::shared_server().await;
    let base = format!("/{}", fixtures::unique("bench-progress"));
    let args = ["--connect", &cs, "bench", "--recipe", "raw", "--seconds", "3", "--warmup-seconds", "0.5"];
    let args: Vec<&str> = args.into_iter().chain(["--base", base.as_str()]).collect();
    let out = Command::new(env!("CARGO_BIN_EXE_zkr")).args(&args).output().expect("run zkr bench");
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains('\r') && !stderr.contains("ops") && !stderr.contains('%'),
        "progress when piped: {stderr:?}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let quoted: Vec<String> =
        std::iter::once(env!("CARGO_BIN_EXE_zkr")).chain(args.iter().copied()).map(|a| format!("'{a}'")).collect();
    let tty = Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1)");
    assert_eq!(tty.status.code(), Some(0));
    let terminal = String::from_utf8_lossy(&tty.stdout);
    assert!(terminal.contains("ops") && terminal.contains('%'), "no progress on a terminal: {terminal:?}");
}
