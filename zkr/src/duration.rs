//! DUR arguments, parsed by `humantime`: `500ms`, `2s`, `1m`, `1h30m`, `1m30s500ms`, `1s 250ms`.
//!
//! Every spelling scripts used before humantime still parses to the same duration (`msec`,
//! `sec`/`secs`, `min`/`mins`, `hr`/`hrs`, parts summed, spaces between parts); a bare number
//! is still refused, so that `--timeout 5` is not silently read as 5 ms or 5 s.

use std::time::Duration;

/// Parses a DUR argument.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration (try 500ms, 2s, 1m)".into());
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid duration {text:?}: missing unit (ms, s, m or h)"));
    }
    humantime::parse_duration(text).map_err(|e| format!("invalid duration {text:?}: {e} (try 500ms, 2s, 1m)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_scripts_use_still_parses() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("500ms", ms(500)),
            ("500msec", ms(500)),
            ("2s", ms(2_000)),
            ("2sec", ms(2_000)),
            ("15secs", ms(15_000)),
            ("1m", ms(60_000)),
            ("1min", ms(60_000)),
            ("2mins", ms(120_000)),
            ("1h", ms(3_600_000)),
            ("1hr", ms(3_600_000)),
            ("2hrs", ms(7_200_000)),
            ("1m30s", ms(90_000)),
            ("1h30m", ms(5_400_000)),
            ("1m30s500ms", ms(90_500)),
            ("1s 250ms", ms(1_250)),
            (" 2s ", ms(2_000)),
            ("0s", Duration::ZERO),
            ("0ms", Duration::ZERO),
            // new with humantime: fractions
            ("1.5s", ms(1_500)),
        ] {
            assert_eq!(parse(text), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn refuses_garbage() {
        for bad in ["", "5", "0", "s", "1x", "-1s", "ms5", "99999999999999999999s"] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(parse("5").unwrap_err().contains("missing unit"));
    }
}
