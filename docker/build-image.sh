#!/usr/bin/env bash
# Builds a local ZooKeeper image without any container registry: a minimal Debian root made
# with `debootstrap --variant=minbase`, Debian's ZooKeeper server jars (libzookeeper-java), a
# headless OpenJDK and iptables, plus docker/zk-entrypoint.sh, turned into an image with
# `docker import`.
# Two ZooKeeper series, each from the Debian release that packages it:
#   3.8 (default): Debian 12 bookworm, ZooKeeper 3.8.x, OpenJDK 17 -> zk-recipes/zookeeper:3.8
#   3.9:           Debian 13 trixie,   ZooKeeper 3.9.x, OpenJDK 21 -> zk-recipes/zookeeper:3.9
#
#   bash docker/build-image.sh                  # builds the 3.8 image unless it exists (then: no-op)
#   bash docker/build-image.sh --version 3.9    # the same for 3.9 (or ZK_SERIES=3.9)
#   bash docker/build-image.sh --force          # rebuilds it
#
# An image that exists but comes from an older version of this script (its
# ZK_RECIPES_IMAGE_REVISION is not this script's IMAGE_REVISION; images from before revision 2
# have none, and no iptables) is rebuilt without --force.
#
# iptables (Debian's, both its nft and legacy variants) is there for the testing kit: its
# Docker backend starts cluster containers with the NET_ADMIN capability and partitions a server
# from its peers with `docker exec ... iptables` rules on the quorum and election ports, in the
# container's own network namespace, while the published client port keeps serving.
#
# Environment: ZK_SERIES (3.8 or 3.9, default 3.8; --version wins), ZK_IMAGE (default
# zk-recipes/zookeeper:<series>), DEBIAN_MIRROR (default http://deb.debian.org/debian),
# DEBIAN_SECURITY_MIRROR (default http://deb.debian.org/debian-security).
#
# Why not Debian's `zookeeper` package: it only adds start scripts and sample configuration on
# top of libzookeeper-java, and depends on `default-jre` (not -headless), which brings GTK,
# Mesa, LLVM and fonts: some 300 MB the server never uses. The entrypoint starts the server
# class itself, and the image has a `zkCli` wrapper for the command-line client.
#
# `docker import --change` takes only CMD, ENTRYPOINT, ENV, EXPOSE, ONBUILD, USER, VOLUME and
# WORKDIR on Docker 20.10 (Debian 12's engine): no LABEL or STOPSIGNAL (SIGTERM is the default).
# No VOLUME either: data lives in the container's own layer, kept across stop/start and removed
# with the container, so that removing a test container leaves no anonymous volume behind.
#
# Needs root (debootstrap, chroot), the docker command and a reachable daemon; installs
# debootstrap with apt-get when it is missing. Exits non-zero with a message on failure.
set -euo pipefail

MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
HERE=$(cd "$(dirname "$0")" && pwd)

say() { printf 'build-image: %s\n' "$*"; }
die() { printf 'build-image: error: %s\n' "$*" >&2; exit 1; }

force=0
series=${ZK_SERIES:-3.8}
while (($#)); do
    case $1 in
        --force) force=1 ;;
        --version)
            (($# > 1)) || die "--version needs a value (3.8 or 3.9)"
            series=$2
            shift
            ;;
        --version=*) series=${1#--version=} ;;
        -h | --help) sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
    shift
done

# The Debian release that packages the series, and that release's headless JRE. The server's
# jars and the JRE; nothing else beyond what they depend on.
case $series in
    3.8) SUITE=bookworm DEBIAN=12 JDK=17 ;;
    3.9) SUITE=trixie DEBIAN=13 JDK=21 ;;
    *) die "unknown ZooKeeper series: $series (3.8 or 3.9)" ;;
esac
PACKAGES=(libzookeeper-java "openjdk-$JDK-jre-headless" iptables)
IMAGE=${ZK_IMAGE:-zk-recipes/zookeeper:$series}
# Stamped into the image (ENV ZK_RECIPES_IMAGE_REVISION); raise it when what the image holds
# changes, so that existing images are rebuilt. 2: iptables added.
IMAGE_REVISION=2

command -v docker >/dev/null 2>&1 || die "the docker command is missing"
docker info >/dev/null 2>&1 || die "the Docker daemon is not reachable (is it running? may this user use it?)"

