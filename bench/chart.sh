#!/usr/bin/env bash
# Draws the benchmark chart in Rust:
#
#   bash bench/chart.sh [RESULTS_JSONL] [SVG]     (defaults: bench/out/results.jsonl bench/results.svg)
#
# runs `cargo run --release --example bench_chart -- RESULTS_JSONL SVG`. The example is written
# separately; while examples/bench_chart.rs (or examples/bench_chart/main.rs) does not exist,
# this says so and exits 0, so bench/compare.sh goes on without a chart.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
results=${1:-bench/out/results.jsonl}
svg=${2:-bench/results.svg}

if [[ ! -f examples/bench_chart.rs && ! -f examples/bench_chart/main.rs ]]; then
    printf 'chart.sh: examples/bench_chart.rs does not exist yet; no chart drawn\n' >&2
    exit 0
fi
[[ -s $results ]] || { printf 'chart.sh: %s is missing or empty\n' "$results" >&2; exit 1; }
cargo run --release --quiet --example bench_chart -- "$results" "$svg"
printf 'chart.sh: wrote %s\n' "$svg" >&2
