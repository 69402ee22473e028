//! What zkr says about itself: shell completions (`zkr completions`), the man page
//! (`zkr man`), and the manual's command reference (zkr/README.md), which is the text of
//! `zkr help <subcommand>` for every subcommand. The long help lives in `zkr/help/*.txt`
//! (included by `args.rs`); a test fails when the README's reference is not what
//! [`reference`] renders (`ZKR_BLESS=1 cargo test -p zkr --bin zkr help` rewrites it).

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;

use crate::args::Cli;
use crate::exit::{self, CliError, CliResult};

#[cfg(test)]
/// The width the README's reference is rendered at (clap's own cap for `zkr help`).
pub const WIDTH: usize = 100;

/// Writes the completion script for `shell` to stdout.
pub fn completions(shell: clap_complete::Shell) -> CliResult {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut Cli::command(), "zkr", &mut out);
    out.flush().map_err(|e| CliError::new(exit::FAILURE, format!("cannot write the completions: {e}")))?;
    Ok(exit::OK)
}

/// Writes the man page to stdout, or with `dir` zkr.1 and zkr-SUBCOMMAND.1 pages into it.
pub fn man(dir: Option<&Path>) -> CliResult {
    let failed = |e: std::io::Error| CliError::new(exit::FAILURE, format!("cannot write the man page: {e}"));
    let command = Cli::command();
    match dir {
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(command).render(&mut out).map_err(failed)?;
            out.flush().map_err(failed)?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(failed)?;
            clap_mangen::generate_to(command, dir).map_err(failed)?;
        }
    }
    Ok(exit::OK)
}

#[cfg(test)]
/// What `zkr help WORDS...` prints (rendered `WIDTH` columns wide).
pub fn help_text(words: &[&str]) -> String {
    let argv = std::iter::once("zkr").chain(std::iter::once("help")).chain(words.iter().copied());
    match Cli::command().term_width(WIDTH).try_get_matches_from(argv) {
        Ok(_) => String::new(),
        Err(e) => e.render().to_string(),
    }
}

#[cfg(test)]
/// The README's command reference: `zkr help` and `zkr help <subcommand>` for every
/// subcommand (nested ones included), each under its heading in a text block; the global
/// options, which each subcommand's help repeats at its end, only once, under `zkr`.
pub fn reference() -> String {
    fn walk(command: &clap::Command, words: &mut Vec<String>, out: &mut String) {
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let heading = "#".repeat(2 + words.len().min(1)) + " ";
        let title = std::iter::once("zkr").chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
        out.push_str(&format!("{heading}`{title}`\n\n```text\n"));
        let text = help_text(&args);
        // the global options, which every subcommand's help repeats, are shown once (under `zkr`)
        let text = match text.split_once("\nGlobal options:\n") {
            Some((own, _)) if !words.is_empty() => own.to_string(),
            _ => text,
        };
        out.push_str(text.trim_end());
        out.push_str("\n```\n\n");
        for sub in command.get_subcommands().filter(|s| s.get_name() != "help" && !s.is_hide_set()) {
            words.push(sub.get_name().to_string());
            walk(sub, words, out);
            words.pop();
        }
    }
    let mut out = String::new();
    walk(&Cli::command(), &mut Vec::new(), &mut out);
    out
}

/// The marks around the generated reference in zkr/README.md.
#[cfg(test)]
pub const BEGIN: &str =
    "<!-- BEGIN GENERATED: the text of `zkr help`, do not edit here (zkr/help/*.txt, zkr/src/args.rs) -->\n";
#[cfg(test)]
pub const END: &str = "<!-- END GENERATED -->";

#[cfg(test)]
mod tests {
    use super::*;

    const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");

    #[test]
    fn the_readme_is_what_zkr_help_says() {
        let readme = std::fs::read_to_string(README).expect("zkr/README.md");
        let (head, rest) = readme.split_once(BEGIN).expect("the BEGIN mark in zkr/README.md");
        let (generated, tail) = rest.split_once(END).expect("the END mark in zkr/README.md");
        let want = reference();
        if generated != want {
            if std::env::var_os("ZKR_BLESS").is_some() {
                std::fs::write(README, format!("{head}{BEGIN}{want}{END}{tail}")).expect("write zkr/README.md");
            } else {
                panic!(
                    "zkr/README.md's reference differs from `zkr help`: edit zkr/help/*.txt or args.rs, then \
                     `ZKR_BLESS=1 cargo test -p zkr --bin zkr help` (first difference near: {:?})",
                    generated.lines().zip(want.lines()).find(|(a, b)| a != b)
                );
            }
        }
    }

    #[test]
    fn every_subcommand_has_its_long_help_in_the_reference() {
        let reference = reference();
        for sub in Cli::command().get_subcommands() {
            let name = sub.get_name();
            assert!(reference.contains(&format!("## `zkr {name}`")), "{name}");
            let long = sub.get_long_about().map(|a| a.to_string()).unwrap_or_default();
            assert!(!long.is_empty(), "{name} has no long help (zkr/help/{name}.txt)");
            let first = long.lines().next().unwrap_or_default();
            assert!(help_text(&[name]).contains(first), "{name}");
        }
        assert!(help_text(&[]).contains("Exit codes:"));
    }

    #[test]
    fn completions_for_bash_zsh_and_fish() {
        for shell in [clap_complete::Shell::Bash, clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "zkr", &mut out);
            let text = String::from_utf8(out).expect("UTF-8");
            for word in ["zkr", "lock", "semaphore", "max-leases", "json"] {
                assert!(text.contains(word), "{shell}: {word} missing");
            }
        }
    }
}
