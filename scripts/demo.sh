#!/usr/bin/env bash
# The demo, on a fresh machine of this kind: installs what is missing (idempotent), then runs
# the example against an embedded ZooKeeper server (or $ZK_CONNECT when set).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo run --quiet --release --example "${1:-inventory}"
