//! A fenced resource: what a store that honours fencing tokens does, for tests.

use std::sync::Mutex;

use crate::sync::lock;

/// A resource that accepts a write only with a fencing token at least as large as the largest
/// it has seen, and records every stale write it refused: the downstream half of fencing (see
/// [`HeldNode::fencing_token`](crate::HeldNode::fencing_token)).
#[derive(Debug, Default)]
pub struct FencedResource {
    inner: Mutex<Fenced>,
}

#[derive(Debug, Default)]
struct Fenced {
    highest: i64,
    accepted: u64,
    rejected: Vec<(i64, i64)>,
}

impl FencedResource {
    /// A resource that has seen no token yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes with `token`: `true` when accepted, `false` (and recorded) when stale.
    pub fn write(&self, token: i64) -> bool {
        let mut f = lock(&self.inner);
        if token < f.highest {
            let highest = f.highest;
            f.rejected.push((token, highest));
            return false;
        }
        f.highest = token;
        f.accepted += 1;
        true
    }

    /// The largest token accepted so far.
    pub fn highest(&self) -> i64 {
        lock(&self.inner).highest
    }

    /// How many writes were accepted.
    pub fn accepted(&self) -> u64 {
        lock(&self.inner).accepted
    }

    /// The refused writes: `(their token, the highest seen then)`.
    pub fn rejected(&self) -> Vec<(i64, i64)> {
        lock(&self.inner).rejected.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_lower_tokens() {
        let r = FencedResource::new();
        assert!(r.write(5));
        assert!(r.write(5));
        assert!(r.write(9));
        assert!(!r.write(6));
        assert_eq!((r.highest(), r.accepted(), r.rejected()), (9, 3, vec![(6, 9)]));
    }
}
