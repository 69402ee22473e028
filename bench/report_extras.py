"""The drain, memory and cache sections of bench/RESULTS.md (used by bench/report.py)."""

import os
from collections import defaultdict

from report_fmt import fmt_ms, median, peer_rank, ratio_spread, spread, title


def drain_section(drains, label, drain_clients):
    if not drains:
        return []
    L = [f"## Drain: queued waiters handing one lock on ({label})", ""]
    L.append(f"W waiters queue on one mutex behind a holder (over {drain_clients} session(s) per peer); "
             "the clock starts when the holder releases and stops when the last waiter has held and "
             "released the lock. *per handoff* = total / W; wait p50 / p99 = time from the holder's "
             "release until a waiter held the lock. Medians over repeats with (min–max).")
    L.append("")
    L.append("| waiters | peer | total ms | per handoff ms | wait p50 / p99 ms | runs |")
    L.append("|--:|---|--:|--:|--:|--:|")
    dby = defaultdict(list)
    for r in drains:
        dby[(r.get("waiters", r["ops"]), r["peer"])].append(r)
    for (w, p) in sorted(dby, key=lambda k: (k[0], peer_rank(k[1]))):
        rs = dby[(w, p)]
        bad = sum(r["violations"] + r["errors"] for r in rs)
        L.append(f"| {w:,} | {title(p)} | {spread([r['total_ms'] for r in rs])} | "
                 f"{spread([r['per_handoff_ms'] for r in rs], '{:.3f}')} | "
                 f"{fmt_ms(median([r['p50_ms'] for r in rs]))} / {fmt_ms(median([r['p99_ms'] for r in rs]))} | "
                 f"{len(rs)}{' (!! ' + str(bad) + ' violations/errors)' if bad else ''} |")
    L.append("")
    return L


def memory_section(memory, label):
    if not memory:
        return []
    L = [f"## Memory: waiters on one lock over one session ({label})", ""]
    L.append("Resident memory of one `zkr bench --recipe waiters-memory` process holding W queued waiters "
             "on one lock over one session.")
    L.append("")
    L.append("| peer | waiters | RSS MB |")
    L.append("|---|--:|--:|")
    for r in memory:
        L.append(f"| {title(r.get('peer', '?'))} | {int(r.get('waiters') or 0):,} | {r.get('rss_mb', '–')} |")
    L.append("")
    return L


def holders_section(rows, label, failed=(), unsupported=None):
    """The holders runs of one setting: N locks held at once by one process over one session."""
    unsupported = unsupported or {}
    if not rows and not failed:
        return []
    L = [f"## Holders: distinct locks held at once by one process ({label})", ""]
    L.append("One process, one session, N distinct locks held at once (a lock per entity), *tasks* acquires in "
             "flight: the time to acquire them all, to release them all, and the process's resident memory with "
             "all held (*RSS per lock* = (RSS − RSS before) / N; Curator: and the JVM heap in use after "
             "`System.gc()`). Medians over runs with (min–max).")
    L.append("")
    L.append("| peer | holders | tasks | acquire s | release s | RSS MB | RSS before MB | RSS per lock KB | heap MB | runs |")
    L.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    by = defaultdict(list)
    for r in rows:
        by[(int(r.get("holders") or r.get("ops") or 0), int(r.get("tasks") or 1), r.get("peer", "?"))].append(r)
    notes = []
    for (n, t, p) in sorted(by, key=lambda k: (k[0], k[1], peer_rank(k[2]))):
        rs = by[(n, t, p)]

        def col(f, scale=1.0, fmt="{:,.1f}", rs=rs):
            return spread([r[f] * scale for r in rs if r.get(f) is not None], fmt)

        heap = col("heap_mb") if any("heap_mb" in r for r in rs) else ""
        L.append(f"| {title(p)} | {n:,} | {t} | {col('acquire_ms', 0.001)} | {col('release_ms', 0.001)} | "
                 f"{col('rss_mb')} | {col('rss_mb_before')} | {col('rss_kb_per_lock', fmt='{:,.2f}')} | {heap} | "
                 f"{len(rs)} |")
        short = [r for r in rs if (r.get("ops") or 0) < n]
        bad = sum(r.get("violations", 0) + r.get("errors", 0) for r in rs)
        if short or bad:
            notes.append(f"{title(p)} at {n:,}: {len(short)} run(s) held fewer than {n:,} locks; "
                         f"{bad} violation(s)/error(s)")
    L.append("")
    for p, msg in sorted(unsupported.items(), key=lambda k: peer_rank(k[0])):
        notes.append(f"{title(p)}: not supported — {msg}")
    for f in failed:
        notes.append(f"{title(f.get('peer', '?'))}: a run failed ({f.get('args') or ''}, exit {f.get('exit')}, "
                     f"`{f.get('log', '')}`)")
    if notes:
        L.extend(f"- {n}" for n in notes)
        L.append("")
    return L


CACHE_RECIPES = ("cache-load", "cache_load", "cache-delay", "cache_delay")
CACHE_BEGIN = "<!-- cache section: begin -->"
CACHE_END = "<!-- cache section: end -->"


