//! The names of expirable semaphore permits (see `locks::expiring_permit`): they carry their deadline,
//! so that a waiter reads it from a listing without another round trip.

use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};
use crate::framework::paths;
use crate::recipes::layout::{LEASE_NAME, PERMIT_EXPIRES};

/// The name of a permit expiring at `deadline`, after the protection prefix:
/// `expires-<ms since the Unix epoch>-lease-`.
pub(crate) fn permit_name(deadline: SystemTime) -> String {
    let ms = deadline.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_millis();
    format!("{PERMIT_EXPIRES}{ms}-{LEASE_NAME}")
}

/// The deadline of a permit node (a child of `leases`), or `None` for an ordinary lease.
pub(crate) fn permit_deadline(child: &str) -> Option<SystemTime> {
    // the first `-expires-` (no string made: every child of every lease listing is asked)
    let at = child.match_indices(PERMIT_EXPIRES).map(|(i, _)| i).find(|&i| i > 0 && child.as_bytes()[i - 1] == b'-')?;
    let start = at + PERMIT_EXPIRES.len();
    let rest = &child[start..];
    let digits = rest.find('-').map(|end| &rest[..end])?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || !rest[digits.len()..].starts_with('-') {
        return None;
    }
    let ms = digits.parse().ok()?;
    rest[digits.len() + 1..].contains(LEASE_NAME).then(|| SystemTime::UNIX_EPOCH + Duration::from_millis(ms))
}

/// Checks a permit id given to release: a permit node's name.
pub(crate) fn check_permit_id(id: &str) -> Result<()> {
    if id.contains('/') || paths::validate_path(&format!("/{id}")).is_err() || permit_deadline(id).is_none() {
        return Err(Error::invalid(
            "permit_id",
            format!("{id:?} is not a permit id (the name of an expirable permit, _c_<uuid>-expires-<ms>-lease-<seq>)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permit_names_carry_their_deadline() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_470_088_559);
        let name = format!("_c_3f0c5f6e-0000-4000-8000-000000000000-{}0000000007", permit_name(at));
        assert_eq!(name, "_c_3f0c5f6e-0000-4000-8000-000000000000-expires-1795470088559-lease-0000000007");
        assert_eq!(permit_deadline(&name), Some(at));
        assert!(check_permit_id(&name).is_ok());
        // ordinary leases and garbage carry none
        for other in [
            "_c_3f0c5f6e-0000-4000-8000-000000000000-lease-0000000007",
            "_c_x-expires--lease-0000000001",
            "_c_x-expires-12x-lease-0000000001",
            "_c_x-expires-12-lock-0000000001",
            "expires-12-lease-1",
        ] {
            assert_eq!(permit_deadline(other), None, "{other}");
            assert!(matches!(check_permit_id(other), Err(Error::InvalidArgument { .. })), "{other}");
        }
        assert!(matches!(check_permit_id("a/_c_x-expires-1-lease-1"), Err(Error::InvalidArgument { .. })));
        assert!(matches!(check_permit_id(""), Err(Error::InvalidArgument { .. })));
    }
}
