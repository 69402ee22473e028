# shellcheck shell=bash
# Sourced by bench/compare.sh: starts and stops one standalone ZooKeeper server from Debian's
# jars on a free 127.0.0.1 port, in a temp dir of its own.
#
#   source bench/zk.sh
#   zk_start            # sets ZK_PID, ZK_PORT, ZK_CONNECT, ZK_DIR; returns when it serves
#   zk_srvr             # prints the `srvr` four-letter word's answer
#   zk_stop             # kills the server by pid and removes its temp dir (idempotent)
#
# ZOOKEEPER_JAR (default /usr/share/java/zookeeper.jar) names the server jar; its manifest
# Class-Path brings the rest. Debian's log4j binding is added when present, with a WARN-level
# configuration, so the server's log (ZK_DIR/server.log) holds only what matters.

ZK_PID=""
ZK_DIR=""

zk_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# `zk_4lw WORD`: sends a four-letter word and prints the answer (empty when nobody answers).
zk_4lw() {
    python3 - "$ZK_PORT" "$1" <<'PY' 2>/dev/null || true
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

zk_srvr() { zk_4lw srvr; }

zk_start() {
    local jar=${ZOOKEEPER_JAR:-/usr/share/java/zookeeper.jar}
    [[ -f $jar ]] || { echo "zk.sh: $jar is missing (apt-get install zookeeper, or run scripts/setup.sh)" >&2; return 1; }
    ZK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/zk-recipes-bench-XXXXXX")
    mkdir -p "$ZK_DIR/conf" "$ZK_DIR/data"
    ZK_PORT=$(zk_free_port)
    ZK_CONNECT="127.0.0.1:$ZK_PORT"
    export ZK_CONNECT
    cat >"$ZK_DIR/conf/zoo.cfg" <<CFG
tickTime=2000
dataDir=$ZK_DIR/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
forceSync=no
# drain and memory runs open many waiters; the default of 60 connections per address is
# enough for the matrix (at most 17 sessions per driver), but keep it out of the way.
maxClientCnxns=0
CFG
    cat >"$ZK_DIR/conf/log4j.properties" <<'LOG'
log4j.rootLogger=WARN, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
LOG
    local cp="$ZK_DIR/conf:$jar"
    local j
    for j in /usr/share/java/slf4j-log4j12.jar /usr/share/java/log4j-1.2.jar; do
        [[ -f $j ]] && cp+=":$j"
    done
    local java=java
    [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]] && java=$JAVA_HOME/bin/java
    "$java" -cp "$cp" -Dzookeeper.admin.enableServer=false \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZK_DIR/conf/zoo.cfg" \
        >"$ZK_DIR/server.log" 2>&1 </dev/null &
    ZK_PID=$!
    for _ in $(seq 1 300); do
        if zk_srvr | grep -q '^Mode:'; then
            return 0
        fi
        if ! kill -0 "$ZK_PID" 2>/dev/null; then
            echo "zk.sh: the server exited; its log:" >&2
            cat "$ZK_DIR/server.log" >&2
            ZK_PID=""
            return 1
        fi
        sleep 0.1
    done
    echo "zk.sh: the server did not answer srvr within 30 s" >&2
    return 1
}

zk_stop() {
    if [[ -n $ZK_PID ]]; then
        kill "$ZK_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$ZK_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$ZK_PID" 2>/dev/null || true
        wait "$ZK_PID" 2>/dev/null || true
        ZK_PID=""
    fi
    if [[ -n $ZK_DIR && -d $ZK_DIR ]]; then
        rm -rf "$ZK_DIR"
    fi
    ZK_DIR=""
}
