# shellcheck shell=bash
# Sourced by bench/compare.sh: starts and stops the benchmark's ZooKeeper from Debian's jars,
# configured as production runs it (fsync on: ZooKeeper's default), on free 127.0.0.1 ports,
# in a temp dir of its own. Two topologies:
#
#   standalone   one server
#   ensemble     3 servers on loopback (quorum and election ports on 127.0.0.1); the connect
#                string lists the three client ports, the leader's last, so the drivers (which
#                put client i on server i mod 3) put client 0 on a follower and spread the rest
#
# and two storages, where the servers' data directories (snapshots and transaction logs) live:
#
#   disk         under BENCH_DATA_DIR (default: TMPDIR or /tmp), which must be a real disk for
#                fsync to mean anything: it is refused when it is on tmpfs or ramfs
#   tmpfs        under BENCH_TMPFS_DIR (default /dev/shm), which must be tmpfs (checked with
#                `stat -f`): fsync is nearly free, so the servers' and clients' CPU is the limit
#
#   source bench/zk.sh
#   zk_storage_dir disk|tmpfs      # prints the parent dir of that storage, or fails with a message
#   zk_fs_type DIR                 # prints DIR's file system type (df -T), e.g. ext4, tmpfs
#   zk_start standalone|ensemble [disk|tmpfs]
#                                  # sets ZK_PIDS, ZK_PORTS, ZK_CONNECT, ZK_DIR, ZK_LABEL, ZK_LEADER, ZK_FS;
#                                  # returns when every server serves (and the ensemble has a leader)
#   zk_srvr                        # prints each server's `srvr` answer
#   zk_jit_ticks                   # CPU clock ticks the servers' JIT compiler threads have used
#   zk_data_kb                     # KB the servers' data directories hold now
#   zk_stop                        # kills every server by pid, removes the temp dir (idempotent)
#
# BENCH_SYNC=off adds `forceSync=no` (no fsync of the transaction log): a labelled extra,
# never the headline. ZOOKEEPER_JAR (default /usr/share/java/zookeeper.jar) names the server
# jar; its manifest Class-Path brings the rest. Debian's log4j binding is added when present,
# with a WARN-level configuration, so each server's log (ZK_DIR/server-N.log) holds only what
# matters. The report names each setting's file system.

# shellcheck disable=SC2034 # ZK_* are read by the script that sources this one
ZK_PIDS=()
ZK_PORTS=()
ZK_DIR=""
ZK_LABEL=""
ZK_LEADER=""

ZK_FS=""

# `zk_fs_type DIR`: DIR's file system type as df names it (ext4, xfs, tmpfs, ...).
zk_fs_type() {
    df -PT "$1" 2>/dev/null | awk 'NR == 2 { print $2 }'
}

# `zk_storage_dir disk|tmpfs`: the directory the servers' data go under for that storage,
# created if missing; fails with a message when its file system does not fit the storage.
zk_storage_dir() {
    local storage=$1 dir kind
    case $storage in
        disk) dir=${BENCH_DATA_DIR:-${TMPDIR:-/tmp}} ;;
        tmpfs) dir=${BENCH_TMPFS_DIR:-/dev/shm} ;;
        *) echo "zk.sh: unknown storage $storage (disk or tmpfs)" >&2; return 1 ;;
    esac
    mkdir -p "$dir" 2>/dev/null || { echo "zk.sh: cannot create $dir ($storage storage)" >&2; return 1; }
    kind=$(stat -f -c %T "$dir" 2>/dev/null) || { echo "zk.sh: cannot stat -f $dir" >&2; return 1; }
    if [[ $storage == tmpfs && $kind != tmpfs ]]; then
        echo "zk.sh: the tmpfs setting needs BENCH_TMPFS_DIR on tmpfs; $dir is on ${kind:-?} ($(zk_fs_type "$dir")) (mount one, or set BENCH_TMPFS_DIR)" >&2
        return 1
    fi
    if [[ $storage == disk && ($kind == tmpfs || $kind == ramfs) ]]; then
        echo "zk.sh: the disk setting needs BENCH_DATA_DIR on a real disk; $dir is on $kind (set BENCH_DATA_DIR, e.g. to a directory under \$HOME)" >&2
        return 1
    fi
    printf '%s\n' "$dir"
}

# `zk_data_kb`: what the servers' data directories hold now, in KB (tmpfs is memory).
zk_data_kb() {
    [[ -n $ZK_DIR && -d $ZK_DIR ]] || { echo 0; return; }
    du -sk "$ZK_DIR" 2>/dev/null | awk '{ print $1 }'
}

zk_free_ports() { # N -> N distinct free ports, one a line
    python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
    s.close()
PY
}

# `zk_4lw PORT WORD`: sends a four-letter word and prints the answer (empty when nobody answers).
zk_4lw() {
    python3 - "$1" "$2" <<'PY' 2>/dev/null || true
import socket, sys
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as s:
        s.sendall(sys.argv[2].encode())
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    sys.stdout.write(data.decode(errors="replace"))
except OSError:
    pass
PY
}

