//! Command lines and answers of the line protocol.

use std::time::Duration;

use super::{AtomicResult, CuratorCacheEvent, CuratorCacheNode};
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

/// Node data as a command word: lowercase hex, `-` for no bytes.
pub(super) fn hex(data: &[u8]) -> String {
    if data.is_empty() {
        return "-".into();
    }
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// The inverse of [`hex`]; `?` (Curator held no data) is `None`.
pub(super) fn unhex(s: &str) -> Result<Option<Vec<u8>>> {
    let bad = || Error::Peer(format!("expected hex data, `-` or `?`, got {s:?}"));
    match s {
        "?" => Ok(None),
        "-" => Ok(Some(Vec::new())),
        _ if !s.len().is_multiple_of(2) || !s.is_ascii() => Err(bad()),
        _ => (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| bad()))
            .collect::<Result<Vec<u8>>>()
            .map(Some),
    }
}

/// `<n>` then `<path> <version> <czxid> <data>` per node.
pub(super) fn parse_cache_content(s: &str) -> Result<Vec<CuratorCacheNode>> {
    let mut it = s.split(' ');
    let n: usize = parse_num(it.next().unwrap_or_default())?;
    let rest: Vec<&str> = it.collect();
    if rest.len() != n * 4 {
        return Err(Error::Peer(format!("expected {n} nodes of 4 words, got {} words: {s:?}", rest.len())));
    }
    rest.chunks(4)
        .map(|w| {
            Ok(CuratorCacheNode {
                path: w[0].to_string(),
                version: parse_num(w[1])?,
                czxid: parse_num(w[2])?,
                data: unhex(w[3])?,
            })
        })
        .collect()
}

/// `<n>` then `<kind> <path> <czxid>` per event.
pub(super) fn parse_cache_events(s: &str) -> Result<Vec<CuratorCacheEvent>> {
    let mut it = s.split(' ');
    let n: usize = parse_num(it.next().unwrap_or_default())?;
    let rest: Vec<&str> = it.collect();
    if rest.len() != n * 3 {
        return Err(Error::Peer(format!("expected {n} events of 3 words, got {} words: {s:?}", rest.len())));
    }
    rest.chunks(3)
        .map(|w| Ok(CuratorCacheEvent { kind: w[0].to_string(), path: w[1].to_string(), czxid: parse_num(w[2])? }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_refuse_whitespace_and_empty() {
        assert_eq!(words(&["a", "b"]).as_deref().ok(), Some("a b"));
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

    #[test]
    fn hex_round_trips_and_parses_cache_content() {
        assert_eq!(hex(b""), "-");
        assert_eq!(hex(&[0, 0xab, 0x7f]), "00ab7f");
        assert_eq!(unhex("00ab7f").ok(), Some(Some(vec![0, 0xab, 0x7f])));
        assert_eq!(unhex("-").ok(), Some(Some(vec![])));
        assert_eq!(unhex("?").ok(), Some(None));
        assert!(unhex("abc").is_err() && unhex("zz").is_err());
        let nodes = parse_cache_content("2 /a 0 12 - /a/b 3 15 6869").unwrap();
        assert_eq!(
            nodes,
            vec![
                CuratorCacheNode { path: "/a".into(), version: 0, czxid: 12, data: Some(vec![]) },
                CuratorCacheNode { path: "/a/b".into(), version: 3, czxid: 15, data: Some(b"hi".to_vec()) },
            ]
        );
        assert_eq!(parse_cache_content("0").ok(), Some(vec![]));
        assert!(parse_cache_content("1 /a 0").is_err());
        assert_eq!(
            parse_cache_events("1 deleted /a 12").unwrap(),
            vec![CuratorCacheEvent { kind: "deleted".into(), path: "/a".into(), czxid: 12 }]
        );
        assert_eq!(parse_cache_events("0").ok(), Some(vec![]));
        assert!(parse_cache_events("2 created /a 1").is_err());
    }
}
