#!/usr/bin/env bash
# What the `metrics` feature costs: `zkr bench --recipe mutex --clients 16`, zkr built without
# and with its `metrics` feature (which forwards the library's; zkr installs no recorder, so the
# `on` build pays the instrumentation and the facade's no-op recorder), in interleaved repeats
# (the order alternates) against ONE standalone fsync-on server (bench/zk.sh), after a warm-up.
# Prints one JSON line per run (with "build":"off"|"on") and a median/min/max summary per build.
#
#   bash bench/metrics-cost.sh                     # builds both (release), 6 repeats of 5 s
#   ZKR_OFF=/path/zkr ZKR_ON=/path/zkr REPEATS=8 SECONDS_PER_RUN=5 bash bench/metrics-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${REPEATS:-6}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
CLIENTS=${CLIENTS:-16}
out=$(mktemp -d)
if [[ -z ${ZKR_OFF:-} ]]; then
    cargo build --quiet --release -p zkr && cp target/release/zkr "$out/zkr-off" && ZKR_OFF=$out/zkr-off
fi
if [[ -z ${ZKR_ON:-} ]]; then
    cargo build --quiet --release -p zkr --features metrics && cp target/release/zkr "$out/zkr-on" && ZKR_ON=$out/zkr-on
fi
# shellcheck source=bench/zk.sh
source bench/zk.sh
trap zk_stop EXIT INT TERM
zk_start standalone
run() { # build binary repeat
    "$2" bench --connect "$ZK_CONNECT" --recipe mutex --clients "$CLIENTS" --seconds "$SECONDS_PER_RUN" \
        --warmup-seconds 1 --base "/metrics-cost-$3" 2>/dev/null | sed "s/^{/{\"build\":\"$1\",\"repeat\":$3,/"
}
# the server's JIT and the disk warm up first (untimed)
"$ZKR_OFF" bench --connect "$ZK_CONNECT" --recipe mutex --clients "$CLIENTS" --seconds 20 --base /metrics-cost-warmup >/dev/null 2>&1
for repeat in $(seq 1 "$REPEATS"); do
    if ((repeat % 2)); then order="off on"; else order="on off"; fi
    for build in $order; do
        if [[ $build == off ]]; then bin=$ZKR_OFF; else bin=$ZKR_ON; fi
        run "$build" "$bin" "$repeat" | tee -a "$out/runs.jsonl"
    done
done
python3 - "$out/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for build in ("off", "on"):
    rs = [r for r in runs if r["build"] == build]
    for key in ("ops_per_s", "p50_ms", "p99_ms"):
        xs = [r[key] for r in rs]
        print(f"{build:3} {key:10} median {statistics.median(xs):9.2f}  min {min(xs):9.2f}  max {max(xs):9.2f}  (n={len(xs)})")
ratios = []
for r in {r["repeat"] for r in runs}:
    pair = {x["build"]: x["ops_per_s"] for x in runs if x["repeat"] == r}
    if len(pair) == 2:
        ratios.append(pair["on"] / pair["off"])
ratios.sort()
print(f"on/off ops_per_s per repeat: median {statistics.median(ratios):.3f}  min {ratios[0]:.3f}  max {ratios[-1]:.3f}  {['%.3f' % x for x in ratios]}")
PY
