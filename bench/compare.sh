#!/usr/bin/env bash
# Benchmarks zk-recipes side by side with Apache Curator, kazoo and zookeeper-client's own lock,
# against ONE ZooKeeper server this script starts (its own temp dir, a free 127.0.0.1 port,
# killed by pid on exit), then writes bench/RESULTS.md (and bench/results.svg when the Rust
# chart example exists).
#
#   bash bench/compare.sh                                   # the full matrix
#   PEERS=curator,kazoo RECIPES=mutex CLIENTS=1,4 SECONDS_PER_RUN=2 REPEATS=1 bash bench/compare.sh
#
# Knobs (lists take commas or spaces):
#   SECONDS_PER_RUN  measured window of one run, seconds            (default 5)
#   WARMUP           warm-up before the window, seconds             (default 1)
#   REPEATS          repeats of the whole matrix; medians are taken (default 3)
#   RECIPES          mutex rwlock semaphore semaphore_mutex counter shared_count double_barrier
#   CLIENTS          1 4 16
#   PEERS            zk-recipes curator kazoo zookeeper-client (zookeeper-client: mutex only)
#   LEASES           semaphore leases                               (default 2)
#   RAW              1: measure the raw floor (`zkr bench --recipe raw`) per client count (default 1)
#   DRAIN_WAITERS    waiters of the drain runs; empty: no drain     (default "500 2000")
#   DRAIN_PEERS      peers of the drain runs, among PEERS           (default "zk-recipes curator")
#   DRAIN_CLIENTS    sessions the drain's waiters are spread over   (default 1)
#   MEMORY_WAITERS   waiters of the memory run; 0: none             (default 10000)
#   CACHE_NODES      tree sizes of the cache-load runs; empty: none   (default "10000 100000")
#   CACHE_DELAY      1: the cache-delay run                          (default 1)
#   CACHE_DELAY_NODES, CACHE_RATE  its tree size and writes/s         (default 1000, 1000)
#   CACHE_PEERS      peers of the cache runs, among PEERS           (default "zk-recipes curator")
#   CACHE_ONLY       1: only the cache runs (no raw floor, matrix, drain or memory run), and
#                    only the cache section of bench/RESULTS.md is replaced
#   ZKR              a zkr binary to use instead of building one with
#                    `cargo build --release --bin zkr`
#
# Every run is one driver process printing one JSON line (bench/README.md has the contract).
# The lines go to bench/out/results.jsonl; runs that failed or that a peer does not support go
# to bench/out/failures.jsonl; each run's stderr to bench/out/logs/. The matrix is interleaved:
# for each repeat, for each recipe and client count, every peer in turn (the order rotates with
# the repeat), so a slow drift of the machine spreads over all peers.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

list() { printf '%s' "$1" | tr ',' ' ' | xargs; }

SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-3}
RECIPES=$(list "${RECIPES:-mutex rwlock semaphore semaphore_mutex counter shared_count double_barrier}")
CLIENTS=$(list "${CLIENTS:-1 4 16}")
PEERS=$(list "${PEERS:-zk-recipes curator kazoo zookeeper-client}")
LEASES=${LEASES:-2}
RAW=${RAW:-1}
DRAIN_WAITERS=$(list "${DRAIN_WAITERS-500 2000}")
DRAIN_PEERS=$(list "${DRAIN_PEERS:-zk-recipes curator}")
DRAIN_CLIENTS=${DRAIN_CLIENTS:-1}
MEMORY_WAITERS=${MEMORY_WAITERS:-10000}
CACHE_NODES=$(list "${CACHE_NODES-10000 100000}")
CACHE_DELAY=${CACHE_DELAY:-1}
CACHE_DELAY_NODES=${CACHE_DELAY_NODES:-1000}
CACHE_RATE=${CACHE_RATE:-1000}
CACHE_PEERS=$(list "${CACHE_PEERS:-zk-recipes curator}")
CACHE_ONLY=${CACHE_ONLY:-0}
if ((CACHE_ONLY)); then
    RAW=0
    RECIPES=""
    DRAIN_WAITERS=""
    MEMORY_WAITERS=0
fi

out="$root/bench/out"
results="$out/results.jsonl"
failures="$out/failures.jsonl"
logs="$out/logs"
target_dir=${CARGO_TARGET_DIR:-$root/target}
zkr=${ZKR:-$target_dir/release/zkr}

say() { printf 'compare: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
has() { [[ " $1 " == *" $2 "* ]]; }

for peer in $PEERS; do
    case $peer in
        zk-recipes | curator | kazoo | zookeeper-client) ;;
        *) die "unknown peer $peer (known: zk-recipes curator kazoo zookeeper-client)" ;;
    esac
done

# shellcheck source=bench/zk.sh
source "$root/bench/zk.sh"
trap zk_stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$out"
[[ -f $results ]] && mv -f "$results" "$results.prev"
rm -rf "$logs" "$failures"
mkdir -p "$logs"
: >"$results"
: >"$failures"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t_start=$(date +%s)

