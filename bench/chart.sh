#!/usr/bin/env bash
# Draws the benchmark chart in Rust:
#
#   bash bench/chart.sh [RESULTS_JSONL] [SVG] [SETTING]
#                       (defaults: bench/out/results.jsonl bench/results.svg, the first setting in the file)
#
# draws one setting's matrix by client count: mutex, rwlock, semaphore, counter, shared_count...
# (compare.sh passes the first setting run, the standalone disk one by default). Left out: the
# floors and the pipelined limit, the per-entity mutex rows and the T-task counter row (one
# session with T tasks: their axis is tasks, not clients; RESULTS.md has them), the drain,
# memory and holders runs. With `cargo run --release --example bench_chart -- <lines> SVG`. The example is written
# separately; while examples/bench_chart.rs (or examples/bench_chart/main.rs) does not exist,
# this says so and exits 0, so bench/compare.sh goes on without a chart.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
results=${1:-bench/out/results.jsonl}
svg=${2:-bench/results.svg}
setting=${3:-}

if [[ ! -f examples/bench_chart.rs && ! -f examples/bench_chart/main.rs ]]; then
    printf 'chart.sh: examples/bench_chart.rs does not exist yet; no chart drawn\n' >&2
    exit 0
fi
[[ -s $results ]] || { printf 'chart.sh: %s is missing or empty\n' "$results" >&2; exit 1; }
mkdir -p bench/out
lines=bench/out/chart-input.jsonl
python3 - "$results" "$setting" >"$lines" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
setting = sys.argv[2] or next((r["setting"] for r in rows if "setting" in r), None)
for r in rows:
    matrix = ("mutex", "rwlock", "semaphore", "semaphore_mutex", "counter", "shared_count", "double_barrier")
    if r.get("setting") == setting and r.get("recipe") in matrix and int(r.get("tasks", 1)) == 1:
        print(json.dumps(r))
PY
[[ -s $lines ]] || { printf 'chart.sh: no matrix lines for setting %s in %s\n' "${setting:-(first)}" "$results" >&2; exit 1; }
cargo run --release --quiet --example bench_chart -- "$lines" "$svg"
printf 'chart.sh: wrote %s\n' "$svg" >&2
