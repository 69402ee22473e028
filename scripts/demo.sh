#!/usr/bin/env bash
# The demo, on a fresh machine of this kind: installs only what it needs (ZooKeeper and a JRE;
# idempotent), builds only what it runs (the demo crate, demo/: the library and the testing
# kit's server, none of the library's dev-dependencies), then sells a stock against an embedded
# ZooKeeper server (or $ZK_CONNECT when set).
#   bash scripts/demo.sh            the inventory demo
#   DEMO_POSTGRES=1 bash scripts/demo.sh
#                                   ... with one more row, the stock in PostgreSQL, which refuses
#                                   the paused holder's write (installs Debian's postgresql;
#                                   DEMO_POSTGRES_URL names a database of yours instead)
#   bash scripts/demo.sh EXAMPLE    one of examples/ instead (this builds the library's
#                                   dev-dependencies too)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
if [[ $# -eq 0 ]]; then
    cargo run --quiet --profile demo -p zk-recipes-demo
else
    cargo run --quiet --release --example "$1"
fi