# ---------------------------------------------------------------------------------------------
# Build and prepare every peer before the clock matters

zkr_ok=0
needs_zkr=0
if has "$PEERS" zk-recipes || has "$PEERS" zookeeper-client; then
    needs_zkr=1
fi
if ((needs_zkr)); then
    built=0
    if [[ -n ${ZKR:-} ]]; then
        say "using ZKR=$ZKR"
        [[ -x $ZKR ]] && built=1
    else
        say "building zkr (cargo build --release --bin zkr)"
        cargo build --release --bin zkr >"$logs/cargo-build.log" 2>&1 && built=1
    fi
    if ((built)); then
        if "$zkr" bench --help >/dev/null 2>&1; then
            zkr_ok=1
        else
            say "warning: $zkr has no \`bench\` subcommand yet: zk-recipes and zookeeper-client are skipped"
        fi
    elif [[ -n ${ZKR:-} ]]; then
        say "warning: ZKR=$ZKR is not executable: zk-recipes and zookeeper-client are skipped"
    else
        say "warning: cargo build --release --bin zkr failed (see ${logs#"$root"/}/cargo-build.log):"
        tail -n 5 "$logs/cargo-build.log" | sed 's/^/    /' >&2
        say "zk-recipes and zookeeper-client are skipped"
    fi
    if ((!zkr_ok)); then
        for peer in zk-recipes zookeeper-client; do
            has "$PEERS" $peer || continue
            printf '{"peer":"%s","status":"unavailable","message":"zkr bench could not be built or does not exist yet"}\n' \
                "$peer" >>"$failures"
        done
        # shellcheck disable=SC2086 # a word list
        PEERS=$(printf '%s\n' $PEERS | grep -vx -e zk-recipes -e zookeeper-client | xargs || true)
    fi
fi
[[ -n $PEERS ]] || die "no peer left to run"
DRAIN_PEERS=$(for p in $DRAIN_PEERS; do has "$PEERS" "$p" && printf '%s ' "$p"; done | xargs || true)
CACHE_PEERS=$(for p in $CACHE_PEERS; do has "$PEERS" "$p" && printf '%s ' "$p"; done | xargs || true)

if has "$PEERS" curator; then
    say "compiling the Curator driver"
    bench/peers/curator/run.sh --prepare || die "the Curator driver does not compile"
fi
if has "$PEERS" kazoo; then
    say "preparing the kazoo virtualenv"
    bench/peers/kazoo/run.sh --prepare || die "cannot install kazoo"
fi

zk_start || die "cannot start ZooKeeper"
say "ZooKeeper serves $ZK_CONNECT (pid $ZK_PID)"
zk_srvr >"$out/srvr.txt"

# ---------------------------------------------------------------------------------------------
# Running one driver

peer_cmd() { # peer -> the driver's command words
    case $1 in
        zk-recipes) printf '%s\n' "$zkr" bench ;;
        zookeeper-client) printf '%s\n' "$zkr" bench --peer zookeeper-client ;;
        curator) printf '%s\n' bench/peers/curator/run.sh ;;
        kazoo) printf '%s\n' bench/peers/kazoo/run.sh ;;
    esac
}

declare -A unsupported=()
run_no=0
run_total=0

# run PEER RECIPE CLIENTS REPEAT [extra args...]
run() {
    local peer=$1 recipe=$2 clients=$3 rep=$4
    shift 4
    run_no=$((run_no + 1))
    if [[ -n ${unsupported[$peer/$recipe]:-} ]]; then
        return 0
    fi
    local -a cmd
    mapfile -t cmd < <(peer_cmd "$peer")
    local tag="${peer}-${recipe}-c${clients}${1:+-$(printf '%s' "$*" | tr -c 'A-Za-z0-9\n' '_' | tr -s _)}-r${rep}"
    local log="$logs/$tag.log"
    local limit=$((WARMUP + SECONDS_PER_RUN + 240))
    [[ $recipe == drain || $recipe == waiters-memory || $recipe == cache-load ]] && limit=900
    local stdout rc=0
    stdout=$(timeout --kill-after=15 "$limit" "${cmd[@]}" --connect "$ZK_CONNECT" --recipe "$recipe" \
        --clients "$clients" --seconds "$SECONDS_PER_RUN" --warmup-seconds "$WARMUP" --base /bench \
        --leases "$LEASES" "$@" 2>"$log" </dev/null) || rc=$?
    local progress
    progress=$(printf '[%d/%d] %-16s %-15s c=%-3s r%s' "$run_no" "$run_total" "$peer" "$recipe" "$clients" "$rep")
    if ((rc == 2)); then
        unsupported[$peer/$recipe]=1
        local why
        why=$(tail -n 1 "$log")
        say "$progress: not supported: $why"
        python3 -c 'import json,sys; print(json.dumps({"peer":sys.argv[1],"recipe":sys.argv[2],"status":"unsupported","message":sys.argv[3]}))' \
            "$peer" "$recipe" "$why" >>"$failures"
        return 0
    fi
    local summary=""
    if ((rc == 0)); then
        summary=$(python3 "$root/bench/report.py" --check-line "$peer" "$recipe" "$clients" <<<"$stdout") || rc=$?
    fi
    if ((rc != 0)); then
        say "$progress: FAILED (exit $rc, log ${log#"$root"/})"
        tail -n 3 "$log" | sed 's/^/    /' >&2
        python3 -c 'import json,sys; print(json.dumps({"peer":sys.argv[1],"recipe":sys.argv[2],"clients":int(sys.argv[3]),"repeat":int(sys.argv[4]),"status":"failed","exit":int(sys.argv[5]),"log":sys.argv[6]}))' \
            "$peer" "$recipe" "$clients" "$rep" "$rc" "${log#"$root"/}" >>"$failures"
        return 0
    fi
    printf '%s\n' "$stdout" >>"$results"
    say "$progress: $summary"
}

