#!/usr/bin/env bash
# Benchmarks zk-recipes side by side with Apache Curator, kazoo and zookeeper-client's own lock
# on ZooKeeper configured as production runs it (fsync on), in up to four settings run one
# after the other: a standalone server and a 3-node ensemble on loopback (bench/zk.sh), each
# with its data on a real disk (fsync costs what a disk costs) and on tmpfs (fsync nearly free:
# CPU-bound). Each setting's servers are killed by pid when it is done, on failure or interrupt
# too. Writes bench/RESULTS.md (a section per setting) and bench/results.svg (the first setting).
#
#   bash bench/compare.sh                                   # the default matrix, all four settings
#   bash bench/compare.sh --setting ensemble                # one topology, both storages (repeatable)
#   bash bench/compare.sh --setting standalone-tmpfs        # one topology on one storage
#   STORAGE=disk bash bench/compare.sh                      # the disk settings only
#   SETTINGS=standalone RECIPES=mutex,counter CLIENTS=16 SECONDS_PER_RUN=2 REPEATS=1 bash bench/compare.sh
#   PLAN_ONLY=1 bash bench/compare.sh                       # the plan, its size and its estimated time
#
# Knobs (lists take commas or spaces):
#   SETTINGS         topologies standalone ensemble, each run on every STORAGE; or explicit
#                    settings standalone-disk standalone-tmpfs ensemble-disk ensemble-tmpfs
#                    (or --setting S, repeatable)  (default: standalone ensemble)
#   STORAGE          disk tmpfs: where the servers' data and logs live  (default: both)
#   BENCH_SYNC       on: fsync on (ZooKeeper's default, the headline); off: forceSync=no, a
#                    labelled extra ("fsync off") that is never the headline  (default on)
#   BENCH_DATA_DIR   the disk settings' data directories (a real disk; refused on tmpfs)
#                    (default TMPDIR or /tmp)
#   BENCH_TMPFS_DIR  the tmpfs settings' data directories (checked to be tmpfs)  (default /dev/shm)
#   SECONDS_PER_RUN  measured window of one run, seconds            (default 2)
#   WARMUP           warm-up before the window, seconds             (default 1)
#   SERVER_WARMUP    seconds of untimed load after each disk setting's servers start, in four
#                    equal parts (zkr: raw at 1 client, mutex at 16, counter at 16, raw at 1
#                    client x 64 tasks), so that the first repeat does not meet a cold server
#                    JVM; 0: none  (default 32)
#   SERVER_WARMUP_MAX  then more parts of 12 s (mutex, counter at 16 and raw x 64 tasks in turn)
#                    while the servers' JIT compilers used at least JIT_QUIET % of one core in the
#                    part before, up to this many seconds of warm-up in all  (default 96)
#   SERVER_WARMUP_TMPFS, SERVER_WARMUP_MAX_TMPFS  the same for the tmpfs settings, whose servers
#                    run several times the writes per second  (defaults 24, 72)
#   JIT_QUIET        that threshold, % of one core  (default 3)
#   REPEATS          repeats of each setting's matrix, interleaved; medians with (min–max)  (default 3)
#   RECIPES          mutex rwlock semaphore semaphore_mutex counter shared_count double_barrier
#                    shedlock entity, or all
#                    (default "mutex rwlock semaphore counter shared_count entity")
#   SHEDLOCK_REPLICAS  the shedlock recipe's replicas (sessions), in place of CLIENTS (default 64);
#                    its peers are zk-recipes and curator (a ShedLock-shaped lock on Curator)
#   ENSEMBLE_RECIPES the ensemble's recipes (default: RECIPES when it is set, else "mutex counter entity")
#   CLIENTS          client counts of the standalone recipes               (default "1 16")
#   <RECIPE>_CLIENTS one recipe's client counts in the standalone settings, e.g. MUTEX_CLIENTS,
#                    SEMAPHORE_CLIENTS  (defaults: RWLOCK_CLIENTS, SEMAPHORE_CLIENTS and SHARED_COUNT_CLIENTS 16,
#                    the others CLIENTS; when CLIENTS is set, every recipe's default is CLIENTS)
#   ENSEMBLE_CLIENTS the ensemble's client counts (default: CLIENTS when it is set, else 16)
#   PEERS            zk-recipes curator kazoo zookeeper-client (zookeeper-client: mutex, entity
#                    and floors)
#   KAZOO_RECIPES    the recipes kazoo runs, among the setting's  (default "mutex counter entity")
#   LEASES           semaphore leases                               (default 2)
#   FLOORS           1: the serial-write floors, 1 client: `raw` (create+delete pairs) and
#                    `raw_set` (versioned setData of one node), and with the entity rows the
#                    pipelined limit `raw` 1 client x T tasks and the per-entity ceiling
#                    `raw_entity` 1 x T (the entity's requests, no lock)  (default 1)
#   FLOOR_PEERS      peers measuring the floors, among PEERS   (default "zk-recipes curator zookeeper-client")
#   ENSEMBLE_FLOOR_PEERS  the same on the ensemble             (default FLOOR_PEERS when set, else zk-recipes)
#   RAW_CLIENTS      more client counts of zk-recipes' `raw` (create+delete), e.g. "4 16"  (default none)
#   COUNTER_TASKS    T: a counter row with T tasks on one framework (one session); 0: none  (default 0;
#                    64 was issue 32's row)
#   TASK_PEERS       peers of that row, among PEERS                  (default "zk-recipes curator")
#   ENTITY_TASKS     the T of the per-entity mutex rows (1 client x T tasks), each beside the
#                    pipelined limit `raw` 1 x T and the ceiling `raw_entity` 1 x T; empty: no
#                    entity rows  (default "64 256")
#   ENTITY_PATHS     entities (locks and stock nodes) of those rows  (default 1000)
#   ENTITY_PEERS     peers of those rows, among PEERS   (default "zk-recipes curator kazoo zookeeper-client")
#   EXTRAS_SETTINGS  topologies that also run drain, memory, holders and cache runs (in every
#                    storage)  (default standalone)
#   DRAIN_WAITERS    waiters of the drain runs; empty: no drain     (default 2000)
#   DRAIN_PEERS      peers of the drain runs, among PEERS           (default "zk-recipes curator")
#   DRAIN_CLIENTS    sessions the drain's waiters are spread over   (default 1)
#   DRAIN_REPEATS    the drain runs in the first this many repeats   (default 1)
#   MEMORY_WAITERS   waiters of the memory run (once per setting); 0: none  (default 10000)
#   HOLDERS          locks held at once by the holders runs; 0: none  (default 100000)
#   HOLDERS_PEERS    peers of the holders runs, among PEERS         (default "zk-recipes curator")
#   HOLDERS_REPEATS  holders runs per peer and setting, after the repeats of the matrix  (default 1)
#   HOLDERS_TASKS    acquires in flight in the holders runs (--tasks; the same for every peer);
#                    empty: the drivers' own defaults  (default 64)
#   CACHE_NODES      tree sizes of the cache-load runs; empty: none   (default: none; with
#                    CACHE_ONLY=1 "10000 100000"). A report without cache runs keeps the cache
#                    section of the bench/RESULTS.md it replaces.
#   CACHE_DELAY      1: the cache-delay run                          (default: 0; with CACHE_ONLY=1, 1)
#   CACHE_DELAY_NODES, CACHE_RATE  its tree size and writes/s         (default 1000, 1000)
#   CACHE_PEERS      peers of the cache runs, among PEERS           (default "zk-recipes curator")
#   CACHE_ONLY       1: only the cache runs (the standalone disk setting unless SETTINGS/STORAGE
#                    say otherwise), and only the cache section of bench/RESULTS.md is replaced
#   ZKR              a zkr binary to use instead of building one with
#                    `cargo build --release --bin zkr`
#   PLAN_ONLY        1: print each setting's plan (one run a line), its size and the estimated
#                    time, run nothing
#   REPORT_OUT       where the report goes (default bench/RESULTS.md; the chart, results.svg,
#                    goes beside it): smoke runs can leave the committed report alone
#   CHART            0: no chart (bench/chart.sh builds a cargo example)  (default 1)
#
# Every run is one driver process printing one JSON line (bench/README.md has the contract);
# compare.sh adds "setting", "repeat" and "wall_s" (the run's wall-clock time, process start
# to exit) to it. The lines go to bench/out/results.jsonl; runs that failed or that a peer does
# not support go to bench/out/failures.jsonl; each run's stderr to bench/out/logs/; each
# setting's servers and times to bench/out/settings.jsonl. The matrix is interleaved: for each
# repeat, for each recipe and client count, every peer in turn (the order rotates with the
# repeat), so a slow drift of the machine spreads over all peers.
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
        *) echo "compare: unknown argument $1 (--setting standalone|ensemble[-disk|-tmpfs]; knobs are environment variables)" >&2
            exit 64 ;;
    esac
