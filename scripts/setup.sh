#!/usr/bin/env bash
# Installs what zk-recipes' tests need on Debian 12 (or a similar apt-based system):
#   - zookeeper                  the server jars (/usr/share/java/zookeeper.jar); NOT zookeeperd,
#                                which would run a system service on port 2181
#   - default-jdk-headless       java to run them, javac for the Curator peer the tests compile
#   - libcurator-framework-java  Curator 5.4 jars, for interop tests against Curator's recipes
#   - libcurator-recipes-java
#   - libnetty-java              the Netty jars ZooKeeper's TLS connection factory needs (netty-codec,
#                                netty-resolver; `zookeeper` pulls it in, named here for clarity)
#   - libkrb5-dev, libclang-dev, pkg-config
#                                to build the library's `sasl-gssapi` feature (GSSAPI headers,
#                                bindgen), which `cargo test --workspace --all-features` compiles
#   - cmake, golang-go           to build the library's `fips` feature (aws-lc-fips-sys builds the
#                                FIPS-validated AWS-LC module with them), which `--all-features` compiles
#   - libcurator-discovery-java  curator-x-discovery 5.4 (and its Jackson jars), for the service
#                                discovery interop tests
#   - postgresql                 initdb and postgres (/usr/lib/postgresql/<major>/bin), for the
#                                fencing crate's tests: the testing kit runs a throwaway cluster
#                                on a loopback port (TestingPostgres). No system cluster is made:
#                                /etc/postgresql-common/createcluster.conf says so before install
#
# `setup.sh --demo` installs only what the demo (scripts/demo.sh) needs: ZooKeeper and a JRE
# (and postgresql for DEMO_POSTGRES=1).
#
# Idempotent: runs `apt-get update` and `apt-get install` only for packages that are missing,
# and prints what it did. Run as root, or as a user with sudo.
# Exits non-zero with a message when something cannot be installed.
set -euo pipefail

PACKAGES=(zookeeper default-jdk-headless libcurator-framework-java libcurator-recipes-java libcurator-discovery-java
    libnetty-java libkrb5-dev libclang-dev pkg-config cmake golang-go postgresql)
# The files the testing kit and the interop tests use, per package above.
REQUIRED_FILES=(
    /usr/share/java/zookeeper.jar
    /usr/share/java/curator-framework.jar
    /usr/share/java/curator-recipes.jar
    /usr/share/java/netty-codec.jar
    /usr/share/java/netty-resolver.jar
    /usr/share/java/curator-x-discovery.jar
    /usr/share/java/jackson-databind.jar
)
# Debian's postgresql-common makes and starts a `main` cluster on port 5432 when a server
# package is installed, unless this file says not to: the tests start their own.
CREATECLUSTER_CONF=/etc/postgresql-common/createcluster.conf
if [[ ${1:-} == --demo ]]; then
    PACKAGES=(zookeeper default-jre-headless)
    REQUIRED_FILES=(/usr/share/java/zookeeper.jar)
    # the demo's optional PostgreSQL row (DEMO_POSTGRES=1) on a throwaway server of the kit
    if [[ ${DEMO_POSTGRES:-} == 1 && -z ${DEMO_POSTGRES_URL:-} ]]; then
        PACKAGES+=(postgresql)
    fi
elif [[ $# -gt 0 ]]; then
    printf 'setup: error: unknown argument %s (usage: setup.sh [--demo])\n' "$1" >&2
    exit 2
fi
SYSTEM_ZOO_CFG=/etc/zookeeper/conf/zoo.cfg

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

if [[ $(id -u) -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    die "run as root (or install sudo): apt-get needs root"
fi

command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script supports Debian/Ubuntu only"

installed() {
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true) == installed ]]
}

missing=()
for pkg in "${PACKAGES[@]}"; do
    if installed "$pkg"; then
        say "$pkg: already installed"
    else
        missing+=("$pkg")
    fi
done

if ((${#missing[@]} > 0)); then
    if [[ " ${missing[*]} " == *" postgresql "* ]] && ! grep -qs '^create_main_cluster *= *false' "$CREATECLUSTER_CONF"; then
        "${SUDO[@]}" mkdir -p "$(dirname "$CREATECLUSTER_CONF")"
        printf '# zk-recipes setup: no system cluster (the tests start their own)\ncreate_main_cluster = false\n' |
            "${SUDO[@]}" tee -a "$CREATECLUSTER_CONF" >/dev/null
    fi
    say "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -q || die "apt-get update failed"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${missing[@]}" || die "apt-get install ${missing[*]} failed"
    say "installed: ${missing[*]}"
else
    say "nothing to install"
fi

# No ZooKeeper system service must serve port 2181: tests start their own servers on free
# ports, and a system server would only hide a wrong connect string. `zookeeperd` (if some
# other step installed it) starts one; stop and disable it.
stop_system_service() {
    local stopped=0
    if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
        if systemctl is-active --quiet zookeeper 2>/dev/null; then
            "${SUDO[@]}" systemctl stop zookeeper && stopped=1
        fi
        if systemctl is-enabled --quiet zookeeper 2>/dev/null; then
            "${SUDO[@]}" systemctl disable zookeeper >/dev/null 2>&1 || true
            say "disabled the zookeeper system service"
        fi
    elif [[ -x /etc/init.d/zookeeper ]]; then
        if "${SUDO[@]}" /etc/init.d/zookeeper status >/dev/null 2>&1; then
            "${SUDO[@]}" /etc/init.d/zookeeper stop >/dev/null 2>&1 && stopped=1
        fi
    fi
    if ((stopped)); then
        say "stopped the zookeeper system service"
    fi
}

if installed zookeeperd; then
    say "zookeeperd is installed; making sure its service is stopped (tests do not use it)"
    stop_system_service
fi

# A server still running from the system configuration (started by hand or by a service
# manager this script does not know) is stopped too. Only processes whose command line names
# the system zoo.cfg match; test servers use their own temp dirs.
mapfile -t system_pids < <(pgrep -f "QuorumPeerMain ${SYSTEM_ZOO_CFG}\$" || true)
if ((${#system_pids[@]} > 0)); then
    say "stopping a ZooKeeper server run from ${SYSTEM_ZOO_CFG} (pid ${system_pids[*]})"
    "${SUDO[@]}" kill "${system_pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 50); do
        pgrep -f "QuorumPeerMain ${SYSTEM_ZOO_CFG}\$" >/dev/null || break
        sleep 0.1
    done
    if pgrep -f "QuorumPeerMain ${SYSTEM_ZOO_CFG}\$" >/dev/null; then
        die "could not stop the ZooKeeper server run from ${SYSTEM_ZOO_CFG}"
    fi
fi

if command -v ss >/dev/null 2>&1 && ss -Hltn 'sport = :2181' 2>/dev/null | grep -q .; then
    say "warning: something still listens on port 2181 (not started by this script's packages)"
fi

# Check the result.
for f in "${REQUIRED_FILES[@]}"; do
    [[ -f $f ]] || die "$f is missing after installation"
done
java_bin=""
if [[ -n ${JAVA_HOME:-} && -x ${JAVA_HOME}/bin/java ]]; then
    java_bin="${JAVA_HOME}/bin/java"
elif command -v java >/dev/null 2>&1; then
    java_bin=$(command -v java)
fi
[[ -n $java_bin ]] || die "no java found after installing ${PACKAGES[1]}"
java_version=$("$java_bin" -version 2>&1 | head -n 1)
if [[ ${1:-} != --demo ]]; then
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || die "no PostgreSQL initdb after installing postgresql"
fi
say "ok: ${java_bin} (${java_version}); the jars in /usr/share/java"
