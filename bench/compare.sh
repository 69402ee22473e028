#!/usr/bin/env bash
# Benchmarks zk-recipes side by side with Apache Curator, kazoo and zookeeper-client's own lock
# on ZooKeeper configured as production runs it (fsync on), in two settings run one after the
# other: a standalone server, then a 3-node ensemble on loopback (bench/zk.sh; each killed by
# pid when its setting is done, on failure or interrupt too). Writes bench/RESULTS.md (a
# section per setting) and bench/results.svg (the first setting).
#
#   bash bench/compare.sh                                   # the default matrix, both settings
#   bash bench/compare.sh --setting ensemble                # one setting (repeatable)
#   SETTINGS=standalone RECIPES=mutex,counter CLIENTS=16 SECONDS_PER_RUN=2 REPEATS=1 bash bench/compare.sh
#
# Knobs (lists take commas or spaces):
#   SETTINGS         standalone ensemble (or --setting S, repeatable)  (default: both)
#   BENCH_SYNC       on: fsync on (ZooKeeper's default, the headline); off: forceSync=no, a
#                    labelled extra ("fsync off") that is never the headline  (default on)
#   BENCH_DATA_DIR   where the servers' data directories go (a real disk)  (default TMPDIR or /tmp)
#   SECONDS_PER_RUN  measured window of one run, seconds            (default 3)
#   WARMUP           warm-up before the window, seconds             (default 1)
#   SERVER_WARMUP    seconds of untimed load after each setting's servers start, in four equal
#                    parts (zkr: raw at 1 client, mutex at 16, counter at 16, mutex at 16), so
#                    that the first repeat does not meet a cold server JVM; 0: none  (default 48)
#   SERVER_WARMUP_MAX  then more parts of 12 s (counter, mutex at 16 in turn) while the servers' JIT
#                    compilers used at least JIT_QUIET % of one core in the part before, up to this
#                    many seconds of warm-up in all  (default 240; SERVER_WARMUP or less: no more)
#   JIT_QUIET        that threshold, % of one core  (default 2)
#   REPEATS          repeats of each setting's matrix, interleaved; medians with (min–max)  (default 3)
#   RECIPES          mutex rwlock semaphore semaphore_mutex counter shared_count double_barrier
#                    shedlock, or all   (default "mutex rwlock semaphore counter shared_count")
#   SHEDLOCK_REPLICAS  the shedlock recipe's replicas (sessions), in place of CLIENTS (default 64);
#                    its peers are zk-recipes and curator (a ShedLock-shaped lock on Curator)
#   ENSEMBLE_RECIPES the ensemble's recipes (default: RECIPES when it is set, else "mutex counter")
#   CLIENTS          1 4 16
#   ENSEMBLE_CLIENTS the ensemble's client counts (default: CLIENTS when it is set, else "1 16")
#   PEERS            zk-recipes curator kazoo zookeeper-client (zookeeper-client: mutex and floors)
#   LEASES           semaphore leases                               (default 2)
#   FLOORS           1: the serial-write floors, 1 client: `raw` (create+delete pairs) and
#                    `raw_set` (versioned setData of one node)     (default 1)
#   FLOOR_PEERS      peers measuring the floors, among PEERS   (default "zk-recipes curator zookeeper-client")
#   RAW_CLIENTS      more client counts of zk-recipes' `raw` (create+delete), e.g. "4 16"  (default none)
#   COUNTER_TASKS    T: a counter row with T tasks on one framework (one session); 0: none  (default 64)
#   TASK_PEERS       peers of that row, among PEERS                  (default "zk-recipes curator")
#   EXTRAS_SETTINGS  settings that also run drain, memory and cache runs  (default standalone)
#   DRAIN_WAITERS    waiters of the drain runs; empty: no drain     (default "500 2000")
#   DRAIN_PEERS      peers of the drain runs, among PEERS           (default "zk-recipes curator")
#   DRAIN_CLIENTS    sessions the drain's waiters are spread over   (default 1)
#   MEMORY_WAITERS   waiters of the memory run; 0: none             (default 10000)
#   CACHE_NODES      tree sizes of the cache-load runs; empty: none   (default: none; with
#                    CACHE_ONLY=1 "10000 100000"). A report without cache runs keeps the cache
#                    section of the bench/RESULTS.md it replaces.
#   CACHE_DELAY      1: the cache-delay run                          (default: 0; with CACHE_ONLY=1, 1)
#   CACHE_DELAY_NODES, CACHE_RATE  its tree size and writes/s         (default 1000, 1000)
#   CACHE_PEERS      peers of the cache runs, among PEERS           (default "zk-recipes curator")
#   CACHE_ONLY       1: only the cache runs (in EXTRAS_SETTINGS), and only the cache section of
#                    bench/RESULTS.md is replaced
#   ZKR              a zkr binary to use instead of building one with
#                    `cargo build --release --bin zkr`
#   PLAN_ONLY        1: print each setting's plan (one run a line) and its size, run nothing
#
# Every run is one driver process printing one JSON line (bench/README.md has the contract);
# compare.sh adds "setting" and "repeat" to it. The lines go to bench/out/results.jsonl; runs
# that failed or that a peer does not support go to bench/out/failures.jsonl; each run's stderr
# to bench/out/logs/; each setting's servers and times to bench/out/settings.jsonl. The matrix
# is interleaved: for each repeat, for each recipe and client count, every peer in turn (the
# order rotates with the repeat), so a slow drift of the machine spreads over all peers.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

