#!/usr/bin/env bash
# The Docker subset: the lock suite (tests/locks/) and the framework suite
# (tests/framework/: with acl, inspect, bad_input) once more, with every test server in a container
# (ZK_TEST_BACKEND=docker, image zk-recipes/zookeeper:3.8 built by docker/build-image.sh).
# Needs the docker command and a reachable daemon; builds the image if it is missing.
# Fails if any container or network of the testing kit is left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
bash docker/build-image.sh
started=$(date +%s)
ZK_TEST_BACKEND=docker cargo test -p zk-recipes --all-features --no-fail-fast --test locks --test framework \
    -- --test-threads="${TEST_THREADS:-2}" "$@"
echo "Docker subset (locks, framework) took $(( $(date +%s) - started )) s"
left=$(docker ps -aq --filter label=zk-recipes.test=1)
nets=$(docker network ls -q --filter label=zk-recipes.test=1)
if [ -n "$left$nets" ]; then
  echo "error: test containers or networks left behind:" >&2
  docker ps -a --filter label=zk-recipes.test=1 >&2
  docker network ls --filter label=zk-recipes.test=1 >&2
  exit 1
fi