zk_srvr() {
    local i
    for i in "${!ZK_PORTS[@]}"; do
        ((${#ZK_PORTS[@]} > 1)) && printf '# server %d (127.0.0.1:%s)\n' $((i + 1)) "${ZK_PORTS[$i]}"
        zk_4lw "${ZK_PORTS[$i]}" srvr
    done
}

# `zk_jit_ticks`: the CPU time (clock ticks, user + system) that the servers' JIT compiler threads
# ("C1/C2 CompilerThread") have used so far, summed over ZK_PIDS. A server whose compiler is still
# busy is not warm yet: the benchmark's warm-up goes on until this stops growing.
zk_jit_ticks() {
    python3 - "${ZK_PIDS[@]}" <<'PY'
import glob, sys
total = 0
for pid in sys.argv[1:]:
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if "Compiler" in name:
            total += int(rest[11]) + int(rest[12])  # utime, stime (fields 14 and 15)
print(total)
PY
}

zk_mode() { # PORT -> standalone|leader|follower|"" (not serving)
    zk_4lw "$1" srvr | sed -n 's/^Mode: //p'
}

zk_start() {
    local setting=${1:-standalone} storage=${2:-disk}
    local jar=${ZOOKEEPER_JAR:-/usr/share/java/zookeeper.jar}
    [[ -f $jar ]] || { echo "zk.sh: $jar is missing (apt-get install zookeeper, or run scripts/setup.sh)" >&2; return 1; }
    local n
    case $setting in
        standalone) n=1 ;;
        ensemble) n=3 ;;
        *) echo "zk.sh: unknown setting $setting (standalone or ensemble)" >&2; return 1 ;;
    esac
    local sync=${BENCH_SYNC:-on}
    case $sync in on | off) ;; *) echo "zk.sh: BENCH_SYNC must be on or off, not $sync" >&2; return 1 ;; esac
    local parent
    parent=$(zk_storage_dir "$storage") || return 1
    ZK_DIR=$(mktemp -d "$parent/zk-recipes-bench-XXXXXX")
    mkdir -p "$ZK_DIR/conf"
    local ports
    mapfile -t ports < <(zk_free_ports $((3 * n)))
    ZK_PORTS=("${ports[@]:0:n}")
    local servers="" i
    if ((n > 1)); then
        for ((i = 0; i < n; i++)); do
            servers+="server.$((i + 1))=127.0.0.1:${ports[$((n + 2 * i))]}:${ports[$((n + 2 * i + 1))]}"$'\n'
        done
    fi
    cat >"$ZK_DIR/conf/log4j.properties" <<'LOG'
log4j.rootLogger=WARN, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
LOG
    local cp="$ZK_DIR/conf:$jar" j
    for j in /usr/share/java/slf4j-log4j12.jar /usr/share/java/log4j-1.2.jar; do
        [[ -f $j ]] && cp+=":$j"
    done
    local java=java
    [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]] && java=$JAVA_HOME/bin/java
    ZK_PIDS=()
    for ((i = 0; i < n; i++)); do
        local id=$((i + 1))
        mkdir -p "$ZK_DIR/data-$id"
        ((n > 1)) && echo "$id" >"$ZK_DIR/data-$id/myid"
        # maxClientCnxns=0: drain and memory runs open many waiters and the matrix up to 17
        # sessions per driver from one address; keep the per-address limit out of the way.
        {
            printf '%s\n' "tickTime=2000" "initLimit=10" "syncLimit=5" "dataDir=$ZK_DIR/data-$id" \
                "clientPort=${ZK_PORTS[$i]}" "clientPortAddress=127.0.0.1" "admin.enableServer=false" \
                "4lw.commands.whitelist=*" "maxClientCnxns=0"
            [[ $sync == off ]] && echo "forceSync=no"
            printf '%s' "$servers"
        } >"$ZK_DIR/conf/zoo-$id.cfg"
        "$java" -cp "$cp" -Dzookeeper.admin.enableServer=false \
            org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZK_DIR/conf/zoo-$id.cfg" \
            >"$ZK_DIR/server-$id.log" 2>&1 </dev/null &
        ZK_PIDS+=($!)
    done
    local fs
    fs=$(zk_fs_type "$ZK_DIR")
    if ((n > 1)); then
        ZK_LABEL="3-node ensemble, fsync $sync"
    else
        ZK_LABEL="standalone, fsync $sync"
    fi
    [[ $sync == off ]] && ZK_LABEL+=": forceSync=no"
    if [[ $storage == tmpfs ]]; then
        ZK_LABEL+=", tmpfs (CPU-bound)"
    else
        ZK_LABEL+=", disk"
    fi
    ZK_FS=${fs:-?}
    for _ in $(seq 1 600); do
        local modes=() leader=-1 ok=1
        for ((i = 0; i < n; i++)); do
            modes[i]=$(zk_mode "${ZK_PORTS[$i]}")
            [[ -n ${modes[i]} ]] || ok=0
            [[ ${modes[i]} == leader ]] && leader=$i
        done
        if ((ok)) && { ((n == 1)) || ((leader >= 0)); }; then
            # the leader last: client 0 (and the 1-client floors) on a follower
            local order=() k
            for ((k = 0; k < n; k++)); do ((k != leader)) && order+=("127.0.0.1:${ZK_PORTS[$k]}"); done
            ((leader >= 0)) && order+=("127.0.0.1:${ZK_PORTS[$leader]}")
            ZK_CONNECT=$(IFS=,; printf '%s' "${order[*]}")
            ZK_LEADER=""
            ((leader >= 0)) && ZK_LEADER="server $((leader + 1)) (127.0.0.1:${ZK_PORTS[$leader]})"
            export ZK_CONNECT
            return 0
        fi
        for ((i = 0; i < n; i++)); do
            if ! kill -0 "${ZK_PIDS[$i]}" 2>/dev/null; then
                echo "zk.sh: server $((i + 1)) exited; its log:" >&2
                cat "$ZK_DIR/server-$((i + 1)).log" >&2
                return 1
            fi
        done
        sleep 0.1
    done
    echo "zk.sh: the $setting did not serve within 60 s" >&2
    return 1
}

zk_stop() {
    local pid
    for pid in "${ZK_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${ZK_PIDS[@]}"; do
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    ZK_PIDS=()
    if [[ -n $ZK_DIR && -d $ZK_DIR ]]; then
        rm -rf "$ZK_DIR"
    fi
    ZK_DIR=""
}
