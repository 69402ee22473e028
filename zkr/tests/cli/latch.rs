//! `zkr latch`: set, down, count and wait, their output and exit codes.

use serde_json::Value;
use zk_recipes_testing::fixtures;

use super::{path, run, Zkr};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_set_down_count_and_wait() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let latch = path("latch");
    // nothing set: count 0, wait passes, a count-down has nothing to count
    assert_eq!(run(&cs, &["latch", "count", &latch]).await.1, ["0"]);
    assert_eq!(run(&cs, &["latch", "wait", &latch]).await.0, 0);
    let (code, _, err) = run(&cs, &["latch", "down", &latch, "--id", "a"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no count is set"), "{err}");

    let (code, out, err) = run(&cs, &["latch", "set", &latch, "3"]).await;
    assert_eq!((code, out), (0, vec!["1".to_string()]), "{err}");
    let (code, _, err) = run(&cs, &["latch", "set", &latch, "5"]).await;
    assert_eq!(code, 1, "still counting down: {err}");
    assert_eq!(run(&cs, &["latch", "count", &latch]).await.1, ["3"]);
    let (code, _, err) = run(&cs, &["latch", "wait", &latch, "--timeout", "300ms"]).await;
    assert_eq!(code, 75, "{err}");

    let mut waiter = Zkr::start(&cs, &["latch", "wait", &latch], &[]);
    assert_eq!(run(&cs, &["latch", "down", &latch, "--id", "a"]).await.1, ["2"]);
    // the same participant again counts nothing
    let (code, out, _) = run(&cs, &["--json", "latch", "down", &latch, "--id", "a"]).await;
    assert_eq!(code, 0);
    let answer: Value = serde_json::from_str(&out[0]).unwrap();
    assert_eq!(answer, serde_json::json!({"counted": false, "generation": 1, "remaining": 2}));
    assert_eq!(run(&cs, &["latch", "down", &latch, "--id", "b"]).await.1, ["1"]);
    assert!(waiter.child.try_wait().unwrap().is_none(), "the waiter waits for the last count-down");
    assert_eq!(run(&cs, &["latch", "down", &latch, "--id", "c"]).await.1, ["0"]);
    assert_eq!(waiter.exit_code().await, 0, "{}", waiter.stderr());
    assert_eq!(run(&cs, &["--json", "latch", "count", &latch]).await.1, [r#"{"count":0}"#]);
    // open: a new generation can be set
    let (code, out, _) = run(&cs, &["--json", "latch", "set", &latch, "2"]).await;
    assert_eq!((code, out), (0, vec![r#"{"generation":2,"count":2}"#.to_string()]));
    assert_eq!(run(&cs, &["latch", "count", &latch]).await.1, ["2"]);
    assert_eq!(fw.children(&latch).await.unwrap(), ["gen-0000000002"], "the old generation is gone");

    // refused before connecting (exit 2), or by the library (exit 2 as well)
    for bad in [
        &["latch", "set", &latch, "0"][..],
        &["latch", "down", &latch, "--id", ""],
        &["latch", "down", &latch, "--id", "a/b"],
        &["latch", "down", &latch, "--id", ".."],
        &["latch", "count", "/"],
        &["latch", "wait", "relative"],
    ] {
        let (code, _, err) = run(&cs, bad).await;
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
    assert_eq!(run(&cs, &["latch", "count", &latch]).await.1, ["2"], "refused input changed nothing");
    fw.close();
}
