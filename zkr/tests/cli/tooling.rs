//! zkr as a tool: logging never mixed into `--json` stdout, no progress when stderr is piped
//! (and progress when it is a terminal), completions, the man page, and the older argument
//! spellings next to the new ones.

use std::process::{Command, Stdio};

use zk_recipes::{DistributedBarrier, SharedCount};
use zk_recipes_testing::fixtures;

use super::{path, run, ZKR};

/// zkr without a server: (exit code, stdout, stderr).
fn offline(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(ZKR).args(args).env_remove("RUST_LOG").stdin(Stdio::null()).output().expect("run zkr");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("UTF-8");
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

#[tokio::test]
async fn with_vv_the_logs_go_to_stderr_and_stdout_stays_json() {
    let cs = fixtures::shared_server().await;
    let counter = path("vv");
    let (code, out, err) = run(&cs, &["-vv", "--json", "atomic", "add", &counter, "5"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.len(), 1, "{out:?}");
    let value: serde_json::Value = serde_json::from_str(&out[0]).expect("stdout is JSON");
    assert_eq!(value, serde_json::json!({"value": 5}));
    assert!(err.contains("DEBUG"), "-vv logs at debug level to stderr:\n{err}");
    // RUST_LOG alone, the same
    let (code, out, err) = super::run_with(&cs, &["--json", "atomic", "get", &counter], &[("RUST_LOG", "debug")]).await;
    assert_eq!((code, out.len()), (0, 1), "{err}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out[0]).unwrap(), serde_json::json!({"value": 5}));
    assert!(err.contains("DEBUG"), "RUST_LOG=debug logs to stderr:\n{err}");
    // without either: no debug lines
    let (code, _, err) = run(&cs, &["--json", "atomic", "get", &counter]).await;
    assert_eq!(code, 0);
    assert!(!err.contains("DEBUG"), "{err}");
}

#[tokio::test]
async fn old_and_new_spellings_do_the_same() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    // atomic: operation first, and the old PATH first
    let counter = path("spell-atomic");
    assert_eq!(run(&cs, &["atomic", "add", &counter, "2"]).await.1, ["2"]);
    assert_eq!(run(&cs, &["atomic", &counter, "add", "-5"]).await.1, ["-3"]);
    assert_eq!(
        run(&cs, &["atomic", "--json", &counter, "cas", "-3", "7"]).await.1,
        [r#"{"value":7,"succeeded":true}"#]
    );
    assert_eq!(run(&cs, &["atomic", "get", &counter]).await.1, ["7"]);
    // shared-count
    let count = path("spell-count");
    assert_eq!(run(&cs, &["shared-count", "set", &count, "4"]).await.1, ["4"]);
    assert_eq!(run(&cs, &["shared-count", &count, "set", "6"]).await.1, ["6"]);
    assert_eq!(SharedCount::new(&fw, &count, 0).unwrap().get().await.unwrap().value, 6);
    assert_eq!(run(&cs, &["shared-count", &count, "get"]).await.1, ["6"]);
    // barrier
    let barrier = path("spell-barrier");
    let check = DistributedBarrier::new(&fw, &barrier).unwrap();
    assert_eq!(run(&cs, &["barrier", "set", &barrier]).await.0, 0);
    assert!(fw.exists(&barrier).await.unwrap().is_some());
    assert_eq!(run(&cs, &["barrier", "--timeout", "200ms", &barrier, "wait"]).await.0, 75);
    assert_eq!(run(&cs, &["barrier", &barrier, "remove"]).await.0, 0);
    check.wait_on_barrier().await.unwrap();
    assert_eq!(run(&cs, &["barrier", "wait", &barrier, "--timeout", "2s"]).await.0, 0);
    // semaphore: --max-leases and the old --leases
    let sem = path("spell-sem");
    for spelling in ["--max-leases", "--leases"] {
        let (code, _, err) = run(&cs, &["semaphore", &sem, spelling, "2", "--count", "2", "--", "true"]).await;
        assert_eq!(code, 0, "{spelling}: {err}");
        let (code, _, err) = run(&cs, &["semaphore", &sem, spelling, "1", "--count", "2", "--", "true"]).await;
        assert_eq!(code, 2, "{spelling}: {err}");
    }
    // watch: --kind and the old --mode
    let watched = path("spell-watch");
    for spelling in ["--kind", "--mode"] {
        let mut zkr = super::Zkr::start(&cs, &["--json", "watch", &watched, spelling, "node"], &[]);
        assert_eq!(zkr.line().await, r#"{"event":"initialized"}"#, "{spelling}");
    }
    let (code, _, err) = run(&cs, &["watch", &watched, "--kind", "node", "--max-depth", "2"]).await;
    assert_eq!(code, 2, "{err}");
    // once: --base and the old --root
    for spelling in ["--base", "--root"] {
        let base = path("spell-once");
        let (code, _, err) = run(&cs, &["once", "job", spelling, &base, "--at-most", "10s", "--", "true"]).await;
        assert_eq!(code, 0, "{spelling}: {err}");
        assert!(fw.exists(&format!("{base}/job")).await.unwrap().is_some(), "{spelling}: the lock node is under it");
    }
    fw.shutdown(std::time::Duration::from_secs(2)).await.ok();
}

#[test]
fn ports_are_u16_with_a_clear_error() {
    for (port, says) in
        [("70000", "65535"), ("0", "not in 1..=65535"), ("-1", "unexpected argument"), ("http", "invalid digit")]
    {
        for option in ["--port", "--ssl-port"] {
            let mut args = vec!["discover", "register", "svc", "--base", "/b", "--address", "h", "--port", "80"];
            if option == "--port" {
                args.truncate(args.len() - 2);
            }
            args.extend([option, port]);
            let (code, out, err) = offline(&args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(out.is_empty());
            assert!(err.contains(says) && (port == "-1" || err.contains(option)), "{args:?}: {err}");
        }
    }
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let (code, out, err) = offline(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains("zkr") && out.contains("max-leases") && out.contains("shared-count"), "{shell}");
    }
    let (code, _, _) = offline(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    let (code, out, _) = offline(&["completions", "bash"]);
    assert_eq!(code, 0);
    // bash accepts it
    let status = Command::new("bash").args(["-n", "-c", &out]).status().expect("bash");
    assert!(status.success(), "bash -n refuses the completion script");
}

#[test]
fn the_man_page_is_valid_roff() {
    let (code, page, err) = offline(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.starts_with(".ie") || page.starts_with(".TH"), "{}", &page[..page.len().min(200)]);
    assert!(page.contains(".TH zkr 1") && page.contains("lock"), "no title or no subcommands");
    // groff with every warning on, output discarded: no warning, and it renders text
    let mut groff = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("groff");
    use std::io::Write;
    groff.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let out = groff.wait_with_output().unwrap();
    assert!(out.status.success());
    let (text, warnings) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(warnings.trim().is_empty(), "groff warns: {warnings}");
    assert!(text.contains("Exit codes"), "the long help is in the page");
    // --dir: a page per subcommand
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = offline(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    for page in ["zkr.1", "zkr-lock.1", "zkr-once.1", "zkr-latch.1"] {
        assert!(dir.path().join(page).is_file(), "{page}");
    }
}

#[test]
fn help_is_the_long_text() {
    let (code, out, _) = offline(&["help", "lock"]);
    assert_eq!(code, 0);
    assert!(out.contains("--on-lost term (default)") && out.contains("Usage: zkr lock"), "{out}");
    let (_, via_flag, _) = offline(&["lock", "--help"]);
    assert_eq!(out, via_flag);
}
