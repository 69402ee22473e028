//! Standard output: whole lines, flushed at once (scripts and tests read them as they come).

use std::io::Write;
use std::time::Duration;

use serde_json::json;

/// Writes `text` and a newline to stdout and flushes. A closed stdout (the reader went away)
/// is not an error worth dying for while holding a lock: the line is dropped.
pub fn line(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// A held node, as printed once held: `<node path> <fencing token>`, or with `--json`
/// `{"path":"<node path>","fencing_token":<token>}`.
pub fn held(path: &str, token: i64, as_json: bool) -> String {
    if as_json {
        json!({"path": path, "fencing_token": token}).to_string()
    } else {
        format!("{path} {token}")
    }
}

/// A duration for people: `300ms`, `1.5s`, `15s`, `4m05s`, `2h03m`.
pub fn humanize(d: Duration) -> String {
    let ms = d.as_millis();
    let secs = d.as_secs();
    if ms < 1_000 {
        format!("{ms}ms")
    } else if secs < 60 {
        if ms.is_multiple_of(1_000) || secs >= 10 {
            format!("{secs}s")
        } else {
            format!("{:.1}s", d.as_secs_f64())
        }
    } else if secs < 3_600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h{:02}m", secs / 3_600, secs % 3_600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_lines() {
        assert_eq!(held("/locks/a/_c_x-lock-0000000001", 42, false), "/locks/a/_c_x-lock-0000000001 42");
        assert_eq!(held("/a/\"b\"", 7, true), r#"{"path":"/a/\"b\"","fencing_token":7}"#);
    }

    #[test]
    fn humanizes_durations() {
        assert_eq!(humanize(Duration::from_millis(300)), "300ms");
        assert_eq!(humanize(Duration::from_millis(1_500)), "1.5s");
        assert_eq!(humanize(Duration::from_secs(15)), "15s");
        assert_eq!(humanize(Duration::from_millis(15_500)), "15s");
        assert_eq!(humanize(Duration::from_secs(245)), "4m05s");
        assert_eq!(humanize(Duration::from_secs(7_380)), "2h03m");
    }
}
