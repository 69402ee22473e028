//! The metric records. With the `metrics` feature each one goes to the `metrics` facade (and
//! so to whatever recorder the service installed); without it every type here is empty and
//! every function body is empty: nothing is recorded and nothing is paid.
#![cfg_attr(not(feature = "metrics"), allow(unused_variables))]

#[cfg(feature = "metrics")]
use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(feature = "metrics")]
use std::sync::Arc;
use tokio::time::Instant;

#[cfg(feature = "metrics")]
use metrics::Label;

#[cfg(feature = "metrics")]
use super::names::*;
use super::Kind;

/// The `path` label of one recipe's metrics, when the framework asks for per-path labels.
#[derive(Debug, Clone, Default)]
pub(crate) struct PathLabel(#[cfg(feature = "metrics")] Option<Arc<str>>);

impl PathLabel {
    /// `path` as a label when `enabled`, else none.
    pub(crate) fn new(enabled: bool, path: &str) -> Self {
        #[cfg(feature = "metrics")]
        return Self(enabled.then(|| Arc::from(path)));
        #[cfg(not(feature = "metrics"))]
        Self()
    }
}

/// The static labels `pairs`, then `path`'s.
#[cfg(feature = "metrics")]
fn labels(pairs: &[(&'static str, &'static str)], path: &PathLabel) -> Vec<Label> {
    let mut out: Vec<Label> = pairs.iter().map(|(k, v)| Label::from_static_parts(k, v)).collect();
    if let Some(path) = &path.0 {
        out.push(Label::new(LABEL_PATH, path.to_string()));
    }
    out
}

/// How an acquire ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Acquired,
    TimedOut,
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    Cancelled,
    Failed,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Acquired => "acquired",
            Self::TimedOut => "timed_out",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
        }
    }
}

/// What a timed lock record (an acquire, a hold) is about, and since when.
#[cfg(feature = "metrics")]
#[derive(Debug)]
struct Timed {
    kind: Kind,
    path: PathLabel,
    started: Instant,
}

#[cfg(feature = "metrics")]
impl Timed {
    /// The `kind` label (and `path`'s), with `pairs` after the kind.
    fn labels(&self, pairs: &[(&'static str, &'static str)]) -> Vec<Label> {
        let mut all = vec![(LABEL_KIND, self.kind.as_str())];
        all.extend_from_slice(pairs);
        labels(&all, &self.path)
    }

    fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// One acquire in progress: counted among the waiters until [`finish`](Self::finish)ed, or
/// dropped (the acquire future was dropped: `cancelled`).
#[derive(Debug)]
pub(crate) struct Acquiring {
    #[cfg(feature = "metrics")]
    timed: Timed,
    #[cfg(feature = "metrics")]
    open: bool,
}

impl Acquiring {
    pub(crate) fn start(kind: Kind, path: PathLabel, started: Instant) -> Self {
        #[cfg(feature = "metrics")]
        {
            let timed = Timed { kind, path, started };
            metrics::gauge!(LOCK_WAITERS, timed.labels(&[])).increment(1.0);
            Self { timed, open: true }
        }
        #[cfg(not(feature = "metrics"))]
        Self {}
    }

    pub(crate) fn finish(mut self, outcome: Outcome) {
        self.end(outcome);
    }

