#!/usr/bin/env bash
# The whole test suite, on a fresh machine of this kind: installs what is missing
# (ZooKeeper, a JRE, Curator's jars; idempotent), builds the ZooKeeper image for the Docker
# backend's own tests if it is missing (docker/build-image.sh; needs Docker), then runs every
# test against real ZooKeeper servers that the tests start and stop themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash docker/build-image.sh
started=$(date +%s)
# ZooKeeper servers running before the tests (not ours to judge)
before=$(pgrep -f 'org.apache.zookeeper.server' | sort || true)
# Every crate of the workspace (library, testing kit, zkr); one test binary at a time; tests
# inside a binary share one server and run on 2 threads.
cargo test --workspace --all-features --no-fail-fast -- --test-threads="${TEST_THREADS:-2}" "$@"
# The lock suite and the coordination suite (leader, counters, barriers) once more over mutual
# TLS: ZKR_TEST_TLS=1 makes the shared server TLS-only for clients (about 50 s).
ZKR_TEST_TLS=1 cargo test --all-features --no-fail-fast --test locks --test coordination -- --test-threads="${TEST_THREADS:-2}" "$@"
# ... and the lock suite over mutual TLS on a 3-node ensemble (ZKR_TEST_TLS=cluster; about 20 s).
ZKR_TEST_TLS=cluster cargo test --all-features --no-fail-fast --test locks -- --test-threads="${TEST_THREADS:-2}" "$@"
# The cache suite over TLS as well (about 50 s), less the tests that need the server's plaintext
# port: a RefusingProxy in front of it, four-letter words, a framework builder of their own.
ZKR_TEST_TLS=1 cargo test --all-features --no-fail-fast --test cache -- --test-threads="${TEST_THREADS:-2}" \
  --skip a_server_refusing_multi_read --skip auto_falls_back --skip dropping_the_watcher_or_the_cache \
  --skip a_root_that_never_appears --skip unreadable_nodes_are_left_out "$@"
# The leader and counter suites on the mutual-TLS ensemble too (about 35 s), less the lost-reply
# and lost-connection tests (their proxy fronts one server) and the leader-expiry test (on an
# ensemble the expired leader hears of its expiry from its own server after others may already
# see its node gone: the fencing token covers that window, the test's "never two at once" view
# cannot).
ZKR_TEST_TLS=cluster cargo test --all-features --no-fail-fast --test coordination -- --test-threads="${TEST_THREADS:-2}" \
  --skip reply_is_lost --skip lost_reply --skip lost_request --skip cancelled_callers_before_and_after \
  --skip hears_nothing --skip exactly_one_leader_while_the_leaders_session_expires "$@"
# The 5-minute soak (issue 35): 240 s of the full soak's mix at a fifteenth of its counts, with
# expiries and cuts; asserts flat RSS, fds, tasks, watches and nodes and nothing left; prints
# its figures (scripts/soak.sh is the hour-long one).
SOAK_SECS=240 SOAK_SEED=35 cargo test --all-features --test soak -- --ignored --nocapture 2>&1 | grep -v '^soak sample'
# Every example runs against its own embedded server and must succeed.
for example in $(awk '/^\[\[example\]\]/{e=1; next} /^\[/{e=0} e && /^name = /{gsub(/"/, "", $3); print $3}' Cargo.toml); do
  echo "== example $example"
  cargo run --quiet --all-features --example "$example" >/dev/null
done
# ... and the fencing crate's: a stale holder refused by PostgreSQL (its own servers).
echo "== example fenced_postgres"
cargo run --quiet -p zk-recipes-fencing --example fenced_postgres >/dev/null
# The inventory demo (demo/, what scripts/demo.sh runs) must succeed too.
echo "== demo inventory"
cargo run --quiet -p zk-recipes-demo >/dev/null
# ... and with its PostgreSQL row: the database refuses the paused holder's write.
echo "== demo inventory, DEMO_POSTGRES=1"
DEMO_POSTGRES=1 cargo run --quiet -p zk-recipes-demo >/dev/null
# The fault suite's results, for docs/RELIABILITY.md (committed by hand after a run).
bash scripts/reliability.sh || true
echo "test suite took $(( $(date +%s) - started )) s"
left=$(comm -13 <(echo "$before") <(pgrep -f 'org.apache.zookeeper.server' | sort || true) | grep -c . || true)
if [ "$left" -gt 0 ]; then
  echo "error: $left ZooKeeper server process(es) left running by the tests" >&2
  pgrep -af 'org.apache.zookeeper.server' >&2 || true
  exit 1
fi
# PostgreSQL servers the tests started (the kit's TestingPostgres runs them from a temp dir)
left=$(pgrep -f 'postgres -D .*/zk-testing-pg-' | grep -c . || true)
if [ "$left" -gt 0 ]; then
  echo "error: $left PostgreSQL server process(es) left running by the tests" >&2
  pgrep -af 'postgres -D .*/zk-testing-pg-' >&2 || true
  exit 1
fi
left=$(docker ps -aq --filter label=zk-recipes.test=1 | wc -l)
if [ "$left" -gt 0 ]; then
  echo "error: $left test container(s) left behind by the tests" >&2
  docker ps -a --filter label=zk-recipes.test=1 >&2
  exit 1
fi
