//! Durations in humantime style: `500ms`, `2s`, `1m`, `1h30m`, `1m30s500ms`.

use std::time::Duration;

/// Parses one or more `<integer><unit>` parts (units: `ms`, `s`, `m`, `h`; also `msec`,
/// `sec`/`secs`, `min`/`mins`, `hr`/`hrs`), summed. A bare number is refused: the unit is
/// part of the contract, so that `--timeout 5` is not silently read as 5 ms or 5 s.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration (try 500ms, 2s, 1m)".into());
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("invalid duration {text:?}: expected a number at {rest:?} (try 500ms, 2s, 1m)"));
        }
        let number: u64 = rest[..digits].parse().map_err(|_| format!("invalid duration {text:?}: number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = rest[..unit_len].trim();
        rest = &rest[unit_len..];
        let millis_per_unit: u64 = match unit {
            "ms" | "msec" => 1,
            "s" | "sec" | "secs" => 1_000,
            "m" | "min" | "mins" => 60_000,
            "h" | "hr" | "hrs" => 3_600_000,
            "" => return Err(format!("invalid duration {text:?}: missing unit (ms, s, m or h)")),
            other => return Err(format!("invalid duration {text:?}: unknown unit {other:?} (ms, s, m or h)")),
        };
        let part = number
            .checked_mul(millis_per_unit)
            .map(Duration::from_millis)
            .ok_or_else(|| format!("invalid duration {text:?}: too large"))?;
        total = total.checked_add(part).ok_or_else(|| format!("invalid duration {text:?}: too large"))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_sums() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1s 250ms"), Ok(Duration::from_millis(1250)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(parse("15sec"), Ok(Duration::from_secs(15)));
    }

    #[test]
    fn refuses_garbage() {
        for bad in ["", "5", "s", "1x", "-1s", "1.5s", "ms5", "99999999999999999999s"] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