def cache_section(rows, label, header=None):
    loads = [r for r in rows if r.get("recipe") in ("cache-load", "cache_load")]
    delays = [r for r in rows if r.get("recipe") in ("cache-delay", "cache_delay")]
    if not loads and not delays:
        return []
    L = [CACHE_BEGIN, f"## Caches: zk-recipes `Cache::tree` and Curator's `CuratorCache` ({label})", ""]
    if header:
        L.extend(header)
    L.append("Values are medians over repeats with (min–max); *ratio* is Curator's value over zk-recipes' "
             "per repeat (interleaved pairs), so > 1 favours zk-recipes for time and memory.")
    L.append("")
    if loads:
        L.append("**cache-load**: time from `start` to `Initialized` of a tree cache with data over a pre-built tree "
                 "(root, 100 directories, the rest as leaves of 32 bytes of data; built once per size, untimed), and "
                 "the growth of the process's resident memory across the load (`rss_delta`; for Curator also the "
                 "JVM heap in use after `System.gc()`, `heap Δ`). A fresh process per run.")
        L.append("")
        L.append("| nodes | peer | load ms | load ratio | RSS Δ MB | RSS Δ ratio | RSS total MB | heap Δ MB | runs |")
        L.append("|--:|---|--:|--:|--:|--:|--:|--:|--:|")
        for n in sorted({r["nodes"] for r in loads}):
            ours = [r for r in loads if r["nodes"] == n and r["peer"] == "zk-recipes"]
            for p in sorted({r["peer"] for r in loads if r["nodes"] == n}, key=peer_rank):
                rs = [r for r in loads if r["nodes"] == n and r["peer"] == p]
                incomplete = [r for r in rs if r.get("complete", 1) == 0]
                if incomplete:
                    L.append(f"| {n:,} | {title(p)} | **never complete** in {len(incomplete)} of {len(rs)} "
                             f"run(s): `Initialized` with {spread([r['at_initialized'] for r in incomplete])} nodes, "
                             f"{spread([r['loaded'] for r in incomplete])} 30 s later | | "
                             f"{spread([r['rss_delta_mb'] for r in incomplete], '{:,.1f}')} | | "
                             f"{spread([r['rss_mb'] for r in incomplete], '{:,.1f}')} | "
                             f"{spread([r['heap_delta_mb'] for r in incomplete], '{:,.1f}')} | {len(rs)} |")
                    rs = [r for r in rs if r.get("complete", 1) != 0]
                    if not rs:
                        continue
                lr = ratio_spread([r["load_ms"] for r in ours], [r["load_ms"] for r in rs]) if p != "zk-recipes" else ""
                mr = ratio_spread([r["rss_delta_mb"] for r in ours], [r["rss_delta_mb"] for r in rs]) if p != "zk-recipes" else ""
                heap = spread([r["heap_delta_mb"] for r in rs if "heap_delta_mb" in r], "{:,.1f}")
                L.append(f"| {n:,} | {title(p)} | {spread([r['load_ms'] for r in rs])} | {lr} | "
                         f"{spread([r['rss_delta_mb'] for r in rs], '{:,.1f}')} | {mr} | "
                         f"{spread([r['rss_mb'] for r in rs], '{:,.1f}')} | {heap if p != 'zk-recipes' else ''} | {len(rs)} |")
        early = [r for r in loads if r.get("at_initialized", r["nodes"]) < r["nodes"] and r.get("complete", 1) != 0]
        if early:
            L.append(f"- **Early Initialized** (CURATOR-690) in {len(early)} run(s): " + "; ".join(
                f"{title(r['peer'])} at {r['nodes']:,} nodes held {r['at_initialized']:,} at "
                f"`Initialized` ({r['initialized_ms']:,.0f} ms)" for r in early)
                + ". The load time above runs to the complete content.")
            L.append("")
    if delays:
        if L[-1] != "":
            L.append("")
        d0 = delays[0]
        L.append(f"**cache-delay**: a tree cache over {d0['nodes']:,} nodes; a writer on its own session sets their "
                 f"data round-robin at {d0['rate']:,} writes/s (pipelined, every 10 ms), each write carrying its "
                 "send time; the delay is the `Changed` event's arrival minus that time, in the same process. "
                 "Writes sent in the window count; *missed*: writes whose own event never came.")
        L.append("")
        L.append("| peer | events | p50 ms | p99 ms | p99 ratio | missed | errors | runs |")
        L.append("|---|--:|--:|--:|--:|--:|--:|--:|")
        ours = [r for r in delays if r["peer"] == "zk-recipes"]
        for p in sorted({r["peer"] for r in delays}, key=peer_rank):
            rs = [r for r in delays if r["peer"] == p]
            pr = ratio_spread([r["p99_ms"] for r in ours], [r["p99_ms"] for r in rs]) if p != "zk-recipes" else ""
            L.append(f"| {title(p)} | {spread([r['ops'] for r in rs])} | "
                     f"{spread([r['p50_ms'] for r in rs], '{:.2f}')} | {spread([r['p99_ms'] for r in rs], '{:.2f}')} | "
                     f"{pr} | {sum(r.get('missed', 0) for r in rs):,.0f} | {sum(r['errors'] for r in rs)} | {len(rs)} |")
        L.append("")
    L.append(CACHE_END)
    L.append("")
    return L


def splice_cache_section(a, label, rows):
    """CACHE_ONLY runs: replace (or append) only the cache section of an existing report."""
    header = [f"Measured {a.started} – {a.finished} by `CACHE_ONLY=1 bash bench/compare.sh` on its own "
              f"server ({label}), {a.repeats} repeat(s), interleaved.", ""]
    section = "\n".join(cache_section(rows, label, header))
    old = open(a.out, encoding="utf-8").read() if os.path.exists(a.out) else ""
    if CACHE_BEGIN in old and CACHE_END in old:
        head, rest = old.split(CACHE_BEGIN, 1)
        tail = rest.split(CACHE_END, 1)[1].lstrip("\n")
        text = head + section + tail
    else:
        marker = "\n## Failed runs"
        text = old.replace(marker, "\n" + section + marker, 1) if marker in old else old.rstrip("\n") + "\n\n" + section
    return text
