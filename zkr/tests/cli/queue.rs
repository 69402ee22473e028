//! `zkr queue put|take|size`: what they print, the order items come back in for each kind,
//! items exchanged with the library, a take that times out (exit 75) or is woken by a put,
//! and bad input (exit 2; an oversize item cannot be passed as one argument: the library's
//! `TooLarge` maps to 2 in `exit.rs`).

use std::time::{Duration, Instant};

use zk_recipes::{DistributedQueue, SimpleDistributedQueue};
use zk_recipes_testing::fixtures;

use super::{path, run, Zkr};

async fn put(cs: &str, args: &[&str]) -> String {
    let (code, lines, stderr) = run(cs, &[&["queue", "put"], args].concat()).await;
    assert_eq!(code, 0, "{args:?}: {stderr}");
    lines.into_iter().next().expect("the node's path")
}

async fn take(cs: &str, args: &[&str]) -> Vec<String> {
    let (code, lines, stderr) = run(cs, &[&["queue", "take", "--timeout", "10s"], args].concat()).await;
    assert_eq!(code, 0, "{args:?}: {stderr}");
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_take_size_for_every_kind() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;

    // distributed (default kind): FIFO; the library's put_multi comes back as one take
    let q = path("queue");
    assert!(put(&cs, &[&q, "first"]).await.starts_with(&format!("{q}/queue-")));
    DistributedQueue::new(&fw, &q).unwrap().put_multi(&[b"m1".to_vec(), b"m2".to_vec()]).await.unwrap();
    assert_eq!(run(&cs, &["queue", "size", &q]).await.1, ["2"]);
    assert_eq!(take(&cs, &[&q]).await, ["first"]);
    assert_eq!(take(&cs, &[&q]).await, ["m1", "m2"]);
    assert_eq!(run(&cs, &["--json", "queue", "size", &q]).await.1, [r#"{"size":0}"#]);

    // simple: what zkr puts, the library takes, and the reverse
    let s = path("simple");
    assert!(put(&cs, &["--kind", "simple", &s, "to-lib"]).await.starts_with(&format!("{s}/qn-")));
    let simple = SimpleDistributedQueue::new(&fw, &s).unwrap();
    assert_eq!(simple.take().await.unwrap(), b"to-lib");
    simple.offer(b"from lib").await.unwrap();
    assert_eq!(take(&cs, &["--kind", "simple", &s]).await, ["from lib"]);

    // priority: lowest first
    let p = path("prio");
    for (item, priority) in [("p5", "5"), ("p1", "1"), ("p3", "3")] {
        put(&cs, &[&p, "--priority", priority, item]).await;
    }
    for want in ["p1", "p3", "p5"] {
        assert_eq!(take(&cs, &["--kind", "priority", &p]).await, [want]);
    }

    // id
    let i = path("ids");
    assert!(put(&cs, &[&i, "--id", "job-1", "x"]).await.contains("/queue-|job-1|"));
    assert_eq!(take(&cs, &["--kind", "id", &i, "--json"]).await, [r#"{"data":"x"}"#]);

    // delay: not before its time
    let d = path("delay");
    let start = Instant::now();
    put(&cs, &[&d, "--delay", "1500ms", "later"]).await;
    put(&cs, &[&d, "--delay", "500ms", "sooner"]).await;
    assert_eq!(take(&cs, &["--kind", "delay", &d]).await, ["sooner"]);
    assert_eq!(take(&cs, &["--kind", "delay", &d]).await, ["later"]);
    assert!(start.elapsed() >= Duration::from_millis(1500), "{:?}", start.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn take_times_out_with_75_or_is_woken_by_a_put() {
    let cs = fixtures::shared_server().await;
    let q = path("wait");
    let (code, lines, stderr) = run(&cs, &["queue", "take", &q, "--timeout", "300ms"]).await;
    assert_eq!((code, lines), (75, vec![]), "{stderr}");
    assert!(stderr.contains("timed out"), "{stderr}");
    let mut waiting = Zkr::start(&cs, &["queue", "take", &q, "--kind", "simple"], &[]);
    put(&cs, &["--kind", "simple", &q, "wake up"]).await;
    assert_eq!(waiting.line().await, "wake up");
    assert_eq!(waiting.exit_code().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_exits_2() {
    let cs = fixtures::shared_server().await;
    let q = path("bad");
    for args in [
        vec!["queue", "put", &q, ""],
        vec!["queue", "put", &q, "--priority", "-1", "x"],
        vec!["queue", "put", &q, "--kind", "simple", "--id", "a", "x"],
        vec!["queue", "put", &q, "--kind", "priority", "x"],
        vec!["queue", "put", &q, "--id", "a", "--priority", "1", "x"],
        vec!["queue", "put", &q, "--id", "", "x"],
        vec!["queue", "put", "relative", "x"],
        vec!["queue", "take", "/", "--timeout", "1s"],
    ] {
        let (code, _, stderr) = run(&cs, &args).await;
        assert_eq!(code, 2, "{:?}: {stderr}", &args[..args.len().min(6)]);
    }
    let fw = fixtures::framework(&cs).await;
    assert_eq!(fw.children(&q).await.unwrap_or_default(), Vec::<String>::new(), "nothing was put");
}
