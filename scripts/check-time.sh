#!/usr/bin/env bash
# No raw `Instant + Duration` in the library: a caller's duration added to a clock panics on
# overflow (`Duration::MAX` is how callers spell "no bound"). Deadlines are made by the one
# saturating helper, `framework::deadline::{after, later, wall_later}` (src/framework/deadline.rs,
# the only file allowed to add them). This catches the usual spellings; review catches the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
found=$(grep -rnE '(Instant|SystemTime)::now\(\) *\+|\b(at|deadline|started|start|now|sent_at|t)\s*\+\s*(Duration|timeout|ttl|length|expiry|delay|pause|interval|left|d)\b' \
    src --include=*.rs | grep -v '^src/framework/deadline.rs:' | grep -vE '^\S+:[0-9]+:\s*//' || true)
if [[ -n $found ]]; then
    echo "check-time: an instant plus a duration outside framework/deadline.rs (use deadline::after/later):" >&2
    echo "$found" >&2
    exit 1
fi
echo "check-time: no raw Instant + Duration outside framework/deadline.rs"
