//! [`circuit_breaking`]: Curator's circuit-breaking connection-state listener, as a stream
//! adaptor: one loss and one recovery per outage, however much the connection flaps inside it.

use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use futures_util::StreamExt;
use tokio::time::Instant;

use super::retry::{RetryAttempt, RetryPolicy};
use super::state::ConnectionState;
use crate::ZooKeeperError;

/// Connection states with a circuit breaker in between (Curator's
/// `CircuitBreakingConnectionStateListener`): for code that acts on every state change and
/// should not act again and again while a connection flaps.
///
/// While the circuit is closed, every state passes. The first state that is not connected
/// ([`Suspended`](ConnectionState::Suspended), [`Lost`](ConnectionState::Lost),
/// [`Refused`](ConnectionState::Refused)) passes and opens the circuit for the pause `policy`
/// gives its first retry. While open, states are only remembered — except that the first
/// `Lost` after a `Suspended` still passes, since it means more than the suspension did. When
/// the pause ends: connected again, the circuit closes; not connected, it stays open for the
/// policy's next pause, until the policy gives up, and then closes. On closing, the latest state
/// passes if it differs from the one that opened the circuit (or from the `Lost` that passed
/// since). So an outage with any number of flaps inside reads `Suspended`, then `Reconnected`.
///
/// `policy` is asked as for a retry: attempt `n` of the open circuit, the time since it opened,
/// [`ZooKeeperError::ConnectionLoss`] as the error. The stream ends with `states`.
///
/// Recipes do not see this stream: to keep a recipe from giving up its lock or leadership on a
/// mere suspension, use [`ErrorPolicy::SessionOnly`](crate::ErrorPolicy::SessionOnly).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) {
/// use std::time::Duration;
/// use futures_util::StreamExt;
/// use zk_recipes::{circuit_breaking, ConnectionState, RetryNTimes};
///
/// let states = circuit_breaking(fw.connection_states(), RetryNTimes::new(3, Duration::from_secs(5)));
/// futures_util::pin_mut!(states);
/// while let Some(state) = states.next().await {
///     match state {
///         ConnectionState::Suspended | ConnectionState::Lost => { /* pause the work: once */ }
///         s if s.is_connected() => { /* resume: once */ }
///         _ => {}
///     }
/// }
/// # }
/// ```
pub fn circuit_breaking<S>(
    states: S,
    policy: impl RetryPolicy + 'static,
) -> impl Stream<Item = ConnectionState> + Send + 'static
where
    S: Stream<Item = ConnectionState> + Send + 'static,
{
    let policy: Arc<dyn RetryPolicy> = Arc::new(policy);
    async_stream::stream! {
        let mut states = Box::pin(states);
        while let Some(state) = states.next().await {
            yield state;
            if state.is_connected() {
                continue;
            }
            let Some(first) = pause(policy.as_ref(), 0, Duration::ZERO) else { continue };
            // the circuit is open
            let opened = Instant::now();
            let (mut initial, mut last) = (state, state);
            let mut lost_sent = state == ConnectionState::Lost;
            let mut until = opened + first;
            let mut retries = 0;
            loop {
                tokio::select! {
                    next = states.next() => match next {
                        None => {
                            if last != initial {
                                yield last;
                            }
                            return;
                        }
                        Some(ConnectionState::Lost) if !lost_sent => {
                            lost_sent = true;
                            (initial, last) = (ConnectionState::Lost, ConnectionState::Lost);
                            yield ConnectionState::Lost;
                        }
                        Some(next) => last = next,
                    },
                    () = tokio::time::sleep_until(until) => {
                        if last.is_connected() {
                            break;
                        }
                        retries += 1;
                        match pause(policy.as_ref(), retries, opened.elapsed()) {
                            Some(next) => until = super::deadline::after(next),
                            None => break,
                        }
                    }
                }
            }
            tracing::debug!(?initial, ?last, retries, "connection states: the circuit closes");
            if last != initial {
                yield last;
            }
        }
    }
}

/// The policy's pause for the open circuit's attempt `retries`, or `None` when it gives up.
fn pause(policy: &dyn RetryPolicy, retries: u32, elapsed: Duration) -> Option<Duration> {
    policy.allow_retry(&RetryAttempt::new(retries, elapsed, &ZooKeeperError::ConnectionLoss))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::{RetryNTimes, RetryOneTime};
    use ConnectionState::{Connected, Lost, Reconnected, Suspended};

    /// Feeds `script` (a state after a pause, in ms) through the breaker on a paused clock;
    /// returns what passed and when (ms from the start).
    async fn run(policy: impl RetryPolicy + 'static, script: &[(u64, ConnectionState)]) -> Vec<(u64, ConnectionState)> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let input = async_stream::stream! {
            let mut rx = rx;
            while let Some(s) = rx.recv().await { yield s; }
        };
        let start = Instant::now();
        let out = tokio::spawn(async move {
            let states = circuit_breaking(input, policy);
            futures_util::pin_mut!(states);
            let mut seen = Vec::new();
            while let Some(s) = states.next().await {
                seen.push((start.elapsed().as_millis() as u64, s));
            }
            seen
        });
        for &(after, state) in script {
            tokio::time::sleep(Duration::from_millis(after)).await;
            tx.send(state).unwrap();
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(tx);
        out.await.unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn flaps_inside_the_pause_pass_as_one_suspension_and_one_recovery() {
        let script = [(0, Connected), (100, Suspended), (100, Reconnected), (100, Suspended), (100, Reconnected)];
        let seen = run(RetryNTimes::new(3, Duration::from_secs(1)), &script).await;
        assert_eq!(seen, vec![(0, Connected), (100, Suspended), (1100, Reconnected)]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_loss_passes_while_open_and_later_ones_wait() {
        let script = [(0, Suspended), (100, Lost), (100, Reconnected), (100, Suspended), (100, Lost)];
        let seen = run(RetryNTimes::new(2, Duration::from_secs(1)), &script).await;
        // open at 0 with Suspended; the Lost at 100 passes; still down at 1000 and 2000; the
        // policy gives up at 3000 with Lost last, which is what passed already
        assert_eq!(seen, vec![(0, Suspended), (100, Lost)]);
    }

    #[tokio::test(start_paused = true)]
    async fn still_down_keeps_the_circuit_open_until_the_policy_gives_up() {
        let script = [(0, Suspended), (1500, Reconnected), (100, Suspended)];
        let seen = run(RetryNTimes::new(2, Duration::from_secs(1)), &script).await;
        // pauses end at 1000 (down), 2000 (down again after the flap), 3000: given up
        assert_eq!(seen, vec![(0, Suspended)]);
        let seen = run(RetryOneTime::new(Duration::from_secs(1)), &[(0, Suspended), (1500, Reconnected)]).await;
        // given up at 1000 while down: closed again, so the recovery at 1500 passes as it comes
        assert_eq!(seen, vec![(0, Suspended), (1500, Reconnected)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_policy_that_never_retries_leaves_the_circuit_closed() {
        let script = [(0, Suspended), (100, Reconnected), (100, Suspended)];
        let seen = run(RetryNTimes::new(0, Duration::from_secs(1)), &script).await;
        assert_eq!(seen, vec![(0, Suspended), (100, Reconnected), (200, Suspended)]);
    }
}
