//! `zkr lock --lease DUR [--renew-on-output] -- CMD`: the hold ends at DUR unless renewed,
//! CMD gets the --on-lost treatment and zkr exits 76; a line on CMD's stdout renews the lease
//! and is passed through.

use std::time::Duration;

use tokio::time::Instant;
use zk_recipes_testing::fixtures;

use super::{children, path, read, run, temp_file, Zkr, TERM_RECORDER};

#[tokio::test]
async fn a_lease_ends_the_hold_at_its_time_and_the_lock_is_free() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let dir = tempfile::tempdir().unwrap();
    let (lock, file) = (path("lease-end"), temp_file(&dir, "term"));
    let mut zkr =
        Zkr::start(&cs, &["lock", &lock, "--lease", "1s", "--", "sh", "-c", TERM_RECORDER], &[("FILE", &file)]);
    assert_eq!(zkr.line().await, "ready");
    let started = Instant::now();
    assert_eq!(zkr.exit_code().await, 76, "{}", zkr.stderr());
    assert!(started.elapsed() < Duration::from_secs(3), "ended at the lease, not later: {:?}", started.elapsed());
    assert_eq!(read(&file).trim(), "term", "CMD got SIGTERM");
    assert!(zkr.stderr().contains("lease expired"), "{}", zkr.stderr());
    assert!(children(&fw, &lock).await.is_empty(), "the lock node is gone");
}

#[tokio::test]
async fn output_lines_renew_the_lease_and_pass_through() {
    let cs = fixtures::shared_server().await;
    let lock = path("lease-renew");
    // 12 lines 0.2 s apart under a 0.6 s lease: 2.4 s held, then the lease is left to run out
    // while CMD goes on sleeping
    let script = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo tick $i; sleep 0.2; done; sleep 5";
    let args = ["lock", &lock, "--lease", "600ms", "--renew-on-output", "--", "sh", "-c", script];
    let mut zkr = Zkr::start(&cs, &args, &[]);
    for i in 1..=12 {
        assert_eq!(zkr.line().await, format!("tick {i}"), "passed through");
    }
    assert_eq!(zkr.exit_code().await, 76, "{}", zkr.stderr());
    assert!(zkr.stderr().contains("lease expired"), "{}", zkr.stderr());
}

#[tokio::test]
async fn lease_usage_errors_exit_2() {
    let cs = fixtures::shared_server().await;
    for args in [
        vec!["lock", "/a", "--renew-on-output", "--", "true"],
        vec!["lock", "/a", "/b", "--lease", "1s", "--", "true"],
        vec!["lock", "/a", "--lease", "0s", "--", "true"],
        vec!["lock", "/a", "--lease", "soon", "--", "true"],
    ] {
        let (code, _, stderr) = run(&cs, &args).await;
        assert_eq!(code, 2, "{args:?}: {stderr}");
    }
}
