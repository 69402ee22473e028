#!/usr/bin/env bash
# Runs the Curator benchmark driver (CuratorBench.java) against Debian's Curator jars.
#
#   bench/peers/curator/run.sh --connect HOSTS --recipe R --clients N --seconds D [...]
#
# Compiles CuratorBench.java (with ShedLockBench.java, its `shedlock` recipe) once into
# bench/out/classes/curator-<hash of the sources> (git-ignored; a changed source compiles
# anew) and runs it with the arguments passed through.
# Needs a JDK (javac) and Debian's libcurator-recipes-java (scripts/setup.sh installs both);
# set ZK_RECIPES_CURATOR_JARS to use jars from another directory. Extra JVM options can be
# given in CURATOR_BENCH_JAVA_OPTS. `run.sh --prepare` only compiles.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$(cd "$here/../.." && pwd)
srcs=("$here/CuratorBench.java" "$here/ShedLockBench.java")
jar_dir=${ZK_RECIPES_CURATOR_JARS:-/usr/share/java}

die() { printf 'curator/run.sh: %s\n' "$*" >&2; exit 1; }

jars=(curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-nop)
classpath=""
for jar in "${jars[@]}"; do
    [[ -f "$jar_dir/$jar.jar" ]] || die "$jar_dir/$jar.jar is missing (apt-get install libcurator-recipes-java, or run scripts/setup.sh)"
    classpath+="${classpath:+:}$jar_dir/$jar.jar"
done

java=java
javac=javac
if [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then
    java=$JAVA_HOME/bin/java
    javac=$JAVA_HOME/bin/javac
fi

hash=$(cat "${srcs[@]}" | sha256sum | cut -c1-16)
classes="$bench/out/classes/curator-$hash"
if [[ ! -f $classes/CuratorBench.class ]]; then
    command -v "$javac" >/dev/null 2>&1 || die "javac not found (apt-get install default-jdk-headless)"
    mkdir -p "$bench/out/classes"
    work=$(mktemp -d "$bench/out/classes/.compile-XXXXXX")
    trap 'rm -rf "$work"' EXIT
    printf 'curator/run.sh: compiling %s\n' "${srcs[*]#"$bench"/}" >&2
    "$javac" -encoding UTF-8 -nowarn -d "$work" -cp "$classpath" "${srcs[@]}" >&2 || die "javac failed"
    # Publish atomically; a concurrent compile of the same source may have won the race.
    mv -T "$work" "$classes" 2>/dev/null || [[ -f $classes/CuratorBench.class ]] || die "cannot publish $classes"
    rm -rf "$work"
    trap - EXIT
fi

[[ ${1:-} == --prepare ]] && exit 0

# shellcheck disable=SC2086 # CURATOR_BENCH_JAVA_OPTS is a list of options
exec "$java" -XX:-UsePerfData ${CURATOR_BENCH_JAVA_OPTS:-} -cp "$classes:$classpath" CuratorBench "$@"
