//! The older command-line forms that scripts use, turned into today's before clap parses them.
//!
//! `barrier`, `atomic` and `shared-count` took their PATH before the operation
//! (`zkr atomic /c add 1`); every subcommand now takes the operation first, then PATH
//! (`zkr atomic add /c 1`), as `latch`, `queue`, `group` and `discover` always did. The old
//! order still works: when the first word after one of these subcommands is not one of its
//! operations and the second is, the two are swapped. Renamed options keep their old names as
//! hidden clap aliases (`args.rs`), not here.

use std::ffi::OsString;

use clap::CommandFactory;

use crate::args::Cli;

/// The subcommands whose operation used to follow PATH, with their operations.
const PATH_FIRST: [(&str, &[&str]); 3] = [
    ("barrier", &["set", "remove", "wait"]),
    ("atomic", &["get", "add", "set", "cas"]),
    ("shared-count", &["get", "set", "watch"]),
];

/// `argv` with an old `SUBCOMMAND PATH OP` swapped into `SUBCOMMAND OP PATH`; anything else
/// unchanged.
pub fn normalize(mut argv: Vec<OsString>) -> Vec<OsString> {
    let command = Cli::command();
    let mut takes_value: Vec<String> = Vec::new();
    collect_value_options(&command, &mut takes_value);
    let Some(sub_at) = positionals(&argv, 1, &takes_value).next() else { return argv };
    let Some((name, ops)) = PATH_FIRST.iter().find(|(name, _)| argv[sub_at] == **name) else { return argv };
    if let Some(sub) = command.find_subcommand(name) {
        collect_value_options(sub, &mut takes_value);
    }
    let words: Vec<usize> = positionals(&argv, sub_at + 1, &takes_value).take(2).collect();
    if let [first, second] = words[..] {
        let is_op = |i: usize| argv[i].to_str().is_some_and(|w| ops.contains(&w));
        if !is_op(first) && is_op(second) {
            argv.swap(first, second);
        }
    }
    argv
}

/// The options of `command` that take a value (`--connect HOSTS`), with their aliases.
fn collect_value_options(command: &clap::Command, into: &mut Vec<String>) {
    for arg in command.get_arguments().filter(|a| !a.is_positional() && a.get_action().takes_values()) {
        into.extend(arg.get_long().map(|l| format!("--{l}")));
        into.extend(arg.get_short().map(|s| format!("-{s}")));
        into.extend(arg.get_all_aliases().into_iter().flatten().map(|a| format!("--{a}")));
    }
}

/// The indexes of the positional words of `argv` from `from` on (options and their values
/// skipped), up to a `--`.
fn positionals<'a>(argv: &'a [OsString], from: usize, takes_value: &'a [String]) -> impl Iterator<Item = usize> + 'a {
    let mut skip_next = false;
    argv.iter().enumerate().skip(from).take_while(|(_, w)| *w != "--").filter_map(move |(i, word)| {
        if std::mem::take(&mut skip_next) {
            return None;
        }
        let text = word.to_string_lossy();
        if text.starts_with('-') && text.len() > 1 {
            skip_next = !text.contains('=') && takes_value.iter().any(|o| *o == text);
            return None;
        }
        Some(i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(words: &[&str]) -> Vec<String> {
        let argv = words.iter().map(OsString::from).collect();
        normalize(argv).into_iter().map(|w| w.into_string().unwrap()).collect()
    }

    #[test]
    fn the_old_path_first_forms_become_the_new_ones() {
        assert_eq!(norm(&["zkr", "atomic", "/c", "add", "-5"]), ["zkr", "atomic", "add", "/c", "-5"]);
        assert_eq!(
            norm(&["zkr", "--connect", "h:1", "atomic", "--int", "/c", "cas", "1", "2"]),
            ["zkr", "--connect", "h:1", "atomic", "--int", "cas", "/c", "1", "2"]
        );
        assert_eq!(
            norm(&["zkr", "barrier", "--timeout", "1s", "/b", "wait"]),
            ["zkr", "barrier", "--timeout", "1s", "wait", "/b"]
        );
        assert_eq!(norm(&["zkr", "shared-count", "/s", "set", "3"]), ["zkr", "shared-count", "set", "/s", "3"]);
        assert_eq!(
            norm(&["zkr", "--namespace", "atomic", "shared-count", "--json", "/s", "watch"]),
            ["zkr", "--namespace", "atomic", "shared-count", "--json", "watch", "/s"]
        );
    }

    #[test]
    fn the_new_forms_and_other_subcommands_are_left_alone() {
        for words in [
            &["zkr", "atomic", "add", "/c", "1"][..],
            &["zkr", "barrier", "set", "/b"],
            &["zkr", "shared-count", "get", "/set"],
            &["zkr", "lock", "/a", "set", "--", "atomic", "/c", "add"],
            &["zkr", "latch", "set", "/l", "3"],
            &["zkr"],
        ] {
            assert_eq!(norm(words), words, "{words:?}");
        }
    }
}