    /// The acquire goes on as another one (the semaphore's fast path yielding to its lock):
    /// no longer a waiter, and no wait recorded (the other acquire records its own).
    pub(crate) fn withdraw(mut self) {
        #[cfg(feature = "metrics")]
        if std::mem::take(&mut self.open) {
            metrics::gauge!(LOCK_WAITERS, self.timed.labels(&[])).decrement(1.0);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = &mut self;
    }

    fn end(&mut self, outcome: Outcome) {
        #[cfg(feature = "metrics")]
        if std::mem::take(&mut self.open) {
            metrics::gauge!(LOCK_WAITERS, self.timed.labels(&[])).decrement(1.0);
            let outcome = [(LABEL_OUTCOME, outcome.as_str())];
            metrics::histogram!(LOCK_WAIT_SECONDS, self.timed.labels(&outcome)).record(self.timed.seconds());
        }
    }
}

#[cfg(feature = "metrics")]
impl Drop for Acquiring {
    fn drop(&mut self) {
        self.end(Outcome::Cancelled);
    }
}

/// One hold, counted among the holders from acquired until dropped; its duration goes to
/// the hold histogram then.
#[derive(Debug)]
pub(crate) struct Holding {
    #[cfg(feature = "metrics")]
    timed: Timed,
}

impl Holding {
    pub(crate) fn start(kind: Kind, path: PathLabel) -> Self {
        #[cfg(feature = "metrics")]
        {
            let timed = Timed { kind, path, started: Instant::now() };
            metrics::gauge!(LOCK_HOLDERS, timed.labels(&[])).increment(1.0);
            Self { timed }
        }
        #[cfg(not(feature = "metrics"))]
        Self {}
    }
}

/// A hold of `kind` was lost for `reason` (once per hold).
pub(crate) fn hold_lost(kind: Kind, path: &PathLabel, reason: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(LOCK_LOSSES, labels(&[(LABEL_KIND, kind.as_str()), (LABEL_REASON, reason)], path)).increment(1);
}

#[cfg(feature = "metrics")]
impl Drop for Holding {
    fn drop(&mut self) {
        metrics::gauge!(LOCK_HOLDERS, self.timed.labels(&[])).decrement(1.0);
        metrics::histogram!(LOCK_HOLD_SECONDS, self.timed.labels(&[])).record(self.timed.seconds());
    }
}

/// One leadership, from gained to its drop: the leader gauge is 1 meanwhile, and each end
/// counts a change (also when the task holding it is aborted).
#[derive(Debug)]
pub(crate) struct Leading {
    #[cfg(feature = "metrics")]
    recipe: &'static str,
    #[cfg(feature = "metrics")]
    path: String,
}

impl Leading {
    /// A participant at `path` starts: the leader gauge exists from now on (0 until it leads).
    pub(crate) fn candidate(recipe: &'static str, path: &str) {
        #[cfg(feature = "metrics")]
        metrics::gauge!(LEADER, leader_labels(recipe, path)).increment(0.0);
    }

    pub(crate) fn start(recipe: &'static str, path: &str) -> Self {
        leadership(recipe, path, true);
        #[cfg(feature = "metrics")]
        return Self { recipe, path: path.to_string() };
        #[cfg(not(feature = "metrics"))]
        Self {}
    }

    /// The leadership ended (the same as dropping it; for a drop the reader should not miss).
    pub(crate) fn end(self) {}
}

#[cfg(feature = "metrics")]
impl Drop for Leading {
    fn drop(&mut self) {
        leadership(self.recipe, &self.path, false);
    }
}

#[cfg(feature = "metrics")]
fn leader_labels(recipe: &'static str, path: &str) -> Vec<Label> {
    vec![Label::from_static_parts(LABEL_RECIPE, recipe), Label::new(LABEL_PATH, path.to_string())]
}

/// Leadership at `path` (by the leader `recipe`, `latch` or `selector`) began or ended: the
/// gauge counts the leaderships at `path` in this process (0 or 1 but for a test that runs
/// several participants in one process).
fn leadership(recipe: &'static str, path: &str, leading: bool) {
    #[cfg(feature = "metrics")]
    {
        let gauge = metrics::gauge!(LEADER, leader_labels(recipe, path));
        if leading {
            gauge.increment(1.0);
        } else {
            gauge.decrement(1.0);
        }
        metrics::counter!(LEADERSHIP_CHANGES, leader_labels(recipe, path)).increment(1);
    }
}

/// A framework left the state `from` (none: it was just built) for `to` (none: it closed).
pub(crate) fn session_state(from: Option<&'static str>, to: Option<&'static str>) {
    #[cfg(feature = "metrics")]
    {
        if let Some(from) = from {
            metrics::gauge!(SESSION_STATE, LABEL_STATE => from).decrement(1.0);
        }
        if let Some(to) = to {
            metrics::gauge!(SESSION_STATE, LABEL_STATE => to).increment(1.0);
        }
    }
}

/// What happened to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionEvent {
    Expiry,
    Suspension,
    Reconnect,
    Recreation,
    Refusal,
}

pub(crate) fn session_event(event: SessionEvent) {
    #[cfg(feature = "metrics")]
    {
        let name = match event {
            SessionEvent::Expiry => SESSION_EXPIRIES,
            SessionEvent::Suspension => SESSION_SUSPENSIONS,
            SessionEvent::Reconnect => SESSION_RECONNECTS,
            SessionEvent::Recreation => SESSION_RECREATIONS,
            SessionEvent::Refusal => SESSION_REFUSALS,
        };
        metrics::counter!(name).increment(1);
    }
}

/// A background delete started (`true`) or ended.
pub(crate) fn deletes_pending(started: bool) {
    #[cfg(feature = "metrics")]
    {
        let gauge = metrics::gauge!(BACKGROUND_DELETES_PENDING);
        if started {
            gauge.increment(1.0);
        } else {
            gauge.decrement(1.0);
        }
    }
}

/// One cache's metrics: its kind, its path label, and the nodes it counts in the gauge
/// (given back when it goes).
#[derive(Debug, Default)]
pub(crate) struct CacheSite {
    #[cfg(feature = "metrics")]
    kind: &'static str,
    #[cfg(feature = "metrics")]
    path: PathLabel,
    #[cfg(feature = "metrics")]
    held: AtomicUsize,
}

impl CacheSite {
    pub(crate) fn new(kind: &'static str, path: PathLabel) -> Self {
        #[cfg(feature = "metrics")]
        return Self { kind, path, held: AtomicUsize::new(0) };
        #[cfg(not(feature = "metrics"))]
        Self {}
    }