list() { printf '%s' "$1" | tr ',' ' ' | xargs; }

cli_settings=""
while (($#)); do
    case $1 in
        --setting) [[ $# -ge 2 ]] || { echo "compare: --setting needs a value" >&2; exit 64; }
            cli_settings+=" $2"; shift 2 ;;
        --setting=*) cli_settings+=" ${1#--setting=}"; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare: unknown argument $1 (--setting standalone|ensemble; knobs are environment variables)" >&2
            exit 64 ;;
    esac
done

ALL_RECIPES="mutex rwlock semaphore semaphore_mutex counter shared_count double_barrier shedlock"
SETTINGS=$(list "${cli_settings:-${SETTINGS:-standalone ensemble}}")
BENCH_SYNC=${BENCH_SYNC:-on}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}
WARMUP=${WARMUP:-1}
SERVER_WARMUP=${SERVER_WARMUP:-48}
SERVER_WARMUP_MAX=${SERVER_WARMUP_MAX:-240}
JIT_QUIET=${JIT_QUIET:-2}
REPEATS=${REPEATS:-3}
recipes_given=${RECIPES:-}
RECIPES=$(list "${RECIPES:-mutex rwlock semaphore counter shared_count}")
[[ $RECIPES == all ]] && RECIPES=$ALL_RECIPES
if [[ -n ${ENSEMBLE_RECIPES:-} ]]; then
    ENSEMBLE_RECIPES=$(list "$ENSEMBLE_RECIPES")
elif [[ -n $recipes_given ]]; then
    ENSEMBLE_RECIPES=$RECIPES
else
    ENSEMBLE_RECIPES="mutex counter"
fi
[[ $ENSEMBLE_RECIPES == all ]] && ENSEMBLE_RECIPES=$ALL_RECIPES
clients_given=${CLIENTS:-}
CLIENTS=$(list "${CLIENTS:-1 4 16}")
ENSEMBLE_CLIENTS=$(list "${ENSEMBLE_CLIENTS:-${clients_given:-1 16}}")
PEERS=$(list "${PEERS:-zk-recipes curator kazoo zookeeper-client}")
SHEDLOCK_REPLICAS=${SHEDLOCK_REPLICAS:-64}
LEASES=${LEASES:-2}
FLOORS=${FLOORS:-1}
FLOOR_PEERS=$(list "${FLOOR_PEERS:-zk-recipes curator zookeeper-client}")
RAW_CLIENTS=$(list "${RAW_CLIENTS:-}")
COUNTER_TASKS=${COUNTER_TASKS:-64}
TASK_PEERS=$(list "${TASK_PEERS:-zk-recipes curator}")
EXTRAS_SETTINGS=$(list "${EXTRAS_SETTINGS:-standalone}")
DRAIN_WAITERS=$(list "${DRAIN_WAITERS-500 2000}")
DRAIN_PEERS=$(list "${DRAIN_PEERS:-zk-recipes curator}")
DRAIN_CLIENTS=${DRAIN_CLIENTS:-1}
MEMORY_WAITERS=${MEMORY_WAITERS:-10000}
PLAN_ONLY=${PLAN_ONLY:-0}
CACHE_ONLY=${CACHE_ONLY:-0}
if ((CACHE_ONLY)); then
    CACHE_NODES=$(list "${CACHE_NODES-10000 100000}")
    CACHE_DELAY=${CACHE_DELAY:-1}
else
    CACHE_NODES=$(list "${CACHE_NODES-}")
    CACHE_DELAY=${CACHE_DELAY:-0}
fi
CACHE_DELAY_NODES=${CACHE_DELAY_NODES:-1000}
CACHE_RATE=${CACHE_RATE:-1000}
CACHE_PEERS=$(list "${CACHE_PEERS:-zk-recipes curator}")
if ((CACHE_ONLY)); then
    FLOORS=0
    RAW_CLIENTS=""
    COUNTER_TASKS=0
    RECIPES=""
    ENSEMBLE_RECIPES=""
    DRAIN_WAITERS=""
    MEMORY_WAITERS=0
    # shellcheck disable=SC2086 # word lists
    SETTINGS=$(for s in $SETTINGS; do [[ " $EXTRAS_SETTINGS " == *" $s "* ]] && printf '%s ' "$s"; done | xargs || true)
fi

out="$root/bench/out"
results="$out/results.jsonl"
failures="$out/failures.jsonl"
settings_file="$out/settings.jsonl"
logs="$out/logs"
target_dir=${CARGO_TARGET_DIR:-$root/target}
zkr=${ZKR:-$target_dir/release/zkr}

say() { printf 'compare: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
has() { [[ " $1 " == *" $2 "* ]]; }
among() { # among LIST ALLOWED -> the words of LIST that are in ALLOWED
    local w
    for w in $1; do has "$2" "$w" && printf '%s ' "$w"; done | xargs || true
}

for peer in $PEERS; do
    case $peer in
        zk-recipes | curator | kazoo | zookeeper-client) ;;
        *) die "unknown peer $peer (known: zk-recipes curator kazoo zookeeper-client)" ;;
    esac
