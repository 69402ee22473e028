//! The latch's znode schema, pure: generation directory names, the encodings of the latch's
//! data (its current generation) and of a generation's data (its count), participant checks.

use crate::error::{Error, Result};
use crate::framework::paths;
use crate::recipes::layout::LATCH_GENERATION;

/// The largest count: ZooKeeper counts a node's children in an `i32`.
pub(crate) const MAX_COUNT: u64 = i32::MAX as u64;

/// The longest participant id, in bytes.
pub(crate) const MAX_PARTICIPANT_LEN: usize = 255;

/// The directory of generation `generation` under the latch at `path`:
/// `<path>/gen-<generation, 10 digits>` (sorts by generation up to 9,999,999,999).
pub(crate) fn generation_dir(path: &str, generation: u64) -> String {
    paths::join(path, &format!("{LATCH_GENERATION}{generation:010}"))
}

/// The generation of a child of the latch node, if it is a generation directory.
pub(crate) fn generation_of(child: &str) -> Option<u64> {
    let digits = child.strip_prefix(LATCH_GENERATION)?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// Decimal text of a number (the latch's generation, a generation's count).
pub(crate) fn encode(n: u64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// Reads the decimal number at `path`; [`Error::CorruptData`] when it is not one.
pub(crate) fn decode(path: &str, data: &[u8]) -> Result<u64> {
    std::str::from_utf8(data)
        .ok()
        .filter(|text| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| Error::CorruptData {
            path: path.to_string(),
            reason: format!("expected a decimal number, found {:?}", String::from_utf8_lossy(data)),
        })
}

/// Checks a count: at least 1, at most [`MAX_COUNT`].
pub(crate) fn check_count(count: u64) -> Result<()> {
    if count == 0 || count > MAX_COUNT {
        return Err(Error::invalid("count", format!("a latch count must be in 1..={MAX_COUNT}, not {count}")));
    }
    Ok(())
}

/// Checks a participant id: it becomes a node name, so 1 to [`MAX_PARTICIPANT_LEN`] bytes,
/// no `/`, not `.` or `..`, no control or reserved characters.
pub(crate) fn check_participant(participant: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::invalid("participant", format!("participant id {participant:?}: {why}")));
    if participant.is_empty() {
        return bad("empty");
    }
    if participant.len() > MAX_PARTICIPANT_LEN {
        return bad("longer than 255 bytes");
    }
    if participant.contains('/') {
        return bad("contains '/'");
    }
    if paths::validate_path(&format!("/{participant}")).is_err() {
        return bad("not a valid node name ('.', '..', control or reserved characters)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use assert_matches::assert_matches;

    #[test]
    fn generation_dirs_round_trip_and_sort() {
        assert_eq!(generation_dir("/l", 3), "/l/gen-0000000003");
        assert_eq!(generation_of("gen-0000000003"), Some(3));
        assert_eq!(generation_of("gen-"), None);
        assert_eq!(generation_of("gen-12x"), None);
        assert_eq!(generation_of("worker-1"), None);
        assert!(generation_dir("/l", 9) < generation_dir("/l", 10));
    }

    #[test]
    fn numbers_decode_strictly() {
        assert_matches!(decode("/l", &encode(16)), Ok(16));
        for bad in [&b""[..], b"-1", b"1 ", b"x", b"\xff", b"99999999999999999999999"] {
            assert!(matches!(decode("/l", bad), Err(Error::CorruptData { .. })), "{bad:?}");
        }
    }

    #[test]
    fn counts_and_participants_are_checked() {
        assert!(check_count(1).is_ok() && check_count(MAX_COUNT).is_ok());
        assert!(matches!(check_count(0), Err(Error::InvalidArgument { .. })));
        assert!(matches!(check_count(MAX_COUNT + 1), Err(Error::InvalidArgument { .. })));
        assert!(check_participant("worker-7").is_ok());
        for bad in ["", "a/b", ".", "..", "a\u{0}b", "tab\there", &"x".repeat(256)] {
            assert!(matches!(check_participant(bad), Err(Error::InvalidArgument { .. })), "{bad:?}");
        }
    }
}
