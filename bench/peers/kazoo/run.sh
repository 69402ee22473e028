#!/usr/bin/env bash
# Runs the kazoo benchmark driver (kazoo_bench.py) in a virtualenv.
#
#   bench/peers/kazoo/run.sh --connect HOSTS --recipe R --clients N --seconds D [...]
#
# Creates bench/out/venv (git-ignored) with python3 -m venv and installs requirements.txt
# (kazoo, pinned) with pip when it is missing or another version is installed; idempotent, and
# a no-op once installed. PYTHON names the interpreter to build the venv from (default python3).
# `run.sh --prepare` only installs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=$(cd "$here/../.." && pwd)
venv="$bench/out/venv"
want=$(sed -n 's/^kazoo==\([^ ]*\).*/\1/p' "$here/requirements.txt")

die() { printf 'kazoo/run.sh: %s\n' "$*" >&2; exit 1; }

installed_version() {
    "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("kazoo"))' 2>/dev/null || true
}

if [[ ! -x $venv/bin/python ]] || [[ $(installed_version) != "$want" ]]; then
    mkdir -p "$bench/out"
    # One installer at a time (compare.sh runs drivers one by one, but people run them by hand).
    exec 9>"$bench/out/.venv.lock"
    flock 9
    if [[ ! -x $venv/bin/python ]]; then
        printf 'kazoo/run.sh: creating %s\n' "${venv#"$bench"/}" >&2
        "${PYTHON:-python3}" -m venv "$venv" >&2 || die "python3 -m venv failed (apt-get install python3-venv)"
    fi
    if [[ $(installed_version) != "$want" ]]; then
        printf 'kazoo/run.sh: installing kazoo %s\n' "$want" >&2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2 \
            || die "pip install -r requirements.txt failed"
    fi
    exec 9>&-
fi

[[ ${1:-} == --prepare ]] && exit 0

exec "$venv/bin/python" "$here/kazoo_bench.py" "$@"