done

ALL_RECIPES="mutex rwlock semaphore semaphore_mutex counter shared_count double_barrier shedlock entity"
SETTINGS=$(list "${cli_settings:-${SETTINGS:-standalone ensemble}}")
CACHE_ONLY=${CACHE_ONLY:-0}
storage_given=${STORAGE:-}
((CACHE_ONLY)) && [[ -z $storage_given ]] && STORAGE=disk # the cache section is one setting's
STORAGE=$(list "${STORAGE:-disk tmpfs}")
BENCH_SYNC=${BENCH_SYNC:-on}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-2}
WARMUP=${WARMUP:-1}
SERVER_WARMUP=${SERVER_WARMUP:-32}
SERVER_WARMUP_MAX=${SERVER_WARMUP_MAX:-96}
SERVER_WARMUP_TMPFS=${SERVER_WARMUP_TMPFS:-24}
SERVER_WARMUP_MAX_TMPFS=${SERVER_WARMUP_MAX_TMPFS:-72}
JIT_QUIET=${JIT_QUIET:-3}
REPEATS=${REPEATS:-3}
recipes_given=${RECIPES:-}
RECIPES=$(list "${RECIPES:-mutex rwlock semaphore counter shared_count entity}")
[[ $RECIPES == all ]] && RECIPES=$ALL_RECIPES
if [[ -n ${ENSEMBLE_RECIPES:-} ]]; then
    ENSEMBLE_RECIPES=$(list "$ENSEMBLE_RECIPES")