done
for s in $SETTINGS; do
    case $s in standalone | ensemble) ;; *) die "unknown setting $s (standalone or ensemble)" ;; esac
done
[[ -n $SETTINGS ]] || die "no setting to run"
for r in $RECIPES $ENSEMBLE_RECIPES; do
    has "$ALL_RECIPES" "$r" || die "unknown recipe $r (known: $ALL_RECIPES)"
done
case $BENCH_SYNC in on | off) ;; *) die "BENCH_SYNC must be on or off" ;; esac

# ---------------------------------------------------------------------------------------------
# Cleanup: the driver running (by pid; timeout passes the signal on to it) and the servers

driver_pid=""
stop_all() {
    if [[ -n $driver_pid ]]; then
        kill "$driver_pid" 2>/dev/null || true
        wait "$driver_pid" 2>/dev/null || true
        driver_pid=""
    fi
    zk_stop
}
# shellcheck source=bench/zk.sh
source "$root/bench/zk.sh"
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ((!PLAN_ONLY)); then
    mkdir -p "$out"
    [[ -f $results ]] && mv -f "$results" "$results.prev"
    rm -rf "$logs" "$failures" "$out"/srvr-*.txt
    mkdir -p "$logs"
    : >"$results"
    : >"$failures"
    : >"$settings_file"
fi
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t_start=$(date +%s)

# ---------------------------------------------------------------------------------------------
# Build and prepare every peer before the clock matters

zkr_ok=0
if ((PLAN_ONLY)); then
    zkr_ok=1
elif has "$PEERS" zk-recipes || has "$PEERS" zookeeper-client; then
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
            say "warning: $zkr has no \`bench\` subcommand: zk-recipes and zookeeper-client are skipped"
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
            printf '{"peer":"%s","status":"unavailable","message":"zkr bench could not be built"}\n' \
                "$peer" >>"$failures"
        done
        # shellcheck disable=SC2086 # a word list
        PEERS=$(printf '%s\n' $PEERS | grep -vx -e zk-recipes -e zookeeper-client | xargs || true)
    fi
