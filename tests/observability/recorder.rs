//! The recording recorder (metrics-util's debugging recorder), installed once for this test
//! binary, and what the tests ask of it. Tests that read it run one at a time ([`serial`]) and
//! compare with what they did since their own start, under labels only they use (a framework
//! with per-path labels, a unique path).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::{CompositeKey, MetricKind};

struct Recorded {
    snapshotter: Snapshotter,
    /// A snapshot resets what it reads (counters and gauges to 0, histograms emptied): the
    /// totals are kept here. Every gauge of the crate moves by increments and decrements but
    /// the queue depth (set), whose total here is only good for "it was recorded".
    totals: Mutex<HashMap<CompositeKey, Value>>,
}

fn recorded() -> &'static Recorded {
    static RECORDED: OnceLock<Recorded> = OnceLock::new();
    RECORDED.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().expect("the only recorder of this test binary");
        Recorded { snapshotter, totals: Mutex::default() }
    })
}

/// Installs the recorder (before anything is recorded) and runs the tests that read it one at
/// a time: the session metrics have no label of their own.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    recorded();
    SERIAL.lock().await
}

/// The metrics as recorded now.
pub struct Metrics(Vec<(CompositeKey, Value)>);

#[derive(Clone)]
enum Value {
    Counter(u64),
    Gauge(f64),
    Histogram(Vec<f64>),
}

impl Metrics {
    pub fn now() -> Metrics {
        let recorded = recorded();
        let mut totals = recorded.totals.lock().unwrap();
        for (key, _, _, value) in recorded.snapshotter.snapshot().into_vec() {
            let total = totals.entry(key).or_insert_with(|| match value {
                DebugValue::Counter(_) => Value::Counter(0),
                DebugValue::Gauge(_) => Value::Gauge(0.0),
                DebugValue::Histogram(_) => Value::Histogram(Vec::new()),
            });
            match (total, value) {
                (Value::Counter(t), DebugValue::Counter(n)) => *t += n,
                (Value::Gauge(t), DebugValue::Gauge(g)) => *t += g.into_inner(),
                (Value::Histogram(t), DebugValue::Histogram(values)) => {
                    t.extend(values.into_iter().map(|v| v.into_inner()))
                }
                _ => unreachable!("a key keeps its kind"),
            }
        }
        Metrics(totals.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    fn matching<'a>(
        &'a self,
        kind: MetricKind,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.0
            .iter()
            .filter(move |(key, _)| {
                key.kind() == kind
                    && key.key().name() == name
                    && labels.iter().all(|(k, v)| key.key().labels().any(|l| l.key() == *k && l.value() == *v))
            })
            .map(|(_, value)| value)
    }

    /// The sum of the counters `name` whose labels include `labels`.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.matching(MetricKind::Counter, name, labels).map(|v| if let Value::Counter(n) = v { *n } else { 0 }).sum()
    }

    /// The sum of the gauges `name` whose labels include `labels` (`None`: no such gauge).
    pub fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.matching(MetricKind::Gauge, name, labels)
            .map(|v| if let Value::Gauge(g) = v { *g } else { 0.0 })
            .reduce(|a, b| a + b)
    }

    /// Every value recorded in the histograms `name` whose labels include `labels`.
    pub fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.matching(MetricKind::Histogram, name, labels)
            .flat_map(|v| if let Value::Histogram(values) = v { values.clone() } else { Vec::new() })
            .collect()
    }
}