if ((!force)) && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    revision=$(docker image inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$IMAGE" |
        sed -n 's/^ZK_RECIPES_IMAGE_REVISION=//p')
    if [[ $revision == "$IMAGE_REVISION" ]]; then
        say "$IMAGE exists (use --force to rebuild)"
        exit 0
    fi
    say "$IMAGE exists but is of image revision ${revision:-1}, not $IMAGE_REVISION (older ones lack iptables): rebuilding"
fi

[[ $(id -u) -eq 0 ]] || die "run as root: debootstrap and chroot need it"
if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap"
    apt-get update -q >/dev/null || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null ||
        die "apt-get install debootstrap failed"
fi

started=$(date +%s)
work=$(mktemp -d /var/tmp/zk-image.XXXXXX)
root="$work/rootfs"
cleanup() {
    for m in proc sys dev/pts dev; do
        mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

say "debootstrap --variant=minbase $SUITE (from $MIRROR)"
debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    die "debootstrap failed"
}

# No documentation, manuals or translations (copyright files stay).
cat >"$root/etc/dpkg/dpkg.cfg.d/01-zk-nodoc" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
cat >"$root/etc/apt/apt.conf.d/01-zk-minimal" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
cat >"$root/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"

mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
say "apt-get install ${PACKAGES[*]}"
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get update -q && apt-get install -y -q ${PACKAGES[*]}" >"$work/apt.log" 2>&1 || {
    tail -n 30 "$work/apt.log" >&2
    die "apt-get install in the new root failed"
}
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    sh -c 'getent group zookeeper >/dev/null || groupadd --system zookeeper;
           getent passwd zookeeper >/dev/null ||
             useradd --system --gid zookeeper --home-dir /data --no-create-home --shell /usr/sbin/nologin zookeeper'
for m in dev/pts dev sys proc; do umount "$root/$m"; done

# What the container runs.
install -m 0755 "$HERE/zk-entrypoint.sh" "$root/usr/local/bin/zk-entrypoint"
cat >"$root/usr/local/bin/zkCli" <<'EOF'
#!/bin/sh
# ZooKeeper's command-line client: zkCli -server 127.0.0.1:2181
exec java -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar \
    org.apache.zookeeper.ZooKeeperMain "$@"
EOF
chmod 0755 "$root/usr/local/bin/zkCli"
mkdir -p "$root/data" "$root/conf"
chroot "$root" chown zookeeper:zookeeper /data /conf

# Shrink: package lists and caches, logs, the host's resolver, docs that slipped through.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
    "$root"/var/log/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
    "$root"/tmp/* "$root"/root/.cache
find "$root/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete 2>/dev/null || true
: >"$root/etc/resolv.conf"
echo zookeeper >"$root/etc/hostname"

# The kit's partitions run iptables in the container: fail here, not in a test, without it.
for tool in iptables iptables-legacy; do
    [[ -x $root/usr/sbin/$tool ]] || die "the new root has no /usr/sbin/$tool"
done
version=$(chroot "$root" dpkg-query -W -f='${Version}' libzookeeper-java)
# Debian's version (3.9.3-1+deb13u1) must be of the series asked for.
[[ $version == "$series".* ]] || die "Debian $SUITE has libzookeeper-java $version, not ZooKeeper $series"
say "docker import as $IMAGE (ZooKeeper $version)"
tar --numeric-owner -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'WORKDIR /data' \
    --change 'EXPOSE 2181 2888 3888' \
    --change 'ENTRYPOINT ["/usr/local/bin/zk-entrypoint"]' \
    --change 'CMD []' \
    --change "ENV ZK_RECIPES_ZOOKEEPER_VERSION=$version" \
    --change "ENV ZK_RECIPES_IMAGE_REVISION=$IMAGE_REVISION" \
    --message "zk-recipes: Debian $DEBIAN ($SUITE) minbase, ZooKeeper $version, OpenJDK $JDK headless, iptables (image revision $IMAGE_REVISION)" \
    - "$IMAGE" >/dev/null || die "docker import failed"

size=$(docker image inspect -f '{{.Size}}' "$IMAGE")
say "built $IMAGE: $((size / 1024 / 1024)) MB in $(($(date +%s) - started)) s"
