//! Progress on stderr, for a person at a terminal: a bar where the work has a known size, a
//! spinner while waiting. Nothing at all when stderr is not a terminal (piped, redirected to a
//! file, under cron), so that logs and scripts never see it.

use std::future::Future;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Whether progress is drawn: stderr is a terminal.
pub fn enabled() -> bool {
    std::io::stderr().is_terminal()
}

/// A bar of `len` steps, drawn on stderr when it is a terminal (hidden otherwise). `unit`
/// names a step (`ms`, `nodes`). The caller advances it and ends it with
/// [`ProgressBar::finish_and_clear`].
pub fn bar(len: u64, unit: &str) -> ProgressBar {
    if !enabled() {
        return ProgressBar::hidden();
    }
    let template = format!("{{spinner}} [{{bar:30}}] {{percent:>3}}% {{pos}}/{{len}} {unit} {{msg}}");
    let style = ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar());
    let bar = ProgressBar::new(len).with_style(style.progress_chars("#> "));
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// A spinner with `message` and the time waited so far, on stderr when it is a terminal.
pub fn spinner(message: impl Into<String>) -> ProgressBar {
    if !enabled() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let spinner = ProgressBar::new_spinner().with_style(style).with_message(message.into());
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner
}

/// Runs `work` with a spinner saying `message`, cleared when `work` ends (or is dropped).
pub async fn waiting<T>(message: impl Into<String>, work: impl Future<Output = T>) -> T {
    let spinner = Cleared(spinner(message));
    let out = work.await;
    drop(spinner);
    out
}

/// Clears its bar when dropped, also when the future holding it is cancelled.
struct Cleared(ProgressBar);

impl Drop for Cleared {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
