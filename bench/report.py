#!/usr/bin/env python3
"""Turns bench/out/results.jsonl into bench/RESULTS.md (called by bench/compare.sh).

    report.py --results bench/out/results.jsonl [--failures ...] [--srvr ...] --out bench/RESULTS.md
    report.py --check-line PEER RECIPE CLIENTS < one-driver-output

The second form checks one driver's stdout against the contract (exactly one JSON line with
the contract's fields, for the peer, recipe and client count asked) and prints a one-line
summary; it exits 1 when the output breaks the contract. Only the standard library is used.
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import zipfile
from collections import defaultdict
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RUN_FIELDS = ("peer", "recipe", "clients", "seconds", "ops", "ops_per_s", "p50_ms", "p99_ms", "violations", "errors")
MEMORY_FIELDS = ("peer", "recipe", "waiters", "rss_mb")

PEER_ORDER = ("zk-recipes", "curator", "kazoo", "zookeeper-client")
PEER_TITLES = {"zk-recipes": "zk-recipes", "curator": "Curator", "kazoo": "kazoo", "zookeeper-client": "zookeeper-client"}
RECIPE_ORDER = ("mutex", "rwlock", "semaphore", "semaphore_mutex", "counter", "shared_count", "double_barrier")

RECIPE_NOTES = {
    "mutex": "Acquire, empty critical section, release, in a loop. zk-recipes `InterProcessMutex`; Curator "
    "`InterProcessMutex`; kazoo `Lock`; zookeeper-client's own lock recipe (`Client::lock`, peer `zookeeper-client`).",
    "rwlock": "75 % reads, 25 % writes (per-client seeded random). zk-recipes `InterProcessReadWriteLock`; "
    "Curator `InterProcessReadWriteLock`; kazoo `ReadLock`/`WriteLock`.",
    "semaphore": "Each operation takes 1 of K leases (K = {leases}) and returns it. zk-recipes "
    "`InterProcessSemaphoreV2`; Curator `InterProcessSemaphoreV2`; kazoo `Semaphore(max_leases=K)` "
    "(its own design, with an internal lock).",
    "semaphore_mutex": "Non-reentrant mutex built on a one-lease semaphore. zk-recipes and Curator "
    "`InterProcessSemaphoreMutex`; kazoo has none.",
    "counter": "Atomic increment by 1; latency is the call. zk-recipes `DistributedAtomicLong`; Curator "
    "`DistributedAtomicLong` with `RetryNTimes(10, 10 ms)`: when its optimistic retries run out under "
    "contention it reports `succeeded() == false`, counted as an error (not retried); kazoo `Counter` "
    "(default command retry: unlimited tries, 0.1 s doubling back-off).",
    "shared_count": "Versioned increment from the last value known, repeated until it succeeds: Curator "
    "`getVersionedValue` (local) + `trySetCount(version, n + 1)` (a refusal reads the value), zk-recipes "
    "`SharedCount::compare_and_set` (a refusal reads and returns the value that won); one operation = one "
    "successful increment. kazoo has none.",
    "double_barrier": "All clients enter and leave a `DistributedDoubleBarrier` (kazoo `DoubleBarrier`) on a "
    "fresh path per round; one operation = one round completed by every member, its latency from the first "
    "member's enter to the last member's leave. With 1 client it is one member entering and leaving. A member "
    "that never returns stops the run (its round is one failed operation): Curator 5.4's `enter` can fall into an "
    "untimed `wait()` despite its timeout when its watcher fired before it waited, and kazoo's `enter` has no "
    "timeout (the driver gives up after 30 s); such runs are marked ⚠ and pull the medians down.",
}


# ------------------------------------------------------------------------------------------
# Contract check of one driver's output


def check_line(peer, recipe, clients, text):
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise ValueError(f"expected exactly one line on stdout, got {len(lines)}")
    obj = json.loads(lines[0])
    if not isinstance(obj, dict):
        raise ValueError("the line is not a JSON object")
    memory = recipe.replace("-", "_") == "waiters_memory"
    fields = MEMORY_FIELDS if memory else RUN_FIELDS
    missing = [f for f in fields if f not in obj]
    if missing:
        raise ValueError(f"missing fields: {', '.join(missing)}")
    if obj["peer"] != peer:
        raise ValueError(f"peer is {obj['peer']!r}, expected {peer!r}")
    if obj["recipe"].replace("-", "_") != recipe.replace("-", "_"):
        raise ValueError(f"recipe is {obj['recipe']!r}, expected {recipe!r}")
    if memory:
        return f"{obj['waiters']} waiters: {obj['rss_mb']} MB resident"
    if obj["clients"] != int(clients):
        raise ValueError(f"clients is {obj['clients']!r}, expected {clients}")
    for f in ("ops", "violations", "errors"):
        if not isinstance(obj[f], int) or obj[f] < 0:
            raise ValueError(f"{f} must be a non-negative integer")
    if recipe == "drain":
        for f in ("total_ms", "per_handoff_ms"):
            if f not in obj:
                raise ValueError(f"drain needs {f}")
    summary = f"{obj['ops_per_s']:,.1f} ops/s, p50 {fmt_ms(obj['p50_ms'])} ms, p99 {fmt_ms(obj['p99_ms'])} ms"
    if recipe == "cache-load" and obj.get("complete", 1) == 0:
        summary = f"INCOMPLETE: {obj['loaded']:,} of {obj['nodes']:,} nodes ({obj['at_initialized']:,} at Initialized)"
    elif recipe == "cache-load":
        summary = f"{obj['nodes']:,} nodes loaded in {obj['load_ms']:,.1f} ms, RSS +{obj['rss_delta_mb']:.1f} MB (to {obj['rss_mb']:.1f})"
    if recipe == "drain":
        summary = f"{obj['ops']} waiters in {obj['total_ms']:,.1f} ms ({obj['per_handoff_ms']} ms per handoff)"
    if obj["violations"]:
        summary += f"  !! {obj['violations']} VIOLATIONS"
    if obj["errors"]:
        summary += f"  ({obj['errors']} errors)"
    return summary


# ------------------------------------------------------------------------------------------
# Formatting


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


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


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


# ------------------------------------------------------------------------------------------
# Machine and versions


def run_cmd(argv, stderr=False):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (p.stderr if stderr else p.stdout).strip()


def dpkg_version(package):
    return run_cmd(["dpkg-query", "-W", "-f=${Version}", package])


def machine():
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                    break
    except OSError:
        pass
    parts = [f"{cpus} CPU cores (nproc)", model or platform.processor() or "unknown CPU", mem]
    kernel = f"{platform.system()} {platform.release()}"
    return ", ".join(p for p in parts if p), kernel


def jar_version(jar):
    """The Maven version recorded in a jar (pom.properties, else the manifest)."""
    try:
        with zipfile.ZipFile(jar) as z:
            texts = [z.read(n).decode("utf-8", "replace") for n in z.namelist() if n.endswith("/pom.properties")]
            texts.append(z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace"))
    except (OSError, KeyError, zipfile.BadZipFile):
        return ""
    for text in texts:
        for key in ("version=", "Bundle-Version: *", "Implementation-Version: *"):
            m = re.search(rf"^{key}(\S+)", text, re.M)
            if m:
                return m.group(1)
    return ""


def cargo_lock_version(name):
    try:
        with open(os.path.join(ROOT, "Cargo.lock"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return ""
    m = re.search(rf'name = "{re.escape(name)}"\nversion = "([^"]+)"', text)
    return m.group(1) if m else ""


def versions(srvr_path):
    v = {}
    zk = ""
    if srvr_path and os.path.exists(srvr_path):
        with open(srvr_path, encoding="utf-8", errors="replace") as f:
            m = re.search(r"Zookeeper version: ([^,\n]+)", f.read())
            # Debian's build leaves an unexpanded "-${mvngit.commit.id}" in the version
            zk = re.sub(r"-\$\{[^}]*\}", "", m.group(1)).strip() if m else ""
    deb = dpkg_version("zookeeper")
    v["ZooKeeper"] = " ".join(x for x in (zk or "?", f"(Debian package {deb})" if deb else "") if x)
    jars = os.environ.get("ZK_RECIPES_CURATOR_JARS", "/usr/share/java")
    cur = jar_version(os.path.join(jars, "curator-recipes.jar"))
    deb = dpkg_version("libcurator-recipes-java")
    v["Apache Curator"] = " ".join(x for x in (cur or "?", f"(Debian package {deb})" if deb else "") if x)
    venv_python = os.path.join(ROOT, "bench", "out", "venv", "bin", "python")
    kz = run_cmd([venv_python, "-c", "import importlib.metadata as m, platform; "
                  "print(m.version('kazoo'), 'on Python', platform.python_version())"])
    v["kazoo"] = kz or "not installed"
    java = run_cmd(["java", "-version"], stderr=True).splitlines()
    v["Java (Curator)"] = java[0] if java else "?"
    v["rustc"] = run_cmd(["rustc", "--version"]) or "?"
    v["zookeeper-client (crate)"] = cargo_lock_version("zookeeper-client") or "?"
    commit = run_cmd(["git", "-C", ROOT, "describe", "--always", "--dirty"])
    v["zk-recipes"] = f"{cargo_lock_version('zk-recipes') or '?'} (commit {commit})" if commit else "?"
    return v


# ------------------------------------------------------------------------------------------
# The report


def build_report(a):
    rows = read_jsonl(a.results)
    failures = read_jsonl(a.failures)
    runs = [r for r in rows if r.get("recipe") not in ("drain", "waiters_memory", "waiters-memory", "raw")
            and r.get("recipe") not in CACHE_RECIPES]
    raw = [r for r in rows if r.get("recipe") == "raw"]
    drains = [r for r in rows if r.get("recipe") == "drain"]
    memory = [r for r in rows if r.get("recipe") in ("waiters_memory", "waiters-memory")]

    by = defaultdict(list)
    for r in runs:
        by[(r["recipe"], r["peer"], r["clients"])].append(r)
    raw_by = defaultdict(list)
    for r in raw:
        raw_by[r["clients"]].append(r["ops_per_s"])
    raw_floor = {c: median(v) for c, v in raw_by.items()}

    peers_run = set(r["peer"] for r in rows)
    peers = [p for p in PEER_ORDER if p in peers_run] + sorted(peers_run - set(PEER_ORDER))
    recipes = [x for x in RECIPE_ORDER if any(k[0] == x for k in by)] + sorted(
        set(k[0] for k in by) - set(RECIPE_ORDER))
    unsupported = {(f["peer"], f["recipe"]): f.get("message", "") for f in failures if f.get("status") == "unsupported"}
    unavailable = {f["peer"]: f.get("message", "") for f in failures if f.get("status") == "unavailable"}
    failed = [f for f in failures if f.get("status") == "failed"]
    failed_keys = set((f["recipe"], f["peer"], f.get("clients")) for f in failed)

    desc, kernel = machine()
    vers = versions(a.srvr)
    started = a.started or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    L = []
    L.append("# Benchmarks: zk-recipes, Apache Curator, kazoo and zookeeper-client")
    L.append("")
    L.append("Generated by `bash bench/compare.sh` (then `bench/report.py`); do not edit by hand. "
             "`bench/README.md` describes the drivers and their common contract.")
    L.append("")
    L.append("## Setting")
    L.append("")
    L.append("| | |")
    L.append("|---|---|")
    L.append(f"| date | {started} – {a.finished or '?'} (UTC), matrix {fmt_duration(a.elapsed)} |")
    L.append(f"| machine | {desc}; {kernel} |")
    L.append("| server | one standalone ZooKeeper on 127.0.0.1 (same machine as the clients), "
             "`forceSync=no`, `tickTime=2000` |")
    for k, v in vers.items():
        L.append(f"| {k} | {v} |")
    L.append(f"| runs | {a.seconds} s measured window after {a.warmup} s warm-up; {a.repeats} repeat(s), "
             f"interleaved; medians over repeats; semaphore leases {a.leases} |")
    L.append(f"| peers | {', '.join(peers) or 'none'} |")
    L.append("")
    absent = [p for p in PEER_ORDER if p not in peers_run and p not in unavailable]
    if unavailable or absent:
        L.append("Not measured in this run: " + "; ".join(
            [f"**{p}** ({m})" for p, m in sorted(unavailable.items())]
            + [f"**{p}** (not in `PEERS`)" for p in absent]) + ".")
        L.append("")
    L.append("How to read the tables: *ops/s* is the median over repeats of operations that started and "
             "finished inside the window, summed over all clients; *×Curator* is a peer's ops/s divided "
             "by Curator's at the same client count; *% raw* is the share of the raw floor "
             "(`zkr bench --recipe raw`: the plain ZooKeeper round trips of the same client count, "
             "without any recipe), shown when it was measured. Latency is from asking to holding "
             "(for the counter, the call), p50 / p99 in ms, medians over repeats. `–`: not measured; "
             "*n/a*: the peer has no such recipe; *failed*: every run of it failed (see the end); ⚠: some run had failed operations or violations "
             "(listed under the table).")
    L.append("")
    if os.path.exists(os.path.join(os.path.dirname(a.out), "results.svg")):
        L.append("![ops/s per recipe and client count](results.svg)")
        L.append("")

    if raw_floor:
        L.append("## Raw floor")
        L.append("")
        L.append("| clients | raw ops/s | p50 / p99 ms |")
        L.append("|--:|--:|--:|")
        for c in sorted(raw_floor):
            rs = [r for r in raw if r["clients"] == c]
            L.append(f"| {c} | {fmt_ops(raw_floor[c])} | {fmt_ms(median([r['p50_ms'] for r in rs]))} / "
                     f"{fmt_ms(median([r['p99_ms'] for r in rs]))} |")
        L.append("")

    for recipe in recipes:
        L.append(f"## {recipe}")
        L.append("")
        note = RECIPE_NOTES.get(recipe)
        if note:
            L.append(note.format(leases=a.leases))
            L.append("")
        clients = sorted(set(k[2] for k in by if k[0] == recipe))
        cols = [p for p in peers if p != "zookeeper-client" or recipe == "mutex"]
        L.append("| clients | " + " | ".join(f"{PEER_TITLES.get(p, p)} ops/s" for p in cols)
                 + (" | raw floor |" if raw_floor else " |"))
        L.append("|--:|" + "--:|" * len(cols) + ("--:|" if raw_floor else ""))
        lat_lines = []
        notes = []
        for c in clients:
            cur = median([r["ops_per_s"] for r in by.get((recipe, "curator", c), [])])
            floor = raw_floor.get(c)
            cells, lats = [], []
            for p in cols:
                rs = by.get((recipe, p, c), [])
                if not rs:
                    cell = "n/a" if (p, recipe) in unsupported else "failed" if (recipe, p, c) in failed_keys else "–"
                    cells.append(cell)
                    lats.append(cell)
                    continue
                ops = median([r["ops_per_s"] for r in rs])
                extra = []
                if cur and p != "curator":
                    extra.append(f"×{ops / cur:.2f}")
                if floor:
                    extra.append(f"{100 * ops / floor:.0f} % raw")
                flag = " ⚠" if any(r["violations"] or r["errors"] for r in rs) else ""
                cells.append(f"**{fmt_ops(ops)}**{flag}" + (f" ({' · '.join(extra)})" if extra else ""))
                lats.append(f"{fmt_ms(median([r['p50_ms'] for r in rs]))} / {fmt_ms(median([r['p99_ms'] for r in rs]))}")
                v = sum(r["violations"] for r in rs)
                e = sum(r["errors"] for r in rs)
                if v:
                    notes.append(f"**{v} violation(s)** for {p} at {c} clients")
                if e:
                    notes.append(f"{e} failed operation(s) for {p} at {c} clients "
                                 f"(over {len(rs)} run(s), {sum(r['ops'] for r in rs):,} counted)")
            L.append(f"| {c} | " + " | ".join(cells) + (f" | {fmt_ops(floor)} |" if raw_floor else " |"))
            lat_lines.append(f"| {c} | " + " | ".join(lats) + " |")
        L.append("")
        L.append("p50 / p99 latency, ms:")
        L.append("")
        L.append("| clients | " + " | ".join(PEER_TITLES.get(p, p) for p in cols) + " |")
        L.append("|--:|" + "--:|" * len(cols))
        L.extend(lat_lines)
        L.append("")
        for p in cols:
            if (p, recipe) in unsupported:
                notes.append(f"{p}: not supported — {unsupported[(p, recipe)].removeprefix('kazoo_bench: ')}")
        if notes:
            L.extend(f"- {n}" for n in notes)
        else:
            L.append("- No violation and no failed operation in any run.")
        L.append("")

    if drains:
        L.append("## Drain: queued waiters handing one lock on")
        L.append("")
        L.append(f"W waiters queue on one mutex behind a holder (over {a.drain_clients} session(s) per peer); "
                 "the clock starts when the holder releases and stops when the last waiter has held and "
                 "released the lock. *per handoff* = total / W; wait p50 / p99 = time from the holder's "
                 "release until a waiter held the lock. Medians over repeats.")
        L.append("")
        L.append("| waiters | peer | total ms | per handoff ms | wait p50 / p99 ms | runs |")
        L.append("|--:|---|--:|--:|--:|--:|")
        dby = defaultdict(list)
        for r in drains:
            dby[(r.get("waiters", r["ops"]), r["peer"])].append(r)
        for (w, p) in sorted(dby, key=lambda k: (k[0], peer_rank(k[1]))):
            rs = dby[(w, p)]
            bad = sum(r["violations"] + r["errors"] for r in rs)
            L.append(f"| {w:,} | {PEER_TITLES.get(p, p)} | {fmt_ms(median([r['total_ms'] for r in rs]))} | "
                     f"{median([r['per_handoff_ms'] for r in rs]):.3f} | "
                     f"{fmt_ms(median([r['p50_ms'] for r in rs]))} / {fmt_ms(median([r['p99_ms'] for r in rs]))} | "
                     f"{len(rs)}{' (!! ' + str(bad) + ' violations/errors)' if bad else ''} |")
        L.append("")

    if memory:
        L.append("## Memory: waiters on one lock over one session")
        L.append("")
        L.append("Resident memory of one `zkr bench --recipe waiters-memory` process holding W queued waiters "
                 "on one lock over one session.")
        L.append("")
        L.append("| peer | waiters | RSS MB |")
        L.append("|---|--:|--:|")
        for r in memory:
            L.append(f"| {PEER_TITLES.get(r['peer'], r['peer'])} | {r['waiters']:,} | {r['rss_mb']} |")
        L.append("")

    L.extend(cache_section(rows))

    if failed:
        L.append("## Failed runs")
        L.append("")
        L.append("Not in the medians above; their stderr is in the log named.")
        L.append("")
        for f in failed:
            L.append(f"- {f['peer']} {f['recipe']} at {f.get('clients', '?')} clients, repeat "
                     f"{f.get('repeat', '?')}: exit {f.get('exit')} (`{f.get('log', '')}`)")
        L.append("")
    return "\n".join(L).rstrip() + "\n"


CACHE_RECIPES = ("cache-load", "cache_load", "cache-delay", "cache_delay")
CACHE_BEGIN = "<!-- cache section: begin -->"
CACHE_END = "<!-- cache section: end -->"


def spread(values, fmt="{:,.0f}"):
    """median (min–max) of the values."""
    if not values:
        return "–"
    m = median(values)
    if len(values) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def ratio_spread(ours, theirs):
    """Curator / zk-recipes per repeat (paired by order): median (min–max)."""
    rs = [t / o for o, t in zip(ours, theirs) if o > 0]
    return spread(rs, "{:.2f}") if rs else "–"


def cache_section(rows, header=None):
    loads = [r for r in rows if r.get("recipe") in ("cache-load", "cache_load")]
    delays = [r for r in rows if r.get("recipe") in ("cache-delay", "cache_delay")]
    if not loads and not delays:
        return []
    L = [CACHE_BEGIN, "## Caches: zk-recipes `Cache::tree` and Curator's `CuratorCache`", ""]
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
                    L.append(f"| {n:,} | {PEER_TITLES.get(p, p)} | **never complete** in {len(incomplete)} of {len(rs)} "
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
                L.append(f"| {n:,} | {PEER_TITLES.get(p, p)} | {spread([r['load_ms'] for r in rs])} | {lr} | "
                         f"{spread([r['rss_delta_mb'] for r in rs], '{:,.1f}')} | {mr} | "
                         f"{spread([r['rss_mb'] for r in rs], '{:,.1f}')} | {heap if p != 'zk-recipes' else ''} | {len(rs)} |")
        early = [r for r in loads if r.get("at_initialized", r["nodes"]) < r["nodes"] and r.get("complete", 1) != 0]
        if early:
            L.append(f"- **Early Initialized** (CURATOR-690) in {len(early)} run(s): " + "; ".join(
                f"{PEER_TITLES.get(r['peer'], r['peer'])} at {r['nodes']:,} nodes held {r['at_initialized']:,} at "
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
            L.append(f"| {PEER_TITLES.get(p, p)} | {spread([r['ops'] for r in rs])} | "
                     f"{spread([r['p50_ms'] for r in rs], '{:.2f}')} | {spread([r['p99_ms'] for r in rs], '{:.2f}')} | "
                     f"{pr} | {sum(r.get('missed', 0) for r in rs):,.0f} | {sum(r['errors'] for r in rs)} | {len(rs)} |")
        L.append("")
    L.append(CACHE_END)
    L.append("")
    return L


def splice_cache_section(a):
    """CACHE_ONLY runs: replace (or append) only the cache section of an existing report."""
    rows = read_jsonl(a.results)
    header = [f"Measured {a.started} – {a.finished} by `CACHE_ONLY=1 bash bench/compare.sh` on its own server "
              f"(same setting as above), {a.repeats} repeat(s), interleaved.", ""]
    section = "\n".join(cache_section(rows, header))
    old = open(a.out, encoding="utf-8").read() if os.path.exists(a.out) else ""
    if CACHE_BEGIN in old and CACHE_END in old:
        head, rest = old.split(CACHE_BEGIN, 1)
        tail = rest.split(CACHE_END, 1)[1].lstrip("\n")
        text = head + section + tail
    else:
        marker = "\n## Failed runs"
        text = old.replace(marker, "\n" + section + marker, 1) if marker in old else old.rstrip("\n") + "\n\n" + section
    return text


def peer_rank(p):
    return PEER_ORDER.index(p) if p in PEER_ORDER else len(PEER_ORDER)


def fmt_duration(s):
    try:
        s = int(s)
    except (TypeError, ValueError):
        return "?"
    return f"{s // 60} min {s % 60} s"


def main(argv):
    if argv[:1] == ["--check-line"]:
        if len(argv) != 4:
            print("usage: report.py --check-line PEER RECIPE CLIENTS < output", file=sys.stderr)
            return 64
        try:
            print(check_line(argv[1], argv[2], argv[3], sys.stdin.read()))
        except (ValueError, KeyError, TypeError) as e:
            print(f"report.py: the driver's output breaks the contract: {e}", file=sys.stderr)
            return 1
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=os.path.join(ROOT, "bench", "out", "results.jsonl"))
    p.add_argument("--failures", default=os.path.join(ROOT, "bench", "out", "failures.jsonl"))
    p.add_argument("--srvr", default=os.path.join(ROOT, "bench", "out", "srvr.txt"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    p.add_argument("--started", default="")
    p.add_argument("--finished", default="")
    p.add_argument("--elapsed", default="")
    p.add_argument("--seconds", default="?")
    p.add_argument("--warmup", default="?")
    p.add_argument("--repeats", default="?")
    p.add_argument("--leases", default="2")
    p.add_argument("--peers", default="")
    p.add_argument("--drain-clients", default="1")
    p.add_argument("--cache-only", action="store_true", help="replace only the cache section of --out")
    a = p.parse_args(argv)
    text = splice_cache_section(a) if a.cache_only else build_report(a)
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