elif [[ -n $recipes_given ]]; then
    ENSEMBLE_RECIPES=$RECIPES
else
    ENSEMBLE_RECIPES="mutex counter entity"
fi
[[ $ENSEMBLE_RECIPES == all ]] && ENSEMBLE_RECIPES=$ALL_RECIPES
clients_given=${CLIENTS:-}
CLIENTS=$(list "${CLIENTS:-1 16}")
ENSEMBLE_CLIENTS=$(list "${ENSEMBLE_CLIENTS:-${clients_given:-16}}")
PEERS=$(list "${PEERS:-zk-recipes curator kazoo zookeeper-client}")
KAZOO_RECIPES=$(list "${KAZOO_RECIPES-mutex counter entity}")
[[ $KAZOO_RECIPES == all ]] && KAZOO_RECIPES=$ALL_RECIPES
SHEDLOCK_REPLICAS=${SHEDLOCK_REPLICAS:-64}
LEASES=${LEASES:-2}
FLOORS=${FLOORS:-1}
floor_peers_given=${FLOOR_PEERS:-}
FLOOR_PEERS=$(list "${FLOOR_PEERS:-zk-recipes curator zookeeper-client}")
ENSEMBLE_FLOOR_PEERS=$(list "${ENSEMBLE_FLOOR_PEERS:-${floor_peers_given:-zk-recipes}}")
RAW_CLIENTS=$(list "${RAW_CLIENTS:-}")
COUNTER_TASKS=${COUNTER_TASKS:-0}
TASK_PEERS=$(list "${TASK_PEERS:-zk-recipes curator}")
ENTITY_TASKS=$(list "${ENTITY_TASKS-64 256}")
ENTITY_PATHS=${ENTITY_PATHS:-1000}
ENTITY_PEERS=$(list "${ENTITY_PEERS:-zk-recipes curator kazoo zookeeper-client}")
EXTRAS_SETTINGS=$(list "${EXTRAS_SETTINGS:-standalone}")
DRAIN_WAITERS=$(list "${DRAIN_WAITERS-2000}")
DRAIN_PEERS=$(list "${DRAIN_PEERS:-zk-recipes curator}")
DRAIN_CLIENTS=${DRAIN_CLIENTS:-1}
DRAIN_REPEATS=${DRAIN_REPEATS:-1}
MEMORY_WAITERS=${MEMORY_WAITERS:-10000}
HOLDERS=${HOLDERS:-100000}
HOLDERS_PEERS=$(list "${HOLDERS_PEERS:-zk-recipes curator}")
HOLDERS_REPEATS=${HOLDERS_REPEATS:-1}
HOLDERS_TASKS=${HOLDERS_TASKS-64}
PLAN_ONLY=${PLAN_ONLY:-0}
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