fi
[[ -n $PEERS ]] || die "no peer left to run"
DRAIN_PEERS=$(among "$DRAIN_PEERS" "$PEERS")
CACHE_PEERS=$(among "$CACHE_PEERS" "$PEERS")
FLOOR_PEERS=$(among "$FLOOR_PEERS" "$PEERS")
TASK_PEERS=$(among "$TASK_PEERS" "$PEERS")

if ((!PLAN_ONLY)) && has "$PEERS" curator; then
    say "compiling the Curator driver"
    bench/peers/curator/run.sh --prepare || die "the Curator driver does not compile"
fi
if ((!PLAN_ONLY)) && has "$PEERS" kazoo; then
    say "preparing the kazoo virtualenv"
    bench/peers/kazoo/run.sh --prepare || die "cannot install kazoo"
fi

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

# which recipes a peer's driver runs at all (the rest are not planned)
peer_has() { # peer recipe
    case $1 in
        zookeeper-client) [[ $2 == mutex || $2 == raw || $2 == raw_set ]] ;;
        kazoo) [[ $2 != shedlock ]] ;;
        *) true ;;
    esac
}

declare -A unsupported=()
run_no=0
run_total=0
setting=""

json_str() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

# run PEER RECIPE CLIENTS REPEAT [extra args...]
run() {
    local peer=$1 recipe=$2 clients=$3 rep=$4
    shift 4
    run_no=$((run_no + 1))
    local ukey="$peer/$recipe${1:+/$1}" # --tasks runs apart: a peer may lack only those
    if [[ -n ${unsupported[$ukey]:-} ]]; then
        return 0
    fi
    local -a cmd
    mapfile -t cmd < <(peer_cmd "$peer")
    local tag="${setting}-${peer}-${recipe}-c${clients}${1:+-$(printf '%s' "$*" | tr -c 'A-Za-z0-9\n' '_' | tr -s _)}-r${rep}"
    local log="$logs/$tag.log" stdout_file="$out/run.stdout"
    local limit=$((WARMUP + SECONDS_PER_RUN + 240))
    [[ $recipe == drain || $recipe == waiters-memory || $recipe == cache-load ]] && limit=900
    local rc=0
    timeout --kill-after=15 "$limit" "${cmd[@]}" --connect "$ZK_CONNECT" --recipe "$recipe" \
        --clients "$clients" --seconds "$SECONDS_PER_RUN" --warmup-seconds "$WARMUP" --base /bench \
        --leases "$LEASES" "$@" >"$stdout_file" 2>"$log" </dev/null &
    driver_pid=$!
    wait "$driver_pid" || rc=$?
    driver_pid=""
    local stdout
    stdout=$(cat "$stdout_file")
    local progress
    progress=$(printf '[%d/%d] %-10s %-16s %-15s c=%-3s%s r%s' "$run_no" "$run_total" "$setting" "$peer" "$recipe" \
        "$clients" "${1:+ $*}" "$rep")
    if ((rc == 2)); then
        unsupported[$ukey]=1
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
        python3 -c 'import json,sys; print(json.dumps({"setting":sys.argv[7],"peer":sys.argv[1],"recipe":sys.argv[2],"clients":int(sys.argv[3]),"repeat":int(sys.argv[4]),"status":"failed","exit":int(sys.argv[5]),"log":sys.argv[6]}))' \
            "$peer" "$recipe" "$clients" "$rep" "$rc" "${log#"$root"/}" "$setting" >>"$failures"
        return 0
    fi
    printf '{"setting":%s,"repeat":%d,%s\n' "$(json_str "$setting")" "$rep" "${stdout#\{}" >>"$results"
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
# The plan of one setting: (peer recipe clients repeat extra...) per line, interleaved

plan_setting() { # setting -> fills plan[]
    local s=$1 extras=0 rep recipe c peer w n recipes=$RECIPES clients=$CLIENTS
    has "$EXTRAS_SETTINGS" "$s" && extras=1
    if [[ $s == ensemble ]]; then
        recipes=$ENSEMBLE_RECIPES
        clients=$ENSEMBLE_CLIENTS
    fi
    plan=()
    # shellcheck disable=SC2086 # word lists
    for ((rep = 1; rep <= REPEATS; rep++)); do
        if ((FLOORS)); then
            for recipe in raw raw_set; do
                for peer in $(rotate $((rep - 1)) $FLOOR_PEERS); do
                    peer_has "$peer" "$recipe" && plan+=("$peer $recipe 1 $rep")
                done
            done
        fi
        if has "$PEERS" zk-recipes; then
            for c in $RAW_CLIENTS; do
                [[ $c == 1 && $FLOORS == 1 ]] || plan+=("zk-recipes raw $c $rep")
            done
        fi
        for recipe in $recipes; do
            if [[ $recipe == shedlock ]]; then # one point: the ticks of one job under R replicas
                for peer in $(rotate $((rep - 1)) $PEERS); do
                    peer_has "$peer" shedlock && plan+=("$peer shedlock $SHEDLOCK_REPLICAS $rep")
                done
                continue
            fi
            for c in $clients; do
                for peer in $(rotate $((rep - 1)) $PEERS); do
                    peer_has "$peer" "$recipe" && plan+=("$peer $recipe $c $rep")
                done
            done
            if [[ $recipe == counter ]] && ((COUNTER_TASKS > 1)); then
                for peer in $(rotate $((rep - 1)) $TASK_PEERS); do
                    plan+=("$peer counter 1 $rep --tasks $COUNTER_TASKS")
                done
            fi
        done
        ((extras)) || continue
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
    if ((extras && zkr_ok && MEMORY_WAITERS > 0)) && has "$PEERS" zk-recipes; then
        plan+=("zk-recipes waiters-memory 1 1 --waiters $MEMORY_WAITERS")
    fi
}

total_planned=0
for s in $SETTINGS; do
    plan_setting "$s"
    total_planned=$((total_planned + ${#plan[@]}))
done
say "settings: $SETTINGS (fsync $BENCH_SYNC); $total_planned runs planned: ${SECONDS_PER_RUN} s window + ${WARMUP} s warm-up each, $REPEATS repeat(s); peers: $PEERS"
if ((PLAN_ONLY)); then
    for s in $SETTINGS; do
        plan_setting "$s"
        printf '%s: %d runs\n' "$s" "${#plan[@]}"
        printf '  %s\n' "${plan[@]}"
    done
    exit 0
fi

# ---------------------------------------------------------------------------------------------
# Each setting: its servers, its plan, its servers stopped

run_total=$total_planned
for s in $SETTINGS; do
    setting=$s
    [[ $BENCH_SYNC == off ]] && setting="$s-nosync"
    plan_setting "$s"
    s_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    s_t0=$(date +%s)
    zk_start "$s" || die "cannot start ZooKeeper ($s)"
    say "$ZK_LABEL: $ZK_CONNECT (pids ${ZK_PIDS[*]}${ZK_LEADER:+, leader $ZK_LEADER}; data on $ZK_FS)"
    zk_srvr >"$out/srvr-$setting.txt"
    # The cache-load trees (<base>/cache-tree-N) are built before the clock matters, once per
    # setting, by an untimed load whose result is thrown away.
    if has "$EXTRAS_SETTINGS" "$s" && [[ -n $CACHE_PEERS ]]; then
        first=${CACHE_PEERS%% *}
        for n in $CACHE_NODES; do
            say "building the cache-load tree of $n nodes (untimed, with $first)"
            mapfile -t cmd < <(peer_cmd "$first")
            "${cmd[@]}" --connect "$ZK_CONNECT" --recipe cache-load --clients 1 --seconds 1 --base /bench --nodes "$n" \
                >/dev/null 2>"$logs/$setting-cache-tree-$n.log" </dev/null &
            driver_pid=$!
            wait "$driver_pid" || die "cannot build the tree of $n nodes (see $logs/$setting-cache-tree-$n.log)"
            driver_pid=""
        done
    fi
    # A production server has long left its JVM's interpreter behind: untimed writes first, so
    # that the first repeat measures a warm server like the others (results thrown away).
    warmed=0
    if ((SERVER_WARMUP > 0)) && ! ((CACHE_ONLY)); then
        say "warming the server up for ${SERVER_WARMUP} s (untimed), then while its JIT compilers work"
        # Measured on the ensemble here: with 8 s of warm-up the first repeat's mutex at 16
        # clients ran at 0.7 x the later repeats' (and the floor at 0.7 x); the servers reach
        # their steady rate after about 40 s of such load. A fixed time is not enough on a slow
        # or busy host: on 2026-11-25 the three servers' JIT compiler threads still used 15 % of
        # a core after 48 s (70-90 % before), and about 5 % until 120 s, taking CPU from the
        # first repeat. So the warm-up goes on, 12 s at a time, until they are quiet.
        w_loads=("raw 1" "mutex 16" "counter 16" "mutex 16")
        w_more=12 # seconds of each part after the first four
        w_part=0 w_secs=$(((SERVER_WARMUP + 3) / 4)) jit=""
        while :; do
            # the four loads, then the two heavier ones in turn
            read -r w_recipe w_clients <<<"${w_loads[$((w_part < 4 ? w_part : 2 - w_part % 2))]}"
            w_part=$((w_part + 1))
            jit0=$(zk_jit_ticks) w_t0=$(date +%s%N)
            timeout --kill-after=15 $((w_secs + 120)) "$zkr" bench --connect "$ZK_CONNECT" --recipe "$w_recipe" \
                --clients "$w_clients" --seconds "$w_secs" --warmup-seconds 0 --base /bench-warmup \
                >/dev/null 2>"$logs/$setting-server-warmup-$w_part-$w_recipe.log" </dev/null &
            driver_pid=$!
            wait "$driver_pid" || die "the server warm-up failed (see $logs/$setting-server-warmup-$w_part-$w_recipe.log)"
            driver_pid=""
            w_ms=$((($(date +%s%N) - w_t0) / 1000000))
            warmed=$((warmed + (w_ms + 500) / 1000))
            # the compilers' share of one core over this part, in %
            jit=$((($(zk_jit_ticks) - jit0) * 1000 * 100 / ($(getconf CLK_TCK) * (w_ms > 0 ? w_ms : 1))))
            ((w_part < 4)) && continue
            ((jit < JIT_QUIET || warmed + w_more > SERVER_WARMUP_MAX)) && break
            ((w_part == 4)) && say "the servers' JIT compilers used ${jit} % of a core over the last ${w_secs} s: warming on"
            w_secs=$w_more
        done
        say "warm-up: ${warmed} s in ${w_part} part(s); the JIT compilers used ${jit} % of a core in the last part"
    fi
    for entry in "${plan[@]}"; do
        # shellcheck disable=SC2086 # split the plan entry into words
        run $entry
    done
    zk_stop
    s_elapsed=$(($(date +%s) - s_t0))
    python3 -c 'import json,sys; print(json.dumps(dict(zip(
        ["key","setting","label","connect","leader","fs","started","finished","elapsed","runs","server_warmup"],
        sys.argv[1:9] + [int(v) for v in sys.argv[9:12]]))))' \
        "$setting" "$s" "$ZK_LABEL" "$ZK_CONNECT" "$ZK_LEADER" "$ZK_FS" "$s_started" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$s_elapsed" "${#plan[@]}" "$warmed" >>"$settings_file"
    say "$ZK_LABEL done in ${s_elapsed} s"
done

finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)
elapsed=$(($(date +%s) - t_start))
say "all done in ${elapsed} s: $(wc -l <"$results") result lines, $(wc -l <"$failures") failed/unsupported"

# ---------------------------------------------------------------------------------------------
# Chart (the first setting) and report

headline=$(head -n 1 "$settings_file" | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
((CACHE_ONLY)) || bash "$root/bench/chart.sh" "$results" "$root/bench/results.svg" "$headline" ||
    say "warning: the chart failed (bench/chart.sh)"
cache_only=()
((CACHE_ONLY)) && cache_only=(--cache-only)
python3 "$root/bench/report.py" "${cache_only[@]}" \
    --results "$results" --failures "$failures" --settings "$settings_file" --out "$root/bench/RESULTS.md" \
    --started "$started" --finished "$finished" --elapsed "$elapsed" \
    --seconds "$SECONDS_PER_RUN" --warmup "$WARMUP" --server-warmup "$SERVER_WARMUP" --server-warmup-max "$SERVER_WARMUP_MAX" --jit-quiet "$JIT_QUIET" --repeats "$REPEATS" --leases "$LEASES" \
    --peers "$PEERS" --drain-clients "$DRAIN_CLIENTS"
say "wrote bench/RESULTS.md"
