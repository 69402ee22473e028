#!/bin/bash
# Entrypoint of zk-recipes/zookeeper: writes /conf/zoo.cfg from environment variables, then
# runs the ZooKeeper server in the foreground as PID 1 (so `docker stop` is a clean shutdown and
# `docker kill` a crash). Installed as /usr/local/bin/zk-entrypoint by docker/build-image.sh, in
# both images: zk-recipes/zookeeper:3.8 (Debian 12, OpenJDK 17) and :3.9 (Debian 13, OpenJDK 21).
#
# The variables (names as in the official `zookeeper` image where it has one):
#   ZOO_MY_ID                   this server's id (default 1), written to /data/myid
#   ZOO_SERVERS                 the ensemble, space separated, for example
#                               "server.1=zk1:2888:3888;2181 server.2=zk2:2888:3888;2181";
#                               empty: a standalone server
#   ZOO_CLIENT_PORT             client port (default 2181)
#   ZOO_TICK_TIME               tickTime in ms (default 2000)
#   ZOO_INIT_LIMIT              initLimit in ticks (default 5)
#   ZOO_SYNC_LIMIT              syncLimit in ticks (default 2)
#   ZOO_MIN_SESSION_TIMEOUT     minSessionTimeout in ms (default: ZooKeeper's, 2 ticks)
#   ZOO_MAX_SESSION_TIMEOUT     maxSessionTimeout in ms (default: ZooKeeper's, 20 ticks)
#   ZOO_MAX_CLIENT_CNXNS        maxClientCnxns (default 60)
#   ZOO_STANDALONE_ENABLED      standaloneEnabled (default true)
#   ZOO_ADMINSERVER_ENABLED     admin.enableServer (default false)
#   ZOO_4LW_COMMANDS_WHITELIST  4lw.commands.whitelist (default *)
#   ZOO_AUTOPURGE_PURGEINTERVAL autopurge.purgeInterval in hours (default 0: off)
#   ZOO_AUTOPURGE_SNAPRETAINCOUNT autopurge.snapRetainCount (default 3)
#   ZOO_CFG_EXTRA               more zoo.cfg lines, space separated key=value
#   ZOO_DATA_DIR                dataDir (default /data); ZOO_DATA_LOG_DIR dataLogDir (default: dataDir)
#   ZOO_CONTAINER_CHECK_INTERVAL_MS  how often empty container znodes are reaped
#                               (-Dznode.container.checkIntervalMs; default: ZooKeeper's, 60000)
#   ZOO_LOG_LEVEL               root log level, logs go to stdout (default INFO)
#   ZOO_HEAP_MAX                the JVM's -Xmx (default 512m)
#   JVMFLAGS, SERVER_JVMFLAGS   more JVM options, appended
# quorumListenOnAllIPs is true: a container's address may change when it restarts or is
# reconnected to its network, so peers listen on every interface.
#
# A /conf/zoo.cfg that this script did not write (mounted by the user) is used as it is.
set -euo pipefail

CONF_DIR=/conf
CFG="$CONF_DIR/zoo.cfg"
MARK="# written by zk-entrypoint"
DATA_DIR=${ZOO_DATA_DIR:-/data}

mkdir -p "$CONF_DIR" "$DATA_DIR"
if [[ ! -f $CFG ]] || head -n 1 "$CFG" | grep -qxF "$MARK"; then
    {
        echo "$MARK"
        echo "dataDir=$DATA_DIR"
        [[ -n ${ZOO_DATA_LOG_DIR:-} ]] && echo "dataLogDir=$ZOO_DATA_LOG_DIR"
        echo "clientPort=${ZOO_CLIENT_PORT:-2181}"
        echo "tickTime=${ZOO_TICK_TIME:-2000}"
        echo "initLimit=${ZOO_INIT_LIMIT:-5}"
        echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
        [[ -n ${ZOO_MIN_SESSION_TIMEOUT:-} ]] && echo "minSessionTimeout=$ZOO_MIN_SESSION_TIMEOUT"
        [[ -n ${ZOO_MAX_SESSION_TIMEOUT:-} ]] && echo "maxSessionTimeout=$ZOO_MAX_SESSION_TIMEOUT"
        echo "maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}"
        echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
        echo "admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-false}"
        echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-*}"
        echo "autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}"
        echo "autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}"
        echo "quorumListenOnAllIPs=true"
        for server in ${ZOO_SERVERS:-}; do
            echo "$server"
        done
        for line in ${ZOO_CFG_EXTRA:-}; do
            echo "$line"
        done
    } >"$CFG"
fi
cat >"$CONF_DIR/log4j.properties" <<EOF
log4j.rootLogger=${ZOO_LOG_LEVEL:-INFO}, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [myid:%X{myid}] [%t:%C{1}@%L] - %m%n
EOF
echo "${ZOO_MY_ID:-1}" >"$DATA_DIR/myid"

flags=(-Xms32m "-Xmx${ZOO_HEAP_MAX:-512m}" -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true)
if [[ -n ${ZOO_CONTAINER_CHECK_INTERVAL_MS:-} ]]; then
    flags+=("-Dznode.container.checkIntervalMs=$ZOO_CONTAINER_CHECK_INTERVAL_MS")
fi
# shellcheck disable=SC2206 # word splitting of the user's JVM options is intended
flags+=(${JVMFLAGS:-} ${SERVER_JVMFLAGS:-})
# The same in both images: Debian's ZooKeeper 3.8 and 3.9 jars both log through SLF4J 1.7 and
# log4j 1.2 (Debian's 3.9 does not ship upstream's logback), and zookeeper.jar's manifest lists
# its other dependencies (netty, jute, jetty, ...).
classpath="$CONF_DIR:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar"

run=()
if [[ $(id -u) -eq 0 ]] && getent passwd zookeeper >/dev/null; then
    chown zookeeper:zookeeper "$CONF_DIR" "$CFG" "$CONF_DIR/log4j.properties" "$DATA_DIR" "$DATA_DIR/myid"
    [[ -n ${ZOO_DATA_LOG_DIR:-} ]] && mkdir -p "$ZOO_DATA_LOG_DIR" && chown zookeeper:zookeeper "$ZOO_DATA_LOG_DIR"
    run=(setpriv --reuid=zookeeper --regid=zookeeper --init-groups)
fi
exec "${run[@]}" java "${flags[@]}" -cp "$classpath" org.apache.zookeeper.server.quorum.QuorumPeerMain "$CFG"