# One recipe's client counts in a topology (the standalone settings: <RECIPE>_CLIENTS, else
# the defaults below unless CLIENTS was given, else CLIENTS).
declare -A default_recipe_clients=([rwlock]=16 [semaphore]=16 [shared_count]=16)
recipe_clients() { # topology recipe
    if [[ $1 == ensemble ]]; then
        printf '%s\n' "$ENSEMBLE_CLIENTS"
        return
    fi
    local var
    var="$(printf '%s' "$2" | tr '[:lower:]' '[:upper:]')_CLIENTS"
    if [[ -n ${!var:-} ]]; then
        list "${!var}"
    elif [[ -z $clients_given && -n ${default_recipe_clients[$2]:-} ]]; then
        printf '%s\n' "${default_recipe_clients[$2]}"
    else
        printf '%s\n' "$CLIENTS"
    fi
}

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
for st in $STORAGE; do
    case $st in disk | tmpfs) ;; *) die "unknown storage $st (disk or tmpfs)" ;; esac
done
# The settings to run, as topology:storage, in order: a topology alone runs on every STORAGE.
specs=()
for s in $SETTINGS; do
    case $s in
        standalone | ensemble) for st in $STORAGE; do specs+=("$s:$st"); done ;;
        standalone-disk | standalone-tmpfs | ensemble-disk | ensemble-tmpfs) specs+=("${s%-*}:${s##*-}") ;;
        *) die "unknown setting $s (standalone or ensemble, optionally with -disk or -tmpfs)" ;;
    esac
done
# shellcheck disable=SC2207 # one word per spec
specs=($(printf '%s\n' "${specs[@]}" | awk '!seen[$0]++'))
if ((CACHE_ONLY)); then
    RECIPES=""
    ENSEMBLE_RECIPES=""
    FLOORS=0
    RAW_CLIENTS=""
    COUNTER_TASKS=0
    DRAIN_WAITERS=""
    MEMORY_WAITERS=0
    HOLDERS=0
    kept=()
    for spec in "${specs[@]}"; do has "$EXTRAS_SETTINGS" "${spec%%:*}" && kept+=("$spec"); done
    specs=("${kept[@]}")
