//! ShedLock's stored instant: UTC, ISO-8601, exactly three fractional digits
//! (`2026-01-02T03:04:05.678Z`), written and read with std only (days from the civil date and
//! back, proleptic Gregorian calendar).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch of the first instant that no longer has a 4-digit year
/// (10000-01-01T00:00:00.000Z): the format ends there.
pub(crate) const END_OF_FORMAT_MS: i64 = 253_402_300_800_000;

/// Milliseconds since the Unix epoch (negative before it), truncated as Java's `Instant` to
/// millis is.
pub(crate) fn millis(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => {
            let before = e.duration();
            // round towards negative infinity, as Java's toEpochMilli does
            let ms = i64::try_from(before.as_millis()).unwrap_or(i64::MAX);
            if before.subsec_nanos() % 1_000_000 != 0 {
                -ms - 1
            } else {
                -ms
            }
        }
    }
}

/// The instant `ms` after the epoch.
pub(crate) fn system_time(ms: i64) -> SystemTime {
    if ms >= 0 {
        UNIX_EPOCH + Duration::from_millis(ms as u64)
    } else {
        UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
    }
}

/// Days since 1970-01-01 of a civil date (valid for any year the format holds).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Formats `ms` since the epoch as ShedLock stores it. Callers keep `ms` within
/// `0..END_OF_FORMAT_MS` (the lock refuses durations that would leave it).
pub(crate) fn format(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, rest) = (in_day / 3_600_000, in_day % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    let (s, frac) = (rest / 1000, rest % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{frac:03}Z")
}

/// Reads a stored instant as Java's `Instant.parse` (what ShedLock uses) reads it: ISO-8601
/// with a 4-digit year, seconds, 0 to 9 fractional digits (kept to the millisecond,
/// truncated), and `Z` or an offset (`+01:00`), letters in either case. `None` for anything
/// else — which the lock counts as held, as ShedLock does.
pub(crate) fn parse(data: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(data).ok()?;
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0i64, |n, c| n * 10 + i64::from(c - b'0')))
    };
    let lit = |at: usize, c: u8| b.get(at).is_some_and(|x| x.eq_ignore_ascii_case(&c));
    let y = num(0, 4)?;
    if !(lit(4, b'-') && lit(7, b'-') && lit(10, b'T') && lit(13, b':') && lit(16, b':')) {
        return None;
    }
    let (mo, d, h, mi, sec) = (num(5, 2)? as u32, num(8, 2)? as u32, num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    // Java reads a leap second (23:59:60) as the last second of the day
    let sec = if sec == 60 { 59 } else { sec };
    let mut at = 19;
    let mut frac_ms = 0i64;
    if lit(at, b'.') {
        at += 1;
        let digits = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let first3: String = s[at..at + digits.min(3)].to_string();
        frac_ms = first3.parse::<i64>().ok()? * 10i64.pow(3 - digits.min(3) as u32);
        at += digits;
    }
    let offset_s = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) => {
            let oh = num(at + 1, 2)?;
            let (om, os, end) = if lit(at + 3, b':') {
                let om = num(at + 4, 2)?;
                if lit(at + 6, b':') {
                    (om, num(at + 7, 2)?, at + 9)
                } else {
                    (om, 0, at + 6)
                }
            } else {
                (0, 0, at + 3)
            };
            if end != b.len() || oh > 18 || om > 59 || os > 59 {
                return None;
            }
            let total = oh * 3600 + om * 60 + os;
            if *sign == b'-' {
                -total
            } else {
                total
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 86_400 + h * 3600 + mi * 60 + sec - offset_s) * 1000) + frac_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_exactly_three_digits() {
        assert_eq!(format(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format(1), "1970-01-01T00:00:00.001Z");
        // 2026-01-02T03:04:05.678Z
        let ms = (days_from_civil(2026, 1, 2) * 86_400 + 3 * 3600 + 4 * 60 + 5) * 1000 + 678;
        assert_eq!(format(ms), "2026-01-02T03:04:05.678Z");
        assert_eq!(format(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format(END_OF_FORMAT_MS - 1), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn parses_what_it_formats() {
        for ms in [0, 1, 999, 86_399_999, 951_782_400_000, 1_767_323_045_678, END_OF_FORMAT_MS - 1] {
            assert_eq!(parse(format(ms).as_bytes()), Some(ms), "{}", format(ms));
        }
        let mut ms = 0i64;
        while ms < END_OF_FORMAT_MS {
            assert_eq!(parse(format(ms).as_bytes()), Some(ms));
            ms += 7_777_777_777;
        }
    }

    #[test]
    fn parses_what_java_instant_parse_accepts() {
        let base = parse(b"2026-01-02T03:04:05.678Z").unwrap();
        assert_eq!(parse(b"2026-01-02T03:04:05Z"), Some(base - 678));
        assert_eq!(parse(b"2026-01-02T03:04:05.6Z"), Some(base - 78));
        assert_eq!(parse(b"2026-01-02T03:04:05.678999999Z"), Some(base));
        assert_eq!(parse(b"2026-01-02t03:04:05.678z"), Some(base));
        assert_eq!(parse(b"2026-01-02T04:04:05.678+01:00"), Some(base));
        assert_eq!(parse(b"2026-01-02T02:34:05.678-00:30"), Some(base));
    }

    #[test]
    fn refuses_the_rest() {
        for bad in [
            &b""[..],
            b"locked",
            b"2026-01-02T03:04Z",
            b"2026-13-02T03:04:05.678Z",
            b"2026-02-29T03:04:05.678Z",
            b"2026-01-02T24:04:05.678Z",
            b"2026-01-02T03:04:05.Z",
            b"2026-01-02T03:04:05.6789999999Z",
            b"2026-01-02T03:04:05.678",
            b"2026-01-02T03:04:05.678Zx",
            b"2026-01-02 03:04:05.678Z",
            b"\xff\xfe",
        ] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn millis_truncate_like_java() {
        assert_eq!(millis(UNIX_EPOCH + Duration::from_micros(1_999)), 1);
        assert_eq!(millis(UNIX_EPOCH - Duration::from_micros(1)), -1);
        assert_eq!(millis(system_time(-5)), -5);
        assert_eq!(millis(system_time(1_767_323_045_678)), 1_767_323_045_678);
    }
}
