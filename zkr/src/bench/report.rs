//! Latency percentiles and the JSON line.

use serde_json::{json, Value};

/// What one run measured.
#[derive(Debug, Default)]
pub struct Report {
    /// Latencies (ms) of the operations counted in the window.
    pub latencies_ms: Vec<f64>,
    /// Violations found while running.
    pub violations: u64,
    /// Failed operations.
    pub errors: u64,
    /// Extra `"key":number` fields (drain, memory).
    pub extra: Vec<(&'static str, f64)>,
    /// Overrides the op count (double barrier rounds, drain waiters).
    pub ops_override: Option<u64>,
    /// Overrides the run's length (the `seconds` field and what `ops_per_s` divides by) where
    /// it is measured rather than asked for (the holders' acquire time).
    pub seconds_override: Option<f64>,
}

/// The `q` quantile (0..=1) of sorted values, nearest rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// `x` rounded to 3 decimals, as a JSON number: an integer when it is one (`2`, not `2.0`),
/// 0 when it is not finite.
fn num(x: f64) -> Value {
    let rounded = (x * 1000.0).round() / 1000.0;
    match rounded {
        r if !r.is_finite() => Value::from(0),
        r if r.fract() == 0.0 && r.abs() < 9.0e15 => Value::from(r as i64),
        r => Value::from(r),
    }
}

impl Report {
    /// With more than one worker (a client, or a task of one): the fewest and the most
    /// operations one worker counted in the window (`worker_ops_min`, `worker_ops_max`), so a
    /// reader sees whether the ops/s came from every worker or from a few while the others
    /// starved.
    pub fn add_worker_spread(&mut self, per_worker: &[usize]) {
        if let (true, Some(min), Some(max)) = (per_worker.len() > 1, per_worker.iter().min(), per_worker.iter().max()) {
            self.extra.push(("worker_ops_min", *min as f64));
            self.extra.push(("worker_ops_max", *max as f64));
        }
    }

    /// The one JSON line of the run.
    pub fn json(mut self, peer: &str, recipe: &str, clients: usize, seconds: f64) -> String {
        self.latencies_ms.sort_by(|a, b| a.total_cmp(b));
        let seconds = self.seconds_override.unwrap_or(seconds);
        let ops = self.ops_override.unwrap_or(self.latencies_ms.len() as u64);
        let mut line = json!({
            "peer": peer,
            "recipe": recipe,
            "clients": clients,
            "seconds": num(seconds),
            "ops": ops,
            "ops_per_s": num(ops as f64 / seconds),
            "p50_ms": num(quantile(&self.latencies_ms, 0.5)),
            "p99_ms": num(quantile(&self.latencies_ms, 0.99)),
            "violations": self.violations,
            "errors": self.errors,
        });
        for (k, v) in &self.extra {
            line[*k] = num(*v);
        }
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_json() {
        let v = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.99), 100.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
        let r = Report { latencies_ms: vec![2.0, 1.0], ..Default::default() };
        assert_eq!(
            r.json("zk-recipes", "mutex", 2, 1.0),
            "{\"peer\":\"zk-recipes\",\"recipe\":\"mutex\",\"clients\":2,\"seconds\":1,\"ops\":2,\"ops_per_s\":2,\"p50_ms\":2,\"p99_ms\":2,\"violations\":0,\"errors\":0}"
        );
    }

    #[test]
    fn the_worker_spread_is_reported_only_with_several_workers() {
        let mut r = Report::default();
        r.add_worker_spread(&[7]);
        assert!(r.extra.is_empty());
        r.add_worker_spread(&[5, 0, 9]);
        assert_eq!(r.extra, vec![("worker_ops_min", 0.0), ("worker_ops_max", 9.0)]);
        assert!(r.json("zk-recipes", "counter", 3, 1.0).ends_with(",\"worker_ops_min\":0,\"worker_ops_max\":9}"));
    }
}
