//! Command lines and answers of the line protocol.

use std::time::Duration;

use super::AtomicResult;
use crate::{Error, Result};

/// Joins command words, refusing words that would break the line protocol.
pub(super) fn words(parts: &[&str]) -> Result<String> {
    if let Some(bad) = parts.iter().find(|w| w.is_empty() || w.chars().any(char::is_whitespace)) {
        return Err(Error::InvalidArgument(format!(
            "peer command argument {bad:?} must be non-empty and free of whitespace"
        )));
    }
    Ok(parts.join(" "))
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 2)
}

pub(super) fn parse_bool(s: &str) -> Result<bool> {
    match s {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(Error::Peer(format!("expected true or false, got {other:?}"))),
    }
}

pub(super) fn parse_num<T: std::str::FromStr>(s: &str) -> Result<T> {
    s.trim().parse().map_err(|_| Error::Peer(format!("expected a number, got {s:?}")))
}

pub(super) fn parse_atomic<T: std::str::FromStr>(s: &str) -> Result<AtomicResult<T>> {
    let mut it = s.split(' ');
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some(ok), Some(pre), Some(post), None) => {
            Ok(AtomicResult { succeeded: parse_bool(ok)?, pre_value: parse_num(pre)?, post_value: parse_num(post)? })
        }
        _ => Err(Error::Peer(format!("expected `<succeeded> <pre> <post>`, got {s:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_refuse_whitespace_and_empty() {
        assert_eq!(words(&["a", "b"]).as_deref(), Ok("a b"));
        assert!(matches!(words(&["a", "b c"]), Err(Error::InvalidArgument(_))));
        assert!(matches!(words(&["a", ""]), Err(Error::InvalidArgument(_))));
        assert!(matches!(words(&["a\n"]), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn parses_atomic_results() {
        assert_eq!(
            parse_atomic::<i64>("true -1 4").ok(),
            Some(AtomicResult { succeeded: true, pre_value: -1, post_value: 4 })
        );
        assert!(parse_atomic::<i64>("true 1").is_err());
    }
}
