#!/usr/bin/env bash
# The semver gate: the public API of each published library crate, as cargo-public-api lists it,
# compared with the snapshot committed under api/. A change of the public surface (an item
# added, removed or changed, a lost `Send`, a new trait impl) is then a diff of api/*.txt that a
# reviewer sees, and a change the author did not mean to make fails CI.
#
#   bash scripts/public-api.sh           check: exit 1 with a unified diff if the API differs
#   bash scripts/public-api.sh --bless   write the current API to api/*.txt (commit them)
#
# The crates and the features each is listed with (the public surface differs by feature):
#   zk-recipes          tls,sasl,sasl-gssapi,metrics,raw-client: every feature that gates a public
#                       item (the raw-client items are the only ones naming zookeeper_client
#                       types, apart from those issue 45 has still to replace).
#                       Not `fips`: it gates no public item (it only picks the FIPS module
#                       inside the `tls` code) and building it compiles AWS-LC's FIPS module
#                       (cmake and Go, minutes on 2 cores). `sasl-gssapi` (SaslConfig::gssapi)
#                       needs the GSSAPI headers and libclang that scripts/setup.sh installs.
#   zk-recipes-testing  tls,docker: all its features.
#   zk-recipes-fencing  none (it has no features).
# zkr is a binary only (no [lib]): it has no Rust API to snapshot; its interface is its manual.
# Items gated on a feature appear in the snapshot without saying which feature gates them: a
# snapshot per feature set would cost a build each and repeat everything else.
#
# The tool: cargo-public-api, installed from crates.io at the exact version below into
# $CARGO_HOME/bin (skipped when that version is there), as a debug build: that compiles in about
# a third of the time of a release build, and lists these crates in under a second all the same.
# It reads rustdoc's JSON output, whose format changes between Rust releases: 0.52.0 reads
# format 57, which rustc 1.95 writes. The tool does not check the format's number itself (it
# reads what parses), so this script does: a toolchain that writes another format stops it with
# a message; then move CARGO_PUBLIC_API to a release that reads that format, and bless.
#
# rustdoc's JSON output is unstable, so the tool wants a nightly toolchain; CI has only stable.
# This script builds the JSON itself with the stable rustdoc, through a wrapper that sets
# RUSTC_BOOTSTRAP=1 for the rustdoc process of the listed crate alone (set for the whole cargo
# run, it would change what the build scripts of proc-macro2, thiserror and anyhow probe, and
# rebuild every dependency), and hands the file to the tool with --rustdoc-json.
# Blanket impls (`impl<T> From<T> for T` and the like, on every type) are left out of the
# listing; auto-trait impls (Send, Sync, Unpin) and derived impls stay: losing one is breaking.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_PUBLIC_API=0.52.0
RUSTDOC_JSON_FORMAT=57
# package, library name, features (`-`: none), snapshot
CRATES=(
    "zk-recipes zk_recipes tls,sasl,sasl-gssapi,metrics,raw-client api/zk-recipes.txt"
    "zk-recipes-testing zk_recipes_testing tls,docker api/zk-recipes-testing.txt"
    "zk-recipes-fencing zk_recipes_fencing - api/zk-recipes-fencing.txt"
)

say() { printf 'public-api: %s\n' "$*"; }
die() { printf 'public-api: error: %s\n' "$*" >&2; exit 1; }

usage() { printf 'public-api: error: %s (usage: public-api.sh [--bless])\n' "$*" >&2; exit 2; }
bless=false
case "${1:-}" in
    --bless) bless=true ;;
    '') ;;
    *) usage "unknown argument $1" ;;
esac
(( $# <= 1 )) || usage "one argument at most"

cargo_home=${CARGO_HOME:-$HOME/.cargo}
tool="$cargo_home/bin/cargo-public-api"
if [[ "$("$tool" --version 2>/dev/null || true)" != "cargo-public-api $CARGO_PUBLIC_API" ]]; then
    started=$(date +%s)
    cargo install --locked --debug --root "$cargo_home" "cargo-public-api@$CARGO_PUBLIC_API"
    say "installed cargo-public-api $CARGO_PUBLIC_API in $(( $(date +%s) - started )) s"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rustdoc=$(command -v "${RUSTDOC:-rustdoc}") || die "no rustdoc on PATH"
printf '#!/usr/bin/env bash\nRUSTC_BOOTSTRAP=1 exec %q "$@"\n' "$rustdoc" > "$work/rustdoc"
chmod +x "$work/rustdoc"
target_dir=$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

started=$(date +%s)
differs=()
for crate in "${CRATES[@]}"; do
    read -r package lib features snapshot <<< "$crate"
    [[ "$features" == - ]] && features=
    json="$target_dir/doc/$lib.json"
    rm -f "$json"
    RUSTDOC="$work/rustdoc" cargo rustdoc --quiet -p "$package" --lib --features "$features" \
        -- -Z unstable-options --output-format json
    [[ -f "$json" ]] || die "rustdoc wrote no $json"
    format=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["format_version"])' \
        "$json")
    if [[ "$format" != "$RUSTDOC_JSON_FORMAT" ]]; then
        die "rustdoc wrote JSON format $format; cargo-public-api $CARGO_PUBLIC_API reads format" \
            "$RUSTDOC_JSON_FORMAT: pin a release that reads $format (RUSTDOC_JSON_FORMAT too), then bless"
    fi
    "$tool" public-api --rustdoc-json "$json" --omit blanket-impls > "$work/$lib.txt"
    if $bless; then
        mkdir -p "$(dirname "$snapshot")"
        cp "$work/$lib.txt" "$snapshot"
        say "wrote $snapshot ($(wc -l < "$snapshot") items)"
    elif ! diff -u --label "$snapshot (committed)" --label "$snapshot (this tree)" \
        "$snapshot" "$work/$lib.txt"; then
        differs+=("$snapshot")
    fi
done
say "listed the public API of ${#CRATES[@]} crates in $(( $(date +%s) - started )) s"

if (( ${#differs[@]} )); then
    printf 'public-api: error: the public API differs from %s (diff above: - committed, + this tree)\n' \
        "${differs[*]}" >&2
    printf 'public-api: if the change is meant, run `bash scripts/public-api.sh --bless` and commit api/\n' >&2
    exit 1
fi
$bless || say "the public API matches api/"