fi
((${#specs[@]})) || die "no setting to run"
for r in $RECIPES $ENSEMBLE_RECIPES; do
    has "$ALL_RECIPES" "$r" || die "unknown recipe $r (known: $ALL_RECIPES)"
done
case $BENCH_SYNC in on | off) ;; *) die "BENCH_SYNC must be on or off" ;; esac

setting_key() { # topology storage -> the key of the setting in results.jsonl (disk: the topology alone)
    local key=$1
    [[ $2 == tmpfs ]] && key+="-tmpfs"
    [[ $BENCH_SYNC == off ]] && key+="-nosync"
    printf '%s\n' "$key"
}

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

# Each storage's directory is checked before anything runs: the disk must not be tmpfs, the
# tmpfs must be tmpfs (bench/zk.sh says why and exits 1 otherwise).
declare -A storage_dir=() storage_fs=()
for spec in "${specs[@]}"; do
    st=${spec#*:}
    [[ -n ${storage_dir[$st]:-} ]] && continue
    storage_dir[$st]=$(zk_storage_dir "$st") || die "the $st storage is not usable (see above)"
    storage_fs[$st]=$(zk_fs_type "${storage_dir[$st]}")
    if [[ $st == tmpfs ]]; then
        free_mb=$(df -Pm "${storage_dir[$st]}" | awk 'NR == 2 { print $4 }')
        # tmpfs is memory, and the servers' logs and snapshots only grow (ZooKeeper purges nothing):
        # hundreds of MB per setting, three copies on the ensemble
        ((free_mb >= 4096)) || say "warning: ${storage_dir[$st]} has ${free_mb} MB free; a tmpfs setting's logs may need a few GB"
    fi
done

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
ENSEMBLE_FLOOR_PEERS=$(among "$ENSEMBLE_FLOOR_PEERS" "$PEERS")
TASK_PEERS=$(among "$TASK_PEERS" "$PEERS")
ENTITY_PEERS=$(among "$ENTITY_PEERS" "$PEERS")
HOLDERS_PEERS=$(among "$HOLDERS_PEERS" "$PEERS")

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

# which recipes a peer's driver runs at all, or is planned to run (the rest are not planned)
peer_has() { # peer recipe
    case $1 in
        zookeeper-client) [[ $2 == mutex || $2 == entity || $2 == raw || $2 == raw_set ]] ;;
        kazoo) [[ $2 == raw || $2 == raw_set ]] || has "$KAZOO_RECIPES" "$2" ;;
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
    local limit=$((${WARMUP%.*} + ${SECONDS_PER_RUN%.*} + 240))
    case $recipe in drain | waiters-memory | cache-load | holders) limit=900 ;; esac
    local rc=0 t0
    t0=$(date +%s%N)
    timeout --kill-after=15 "$limit" "${cmd[@]}" --connect "$ZK_CONNECT" --recipe "$recipe" \
        --clients "$clients" --seconds "$SECONDS_PER_RUN" --warmup-seconds "$WARMUP" --base /bench \
        --leases "$LEASES" "$@" >"$stdout_file" 2>"$log" </dev/null &
    driver_pid=$!
    wait "$driver_pid" || rc=$?
    driver_pid=""
    local wall_ms=$((($(date +%s%N) - t0) / 1000000))
    local stdout
    stdout=$(cat "$stdout_file")
    local progress
    progress=$(printf '[%d/%d] %-16s %-16s %-15s c=%-3s%s r%s' "$run_no" "$run_total" "$setting" "$peer" "$recipe" \
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
        python3 -c 'import json,sys; print(json.dumps({"setting":sys.argv[7],"peer":sys.argv[1],"recipe":sys.argv[2],"clients":int(sys.argv[3]),"repeat":int(sys.argv[4]),"status":"failed","exit":int(sys.argv[5]),"log":sys.argv[6],"args":sys.argv[8]}))' \
            "$peer" "$recipe" "$clients" "$rep" "$rc" "${log#"$root"/}" "$setting" "$*" >>"$failures"
        return 0
    fi
    printf '{"setting":%s,"repeat":%d,"wall_s":%d.%03d,%s\n' "$(json_str "$setting")" "$rep" \
        $((wall_ms / 1000)) $((wall_ms % 1000)) "${stdout#\{}" >>"$results"
    say "$progress: $summary  ($((wall_ms / 1000)).$((wall_ms % 1000 / 100)) s)"
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

plan_setting() { # topology -> fills plan[]
    local s=$1 extras=0 rep recipe c peer w n t recipes=$RECIPES floor_peers=$FLOOR_PEERS
    has "$EXTRAS_SETTINGS" "$s" && extras=1
    if [[ $s == ensemble ]]; then
        recipes=$ENSEMBLE_RECIPES
        floor_peers=$ENSEMBLE_FLOOR_PEERS
    fi
    plan=()
    # shellcheck disable=SC2086 # word lists
    for ((rep = 1; rep <= REPEATS; rep++)); do
        if ((FLOORS)); then
            for recipe in raw raw_set; do
                for peer in $(rotate $((rep - 1)) $floor_peers); do
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
            if [[ $recipe == entity ]]; then
                # per T: the entity peers and (with the floors) zk-recipes' pipelined limit, raw
                # 1 x T, and the per-entity ceiling, raw_entity 1 x T (the entity's requests
                # without a lock), in one rotating turn, so both are measured beside the rows
                # they scale
                for t in $ENTITY_TASKS; do
                    local turn=$ENTITY_PEERS
                    ((FLOORS)) && has "$PEERS" zk-recipes && turn="limit ceiling $turn"
                    for peer in $(rotate $((rep - 1)) $turn); do
                        if [[ $peer == limit ]]; then
                            plan+=("zk-recipes raw 1 $rep --tasks $t")
                        elif [[ $peer == ceiling ]]; then
                            plan+=("zk-recipes raw_entity 1 $rep --tasks $t")
                        elif peer_has "$peer" entity; then
                            plan+=("$peer entity 1 $rep --tasks $t --paths $ENTITY_PATHS")
                        fi
                    done
                done
                continue
            fi
            for c in $(recipe_clients "$s" "$recipe"); do
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
        if [[ -n $DRAIN_PEERS ]] && ((rep <= DRAIN_REPEATS)); then
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
    ((extras)) || return 0
    # Once per setting, after the matrix (their thousands of nodes and sessions' state do not
    # disturb the timed rows): the memory run, then the holders.
    if ((zkr_ok && MEMORY_WAITERS > 0)) && has "$PEERS" zk-recipes; then
        plan+=("zk-recipes waiters-memory 1 1 --waiters $MEMORY_WAITERS")
    fi
    if ((HOLDERS > 0)) && [[ -n $HOLDERS_PEERS ]]; then
        for ((rep = 1; rep <= HOLDERS_REPEATS; rep++)); do
            # shellcheck disable=SC2086 # a word list
            for peer in $(rotate $((rep - 1)) $HOLDERS_PEERS); do
                plan+=("$peer holders 1 $rep --holders $HOLDERS${HOLDERS_TASKS:+ --tasks $HOLDERS_TASKS}")
            done
        done
    fi
}

# The estimated time of the plans: each run's warm-up, window and process costs as measured on
# a 2-core machine shared with other work (bench/README.md, "Duration"), each setting's servers'
# start and warm-up. The low end is an idle machine and the warm-up minimum, the high end a busy
# one and the warm-up maximum.
estimate() { # reads "TOPOLOGY:STORAGE<TAB>plan entry" lines; prints a line per setting and one in all
    python3 -c '
import sys
from collections import defaultdict
W, D = float(sys.argv[1]), float(sys.argv[2])
warm = {"disk": (int(sys.argv[3]), int(sys.argv[4])), "tmpfs": (int(sys.argv[5]), int(sys.argv[6]))}
sync_off = sys.argv[7] == "off"
# seconds beyond warm-up + window: process start, connects, the driver cleanup, session closes
BASE = {"zk-recipes": 0.05, "zookeeper-client": 0.05, "curator": 0.9, "kazoo": 0.5}
PER_CLIENT = {"zk-recipes": 0.008, "zookeeper-client": 0.008, "curator": 0.15, "kazoo": 0.12}
ENTITY = {"zk-recipes": 0.25, "zookeeper-client": 0.3, "curator": 0.9, "kazoo": 1.3}  # stock nodes made, checked
def opt(words, name, default):
    return int(words[words.index(name) + 1]) if name in words else default
def cost(peer, recipe, clients, words, disk):
    ours = peer in ("zk-recipes", "zookeeper-client")
    if recipe == "drain":  # queueing W waiters (untimed) and the drain
        return (0.5 + opt(words, "--waiters", 500) * 0.0007) if ours else (2 + opt(words, "--waiters", 500) * 0.011)
    if recipe == "waiters-memory":
        return 0.5 + opt(words, "--waiters", 500) * 0.00013
    if recipe == "holders":  # N acquires (T in flight) and N releases
        n, t = opt(words, "--holders", 100000), opt(words, "--tasks", 1)
        per = (0.0008 if disk else 0.0005) if ours else 0.00105
        return 1 + n * per * (8 if t == 1 else 1)
    if recipe == "cache-load":
        n = opt(words, "--nodes", 10000)
        return 1 + (n * 0.00001 if ours else 2 + n * 0.0004)
    if recipe == "cache-delay":
        return W + D + 2 + opt(words, "--nodes", 1000) * 0.001
    extra = ENTITY.get(peer, 1) if recipe == "entity" else 0.0
    if peer == "kazoo" and recipe == "counter" and clients > 4:
        extra += 3  # the Counter retry back-off outlives the window
    slow = 1.4 if disk and not ours else 1.0
    return W + D + (BASE[peer] + PER_CLIENT[peer] * clients) * slow + extra
runs, secs, kinds = defaultdict(int), defaultdict(float), defaultdict(lambda: defaultdict(float))
order = []
for line in sys.stdin:
    spec, entry = line.rstrip("\n").split("\t")
    words = entry.split()
    if spec not in runs:
        order.append(spec)
    c = cost(words[0], words[1], int(words[2]), words[4:], spec.endswith(":disk") and not sync_off)
    runs[spec] += 1
    secs[spec] += c
    kind = {"raw": "floors" if "--tasks" not in words else "limit", "raw_set": "floors",
            "raw_entity": "limit"}.get(words[1], words[1])
    kinds[spec][kind] += c
lo = hi = 0.0
for spec in order:
    topo, storage = spec.split(":")
    start = 8 if topo == "ensemble" else 3
    wmin, wmax = warm[storage]
    a = secs[spec] * 0.85 + start + wmin
    b = secs[spec] * 1.1 + start + max(wmin, wmax if topo == "ensemble" else (wmin + wmax) / 2)
    lo, hi = lo + a, hi + b
    top = sorted(kinds[spec].items(), key=lambda kv: -kv[1])
    print(f"{topo}, {storage}: {runs[spec]} runs, about {a / 60:.0f}-{b / 60:.0f} min ("
          + ", ".join(f"{k} {v / 60:.1f}" for k, v in top) + " min of runs; warm-up "
          + f"{wmin}-{wmax} s)")
print(f"in all: {sum(runs.values())} runs, about {lo / 60:.0f}-{hi / 60:.0f} min")
' "$WARMUP" "$SECONDS_PER_RUN" $((CACHE_ONLY ? 0 : SERVER_WARMUP)) $((CACHE_ONLY ? 0 : SERVER_WARMUP_MAX)) \
        $((CACHE_ONLY ? 0 : SERVER_WARMUP_TMPFS)) $((CACHE_ONLY ? 0 : SERVER_WARMUP_MAX_TMPFS)) "$BENCH_SYNC"
}

total_planned=0
est_input=""
for spec in "${specs[@]}"; do
    plan_setting "${spec%%:*}"
    total_planned=$((total_planned + ${#plan[@]}))
    for entry in "${plan[@]}"; do est_input+="$spec"$'\t'"$entry"$'\n'; done
done
spec_names=$(for spec in "${specs[@]}"; do setting_key "${spec%%:*}" "${spec#*:}"; done | xargs)
say "settings: $spec_names (fsync $BENCH_SYNC; disk: ${storage_dir[disk]:-–} on ${storage_fs[disk]:-–}, tmpfs: ${storage_dir[tmpfs]:-–} on ${storage_fs[tmpfs]:-–}); $total_planned runs planned: ${SECONDS_PER_RUN} s window + ${WARMUP} s warm-up each, $REPEATS repeat(s); peers: $PEERS"
estimate <<<"${est_input%$'\n'}" | sed 's/^/compare: estimate: /' >&2
if ((PLAN_ONLY)); then
    for spec in "${specs[@]}"; do
        plan_setting "${spec%%:*}"
        printf '%s: %d runs\n' "$(setting_key "${spec%%:*}" "${spec#*:}")" "${#plan[@]}"
        printf '  %s\n' "${plan[@]}"
    done
    estimate <<<"${est_input%$'\n'}" | sed 's/^/estimate: /'
    exit 0
fi

# ---------------------------------------------------------------------------------------------
# Each setting: its servers, its plan, its servers stopped

run_total=$total_planned
for spec in "${specs[@]}"; do
    s=${spec%%:*} st=${spec#*:}
    setting=$(setting_key "$s" "$st")
    plan_setting "$s"
    s_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    s_t0=$(date +%s)
    zk_start "$s" "$st" || die "cannot start ZooKeeper ($s, $st)"
    say "$ZK_LABEL: $ZK_CONNECT (pids ${ZK_PIDS[*]}${ZK_LEADER:+, leader $ZK_LEADER}; data in $ZK_DIR, on $ZK_FS)"
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
    warmed=0 jit=""
    w_min=$SERVER_WARMUP w_max=$SERVER_WARMUP_MAX
    [[ $st == tmpfs ]] && w_min=$SERVER_WARMUP_TMPFS w_max=$SERVER_WARMUP_MAX_TMPFS
    if ((w_min > 0)) && ! ((CACHE_ONLY)); then
        say "warming the server up for ${w_min} s (untimed), then while its JIT compilers work"
        # Measured on the ensemble here: with 8 s of warm-up the first repeat's mutex at 16
        # clients ran at 0.7 x the later repeats' (and the floor at 0.7 x); the servers reach
        # their steady rate after about 40 s of such load. A fixed time is not enough on a slow
        # or busy host: on 2026-11-25 the three servers' JIT compiler threads still used 15 % of
        # a core after 48 s (70-90 % before), and about 5 % until 120 s, taking CPU from the
        # first repeat. So the warm-up goes on, 12 s at a time, until they are quiet. On tmpfs
        # the servers run several times the writes per second, so the same code is hot sooner.
        # The fourth load, 64 create+delete pairs in flight on one session, is the shape of the
        # entity rows and their limit.
        w_loads=("raw 1" "mutex 16" "counter 16" "raw 1 --tasks 64")
        w_more=12 # seconds of each part after the first four
        w_part=0 w_secs=$(((w_min + 3) / 4))
        while :; do
            # the four loads, then the last three in turn
            read -r w_recipe w_clients w_args <<<"${w_loads[$((w_part < 4 ? w_part : 1 + (w_part - 4) % 3))]}"
            w_part=$((w_part + 1))
            jit0=$(zk_jit_ticks) w_t0=$(date +%s%N)
            # shellcheck disable=SC2086 # w_args: more words
            timeout --kill-after=15 $((w_secs + 120)) "$zkr" bench --connect "$ZK_CONNECT" --recipe "$w_recipe" \
                --clients "$w_clients" --seconds "$w_secs" --warmup-seconds 0 --base /bench-warmup $w_args \
                >/dev/null 2>"$logs/$setting-server-warmup-$w_part-$w_recipe.log" </dev/null &
            driver_pid=$!
            wait "$driver_pid" || die "the server warm-up failed (see $logs/$setting-server-warmup-$w_part-$w_recipe.log)"
            driver_pid=""
            w_ms=$((($(date +%s%N) - w_t0) / 1000000))
            warmed=$((warmed + (w_ms + 500) / 1000))
            # the compilers' share of one core over this part, in %
            jit=$((($(zk_jit_ticks) - jit0) * 1000 * 100 / ($(getconf CLK_TCK) * (w_ms > 0 ? w_ms : 1))))
            ((w_part < 4)) && continue
            ((jit < JIT_QUIET || warmed + w_more > w_max)) && break
            ((w_part == 4)) && say "the servers' JIT compilers used ${jit} % of a core over the last ${w_secs} s: warming on"
            w_secs=$w_more
        done
        say "warm-up: ${warmed} s in ${w_part} part(s); the JIT compilers used ${jit} % of a core in the last part"
    fi
    for entry in "${plan[@]}"; do
        # shellcheck disable=SC2086 # split the plan entry into words
        run $entry
    done
    data_mb=$((($(zk_data_kb) + 512) / 1024))
    zk_stop
    s_elapsed=$(($(date +%s) - s_t0))
    python3 -c 'import json,sys; print(json.dumps(dict(zip(
        ["key","setting","storage","label","connect","leader","fs","dir","started","finished","elapsed","runs","server_warmup","data_mb","jit_last"],
        sys.argv[1:11] + [int(v) if v else None for v in sys.argv[11:16]]))))' \
        "$setting" "$s" "$st" "$ZK_LABEL" "$ZK_CONNECT" "$ZK_LEADER" "$ZK_FS" "${storage_dir[$st]}" "$s_started" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$s_elapsed" "${#plan[@]}" "$warmed" "$data_mb" "$jit" >>"$settings_file"
    say "$ZK_LABEL done in ${s_elapsed} s (the servers' data had grown to ${data_mb} MB)"
done

finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)
elapsed=$(($(date +%s) - t_start))
say "all done in ${elapsed} s: $(wc -l <"$results") result lines, $(wc -l <"$failures") failed/unsupported"

# ---------------------------------------------------------------------------------------------
# Chart (the first setting) and report

report_out=${REPORT_OUT:-$root/bench/RESULTS.md}
headline=$(head -n 1 "$settings_file" | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
if ((!CACHE_ONLY && ${CHART:-1})); then
    bash "$root/bench/chart.sh" "$results" "$(dirname "$report_out")/results.svg" "$headline" ||
        say "warning: the chart failed (bench/chart.sh)"
fi
cache_only=()
((CACHE_ONLY)) && cache_only=(--cache-only)
python3 "$root/bench/report.py" "${cache_only[@]}" \
    --results "$results" --failures "$failures" --settings "$settings_file" --out "$report_out" \
    --started "$started" --finished "$finished" --elapsed "$elapsed" \
    --seconds "$SECONDS_PER_RUN" --warmup "$WARMUP" \
    --server-warmup "$SERVER_WARMUP" --server-warmup-max "$SERVER_WARMUP_MAX" \
    --server-warmup-tmpfs "$SERVER_WARMUP_TMPFS" --server-warmup-max-tmpfs "$SERVER_WARMUP_MAX_TMPFS" \
    --jit-quiet "$JIT_QUIET" --repeats "$REPEATS" --leases "$LEASES" \
    --peers "$PEERS" --drain-clients "$DRAIN_CLIENTS"
say "wrote ${report_out#"$root"/}"
