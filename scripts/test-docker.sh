#!/usr/bin/env bash
# The Docker subset: the framework suite (tests/framework/: with acl, inspect, bad_input), the
# lock suite (tests/locks/) and the cache suite (tests/cache/) once more, with every test server
# in a container (ZK_TEST_BACKEND=docker): on zk-recipes/zookeeper:3.9 (Debian 13's ZooKeeper
# 3.9) all three; on zk-recipes/zookeeper:3.8 (Debian 12's ZooKeeper 3.8, the same packages
# scripts/test.sh already runs every suite on as local processes) the framework suite only, which
# proves the backend with that image in about a third of the time; both images built by
# docker/build-image.sh, which this script runs first (a no-op for an image that exists and is of
# the script's current revision). On 3.9 it also runs, in one go, the fault suite's random-fault
# soak and both partitions between servers (the leader cut off from both followers, a follower
# cut off from the quorum, their clients staying connected: iptables rules in the container)
# (tests/faults/, about 85 s together).
#
#   bash scripts/test-docker.sh                    # both series
#   ZK_DOCKER_SERIES=3.9 bash scripts/test-docker.sh   # one of them
#   bash scripts/test-docker.sh lock_               # arguments go to the test binaries
#
# Needs the docker command and a reachable daemon. Runs every series even when one fails, and
# fails if any test failed or if any container or network of the testing kit is left behind
# after a series.
set -euo pipefail
cd "$(dirname "$0")/.."

series_list=${ZK_DOCKER_SERIES:-3.8 3.9}
for series in $series_list; do
    started=$(date +%s)
    bash docker/build-image.sh --version "$series"
    echo "Docker subset: image zk-recipes/zookeeper:$series ready in $(($(date +%s) - started)) s"
done

leftovers() {
    local left nets
    left=$(docker ps -aq --filter label=zk-recipes.test=1)
    nets=$(docker network ls -q --filter label=zk-recipes.test=1)
    if [ -n "$left$nets" ]; then
        echo "error: test containers or networks left behind ($1):" >&2
        docker ps -a --filter label=zk-recipes.test=1 >&2
        docker network ls --filter label=zk-recipes.test=1 >&2
        return 1
    fi
}

failed=()
summary=()
for series in $series_list; do
    image=zk-recipes/zookeeper:$series
    echo "Docker subset on $image"
    started=$(date +%s)
    problems=()
    suites=(--test framework)
    if [ "$series" != 3.8 ]; then
        suites+=(--test locks --test cache)
    fi
    ZK_TEST_BACKEND=docker ZK_TEST_IMAGE=$image \
        cargo test -p zk-recipes --all-features --no-fail-fast "${suites[@]}" \
        -- --test-threads="${TEST_THREADS:-2}" "$@" || problems+=("tests failed")
    # the fault suite's random-fault soak (with its linearizability check) and its partitions
    # between servers on ZooKeeper 3.9 too
    if [ "$series" = 3.9 ] && [ $# -eq 0 ]; then
        ZK_TEST_BACKEND=docker ZK_TEST_IMAGE=$image \
            cargo test -p zk-recipes --all-features --test faults -- sixteen partition ||
            problems+=("fault soak or partitions failed")
    fi
    took=$(($(date +%s) - started))
    leftovers "$image" || problems+=("containers left behind")
    if ((${#problems[@]})); then
        status=$(IFS=,; echo "${problems[*]}")
        failed+=("$image")
    else
        status=ok
    fi
    echo "Docker subset (${suites[*]}) on $image took $took s: $status"
    summary+=("$image: $status, $took s")
done

printf 'Docker subset: %s\n' "${summary[@]}"
if ((${#failed[@]})); then
    echo "error: the Docker subset failed on: ${failed[*]}" >&2
    exit 1
fi
