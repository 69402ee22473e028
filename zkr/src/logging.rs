//! Logging: the library's `tracing` events to stderr, through `tracing-subscriber`.
//!
//! Default: warnings and errors. `-v` info, `-vv` debug, `-vvv` trace, for every target;
//! RUST_LOG directives (`zk_recipes=debug`, `zk_recipes::recipes::locks=trace`) apply on top.
//! Never on stdout: `--json` output stays JSON.

use std::io::IsTerminal;

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::EnvFilter;

/// The level `-v` given `verbose` times asks for.
pub fn level(verbose: u8) -> LevelFilter {
    match verbose {
        0 => LevelFilter::WARN,
        1 => LevelFilter::INFO,
        2 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}

/// Installs the subscriber: `verbose` from `-v`, RUST_LOG from the environment (a directive
/// it cannot parse is skipped, not fatal).
pub fn init(verbose: u8) {
    let level = level(verbose);
    let mut filter = EnvFilter::builder().with_default_directive(level.into()).from_env_lossy();
    if verbose > 0 {
        filter = filter.add_directive(level.into());
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