rotate() { # rotate N words... -> the words rotated left by N
    local n=$1
    shift
    local -a w=("$@")
    local k=${#w[@]} i
    for ((i = 0; i < k; i++)); do
        printf '%s ' "${w[$(((i + n) % k))]}"
    done
}

# ---------------------------------------------------------------------------------------------
# The plan: (peer recipe clients repeat extra...) per line, interleaved

plan=()
# shellcheck disable=SC2086 # word lists
for ((rep = 1; rep <= REPEATS; rep++)); do
    if ((RAW && zkr_ok)); then
        for c in $CLIENTS; do
            plan+=("zk-recipes raw $c $rep")
        done
    fi
    for recipe in $RECIPES; do
        for c in $CLIENTS; do
            for peer in $(rotate $((rep - 1)) $PEERS); do
                if [[ $peer == zookeeper-client && $recipe != mutex ]]; then
                    continue
                fi
                plan+=("$peer $recipe $c $rep")
            done
        done
    done
    if [[ -n $DRAIN_PEERS ]]; then
        for w in $DRAIN_WAITERS; do
            for peer in $(rotate $((rep - 1)) $DRAIN_PEERS); do
                plan+=("$peer drain $DRAIN_CLIENTS $rep --waiters $w")
            done
        done
    fi
    if [[ -n $CACHE_PEERS ]]; then
        for n in $CACHE_NODES; do
            for peer in $(rotate $((rep - 1)) $CACHE_PEERS); do
                plan+=("$peer cache-load 1 $rep --nodes $n")
            done
        done
        if ((CACHE_DELAY)); then
            for peer in $(rotate $((rep - 1)) $CACHE_PEERS); do
                plan+=("$peer cache-delay 1 $rep --nodes $CACHE_DELAY_NODES --rate $CACHE_RATE")
            done
        fi
    fi
done
if ((zkr_ok && MEMORY_WAITERS > 0)); then
    plan+=("zk-recipes waiters-memory 1 1 --waiters $MEMORY_WAITERS")
fi
run_total=${#plan[@]}
# The cache-load trees (<base>/cache-tree-N) are built before the clock matters, once, by an
# untimed load whose result is thrown away (it also warms the server up the same for all peers).
if [[ -n $CACHE_PEERS ]]; then
    first=${CACHE_PEERS%% *}
    for n in $CACHE_NODES; do
        say "building the cache-load tree of $n nodes (untimed, with $first)"
        mapfile -t cmd < <(peer_cmd "$first")
        "${cmd[@]}" --connect "$ZK_CONNECT" --recipe cache-load --clients 1 --seconds 1 --base /bench --nodes "$n" \
            >/dev/null 2>"$logs/cache-tree-$n.log" </dev/null || die "cannot build the tree of $n nodes (see $logs/cache-tree-$n.log)"
    done
fi
say "$run_total runs planned: $((SECONDS_PER_RUN)) s window + ${WARMUP} s warm-up each, $REPEATS repeat(s); peers: $PEERS"

for entry in "${plan[@]}"; do
    # shellcheck disable=SC2086 # split the plan entry into words
    run $entry
done

finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)
elapsed=$(($(date +%s) - t_start))
zk_stop
say "matrix done in ${elapsed} s: $(wc -l <"$results") result lines, $(wc -l <"$failures") failed/unsupported"

# ---------------------------------------------------------------------------------------------
# Chart (drawn in Rust, when the example exists) and report

((CACHE_ONLY)) || bash "$root/bench/chart.sh" "$results" "$root/bench/results.svg" || say "warning: the chart failed (bench/chart.sh)"
cache_only=()
((CACHE_ONLY)) && cache_only=(--cache-only)
python3 "$root/bench/report.py" "${cache_only[@]}" \
    --results "$results" --failures "$failures" --srvr "$out/srvr.txt" --out "$root/bench/RESULTS.md" \
    --started "$started" --finished "$finished" --elapsed "$elapsed" \
    --seconds "$SECONDS_PER_RUN" --warmup "$WARMUP" --repeats "$REPEATS" --leases "$LEASES" \
    --peers "$PEERS" --drain-clients "$DRAIN_CLIENTS"
say "wrote bench/RESULTS.md"
