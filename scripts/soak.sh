#!/usr/bin/env bash
# The full soak (issue 35, docs/RELIABILITY.md "A week of uptime in an hour"): one process,
# a server of its own (the kit's: forceSync=no, so the log's fsync does not bound the rate),
# for at most SOAK_SECS (default 3600) or until it reached 1,000,000 lock cycles over 1,000
# paths, 10,000 leader elections, 100,000 cache events, 1,000 session expiries and 1,000
# connection cuts (expiries and cuts paced evenly over the time bound). It samples RSS, file
# descriptors, live tasks, the server's watches and nodes every 30 s into a CSV, asserts that
# each is flat after the warm-up and back to its baseline at the end, and renders the chart.
#
#   bash scripts/soak.sh [OUT_DIR]     # default target/soak-hour; SOAK_SEED picks the mix
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/soak-hour}"
mkdir -p "$out"
export SOAK_SECS="${SOAK_SECS:-3600}" SOAK_SEED="${SOAK_SEED:-35}" SOAK_CSV="$out/soak.csv"
export SOAK_LOCK_CYCLES="${SOAK_LOCK_CYCLES:-1000000}" SOAK_ELECTIONS="${SOAK_ELECTIONS:-10000}"
export SOAK_CACHE_EVENTS="${SOAK_CACHE_EVENTS:-100000}" SOAK_EXPIRIES="${SOAK_EXPIRIES:-1000}" SOAK_CUTS="${SOAK_CUTS:-1000}"
set +e
cargo test --features tls,sasl --test soak -- --ignored --nocapture 2>&1 | tee "$out/soak.log"
status=${PIPESTATUS[0]}
set -e
python3 scripts/soak-chart.py "$out/soak.csv" "$out/soak.svg" || true
echo "soak: samples $out/soak.csv, chart $out/soak.svg, log $out/soak.log"
exit "$status"
