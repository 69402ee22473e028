"""Number formatting and medians with their spread, shared by bench/report*.py."""

import json
import os
import statistics
import sys

PEER_ORDER = ("zk-recipes", "curator", "kazoo", "zookeeper-client")
PEER_TITLES = {"zk-recipes": "zk-recipes", "curator": "Curator", "kazoo": "kazoo", "zookeeper-client": "zookeeper-client"}


def title(peer):
    return PEER_TITLES.get(peer, peer)


def peer_rank(p):
    return PEER_ORDER.index(p) if p in PEER_ORDER else len(PEER_ORDER)


def fmt_ms(v):
    if v is None:
        return "–"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def fmt_ops(v):
    if v is None:
        return "–"
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"


def fmt_ratio(v):
    return f"{v:.2f}"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values, fmt="{:,.0f}"):
    """median (min–max) of the values; the median alone for one value; – for none."""
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    f = fmt if callable(fmt) else fmt.format
    m = median(values)
    if len(values) == 1:
        return f(m)
    return f"{f(m)} ({f(min(values))}–{f(max(values))})"


def ratio_spread(ours, theirs):
    """Theirs / ours per repeat (paired by order): median (min–max)."""
    rs = [t / o for o, t in zip(ours, theirs) if o > 0]
    return spread(rs, "{:.2f}") if rs else "–"


def fmt_duration(s):
    try:
        s = int(s)
    except (TypeError, ValueError):
        return "?"
    return f"{s // 60} min {s % 60} s"


def read_jsonl(path):
    rows = []
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    print(f"report.py: {path}:{n}: not JSON, skipped", file=sys.stderr)
    return rows