    /// The cache holds `now` nodes.
    pub(crate) fn nodes(&self, now: usize) {
        #[cfg(feature = "metrics")]
        {
            let before = self.held.swap(now, Ordering::Relaxed);
            if before != now {
                let gauge = metrics::gauge!(CACHE_NODES, labels(&[(LABEL_KIND, self.kind)], &self.path));
                gauge.increment(now as f64 - before as f64);
            }
        }
    }

    /// The cache applied a node event (`created`, `changed`, `deleted`).
    pub(crate) fn event(&self, event: &'static str) {
        #[cfg(feature = "metrics")]
        metrics::counter!(CACHE_EVENTS, labels(&[(LABEL_KIND, self.kind), (LABEL_EVENT, event)], &self.path))
            .increment(1);
    }

    /// The cache re-read everything after a gap.
    pub(crate) fn resync(&self) {
        #[cfg(feature = "metrics")]
        metrics::counter!(CACHE_RESYNCS, labels(&[(LABEL_KIND, self.kind)], &self.path)).increment(1);
    }
}

#[cfg(feature = "metrics")]
impl Drop for CacheSite {
    fn drop(&mut self) {
        self.nodes(0);
    }
}

/// An item of a queue of `kind` was put.
pub(crate) fn queue_put(kind: &'static str, path: &PathLabel) {
    #[cfg(feature = "metrics")]
    metrics::counter!(QUEUE_PUT, labels(&[(LABEL_KIND, kind)], path)).increment(1);
}

/// An item of a queue of `kind` was taken.
pub(crate) fn queue_taken(kind: &'static str, path: &PathLabel) {
    #[cfg(feature = "metrics")]
    metrics::counter!(QUEUE_TAKEN, labels(&[(LABEL_KIND, kind)], path)).increment(1);
}

/// A consumer of a queue of `kind` listed `depth` items.
pub(crate) fn queue_depth(kind: &'static str, path: &PathLabel, depth: usize) {
    #[cfg(feature = "metrics")]
    metrics::gauge!(QUEUE_DEPTH, labels(&[(LABEL_KIND, kind)], path)).set(depth as f64);
}

/// A framework operation `op` that started at `started` ended, `ok` or not.
pub(crate) fn operation(op: &'static str, ok: bool, started: Instant) {
    #[cfg(feature = "metrics")]
    metrics::histogram!(OPERATION_SECONDS, LABEL_OP => op, LABEL_RESULT => if ok { "ok" } else { "error" })
        .record(started.elapsed().as_secs_f64());
}

/// A framework operation `op` is retried.
pub(crate) fn retried(op: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(OPERATION_RETRIES, LABEL_OP => op).increment(1);
}
