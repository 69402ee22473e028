#!/usr/bin/env bash
# Installs what the tests, examples and benchmarks need on a fresh Debian 12 machine of this
# kind, idempotently: ZooKeeper (the package, not the system service), a JDK (the Curator peer
# is compiled by the tests), Curator 5.4's jars. Prints what it does.
set -euo pipefail

need=()
dpkg -s zookeeper >/dev/null 2>&1 || need+=(zookeeper)
dpkg -s libcurator-recipes-java >/dev/null 2>&1 || need+=(libcurator-recipes-java)
dpkg -s libcurator-framework-java >/dev/null 2>&1 || need+=(libcurator-framework-java)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)

if [ "${#need[@]}" -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >/dev/null || { echo "setup: apt-get update failed" >&2; exit 1; }
  $SUDO apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null \
    || { echo "setup: apt-get install ${need[*]} failed" >&2; exit 1; }
else
  echo "setup: zookeeper, java, javac and Curator's jars are present"
fi

# The package must not leave a system ZooKeeper running on 2181 (tests start their own).
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet zookeeper 2>/dev/null; then
  echo "setup: stopping the system zookeeper service"
  systemctl stop zookeeper || true
fi
test -f /usr/share/java/zookeeper.jar || { echo "setup: /usr/share/java/zookeeper.jar missing" >&2; exit 1; }
test -f /usr/share/java/curator-recipes.jar || { echo "setup: Curator's jars missing" >&2; exit 1; }
