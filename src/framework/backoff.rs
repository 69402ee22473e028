//! The one backoff of the crate's own retry loops (re-creating a session, background deletes,
//! change streams, re-queueing leaders): a pause that doubles from `start` up to `cap`,
//! optionally jittered, and starts over after a success.
//!
//! Not to be confused with the public [`RetryPolicy`](super::RetryPolicy) types, which decide
//! how a single operation is retried on the user's behalf.

use std::time::Duration;

/// A doubling pause: `start`, `2 * start`, ... up to `cap`.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    start: Duration,
    cap: Duration,
    jitter: bool,
    current: Duration,
}

impl Backoff {
    /// Pauses from `start`, doubling up to `cap`.
    pub(crate) const fn new(start: Duration, cap: Duration) -> Self {
        Self { start, cap, jitter: false, current: start }
    }

    /// Each pause is drawn uniformly from its upper half (`[p/2, p]`), so that many clients
    /// that failed together do not retry together.
    pub(crate) const fn with_jitter(mut self) -> Self {
        self.jitter = true;
        self
    }

    /// The next pause (and doubles the one after, up to the cap).
    pub(crate) fn next_pause(&mut self) -> Duration {
        let pause = self.current;
        self.current = (self.current * 2).min(self.cap);
        if self.jitter {
            let half = pause / 2;
            let spread = u64::try_from((pause - half).as_nanos()).unwrap_or(u64::MAX);
            half + Duration::from_nanos(fastrand::u64(0..=spread))
        } else {
            pause
        }
    }

    /// Sleeps for the next pause.
    ///
    /// # Cancel safety
    /// Cancel safe (the pause counts as taken).
    pub(crate) async fn sleep(&mut self) {
        tokio::time::sleep(self.next_pause()).await;
    }

    /// Starts over from `start` (after a success).
    pub(crate) fn reset(&mut self) {
        self.current = self.start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn doubles_up_to_the_cap_and_resets() {
        let mut b = Backoff::new(10 * MS, 50 * MS);
        let pauses: Vec<_> = (0..5).map(|_| b.next_pause()).collect();
        assert_eq!(pauses, [10 * MS, 20 * MS, 40 * MS, 50 * MS, 50 * MS]);
        b.reset();
        assert_eq!(b.next_pause(), 10 * MS);
    }

    #[test]
    fn jitter_stays_in_the_upper_half() {
        let mut b = Backoff::new(8 * MS, 64 * MS).with_jitter();
        for bound in [8, 16, 32, 64, 64, 64] {
            let pause = b.next_pause();
            assert!(pause >= bound * MS / 2 && pause <= bound * MS, "{pause:?} outside [{bound}/2, {bound}] ms");
        }
    }

    #[test]
    fn zero_start_stays_zero() {
        let mut b = Backoff::new(Duration::ZERO, MS).with_jitter();
        assert_eq!(b.next_pause(), Duration::ZERO);
        assert_eq!(b.next_pause(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn sleep_waits_the_pause() {
        let mut b = Backoff::new(100 * MS, 100 * MS);
        let before = tokio::time::Instant::now();
        b.sleep().await;
        assert_eq!(before.elapsed(), 100 * MS);
    }
}
