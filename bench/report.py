#!/usr/bin/env python3
"""Turns bench/out/results.jsonl into bench/RESULTS.md (called by bench/compare.sh).

    report.py [--results R] [--failures F] [--settings S] [--out bench/RESULTS.md] [...]
    report.py --check-line PEER RECIPE CLIENTS < one-driver-output

The report has a table of the performance issue's goals in every setting (report_goals.py),
then a section per setting (standalone or 3-node ensemble, data on disk or tmpfs; fsync on or
off), each with a summary table (the one for README), the goals checked per repeat, the
serial-write floors with the pipelined limits and a table per recipe (the per-entity mutex's
scaled by the limit of its T); then the drain, memory and holders tables (report_extras.py).
Every figure is the median over the interleaved repeats with its (min–max), ratios too
(computed per repeat, then the median and the range of those). Rows that did not run (a peer
or a recipe left out, unsupported or failed) leave empty cells and notes. The second form checks one
driver's stdout against the contract (exactly one JSON line with the contract's fields, for
the peer, recipe and client count asked) and prints a one-line summary; it exits 1 when the
output breaks the contract. Only the standard library is used.
"""

import argparse
import os
import sys
from collections import defaultdict
from datetime import datetime, timezone

from report_check import check_line
from report_goals import goal_lines, goals_overview
from report_env import machine, versions
from report_extras import (CACHE_BEGIN, CACHE_END, CACHE_RECIPES, cache_section, drain_section, holders_section,
                           memory_section, splice_cache_section)
from report_fmt import (PEER_ORDER, fmt_duration, fmt_ms, fmt_ops, fmt_ratio, peer_rank, read_jsonl,
                        spread, title)
from report_text import CEILING_NOTE, COUNTER_TASKS_NOTE, ENTITY_TABLE_NOTE, LIMIT_NOTE, RECIPE_NOTES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


RECIPE_ORDER = ("mutex", "entity", "rwlock", "semaphore", "semaphore_mutex", "counter", "shared_count",
                "double_barrier", "shedlock")
# How a recipe's operations are named where that is not "ops" (shedlock: one operation = one tick decided).
RECIPE_LABELS = {"shedlock": "shedlock (ticks/s)", "entity": "per-entity mutex"}
FLOORS = ("raw", "raw_set")
# The per-entity ceiling: the requests of an uncontended entity sale without a lock's logic
# (`raw_entity`, 1 client x T tasks), beside the limit of the same T.
CEILING = "raw_entity"
FLOOR_NAMES = {"raw": "create+delete", "raw_set": "setData", CEILING: "per-entity requests without a lock"}
# Which floor a recipe is measured against: a lock hand-off has a delete and a create on its
# path, a counter update one versioned write. The entity rows have their own reference: the
# pipelined create+delete limit of one session with the same T tasks (`raw`, 1 client x T).
FLOOR_OF = {"mutex": "raw", "rwlock": "raw", "semaphore": "raw", "semaphore_mutex": "raw",
            "counter": "raw_set", "shared_count": "raw_set"}
LIMIT_OF = {"entity": "raw"}
# The peers other peers' ops/s are divided by, where they ran the recipe.
BASELINES = {"mutex": ("curator", "zookeeper-client"), "entity": ("curator", "zookeeper-client")}
DEFAULT_BASELINES = ("curator",)
# Lines that are not matrix or floor runs (their own sections).
EXTRA_RECIPES = ("drain", "waiters_memory", "waiters-memory", "holders") + CACHE_RECIPES

# ------------------------------------------------------------------------------------------
# The runs, indexed


class Runs:
    """The result lines by (setting, recipe, clients, tasks, peer) and repeat."""

    def __init__(self, rows):
        self.by = defaultdict(dict)
        for r in rows:
            if r.get("recipe") in EXTRA_RECIPES or "ops_per_s" not in r:
                continue
            key = (r.get("setting", "?"), r["recipe"], r.get("clients", 1), int(r.get("tasks") or 1), r.get("peer", "?"))
            rep = r.get("repeat", len(self.by[key]) + 1)
            self.by[key][rep] = r

    def get(self, setting, recipe, clients, tasks, peer):
        return self.by.get((setting, recipe, clients, tasks, peer), {})

    def points(self, setting, recipe):
        """(clients, tasks) measured for a recipe, in order."""
        return sorted({(k[2], k[3]) for k in self.by if k[0] == setting and k[1] == recipe})

    def peers(self, setting, recipe):
        return sorted({k[4] for k in self.by if k[0] == setting and k[1] == recipe}, key=peer_rank)

    def recipes(self, setting):
        got = {k[1] for k in self.by if k[0] == setting and k[1] not in FLOORS and k[1] != CEILING}
        return [x for x in RECIPE_ORDER if x in got] + sorted(got - set(RECIPE_ORDER))

    def floor(self, setting, floor):
        """The reference floor per repeat: zk-recipes' 1-client run, else the fastest peer's."""
        ours = self.get(setting, floor, 1, 1, "zk-recipes")
        if ours:
            return {rep: r["ops_per_s"] for rep, r in ours.items()}, "zk-recipes"
        best = {}
        for (s, rec, c, t, _), reps in self.by.items():
            if s == setting and rec == floor and c == 1 and t == 1:
                for rep, r in reps.items():
                    best[rep] = max(best.get(rep, 0), r["ops_per_s"])
        return best, "the fastest peer's"

    def limit(self, setting, tasks):
        """The pipelined create+delete limit per repeat: zk-recipes' `raw`, 1 client x T tasks."""
        return ops_of(self.get(setting, "raw", 1, tasks, "zk-recipes"))

    def ceiling(self, setting, tasks):
        """The per-entity ceiling per repeat: zk-recipes' `raw_entity`, 1 client x T tasks."""
        return ops_of(self.get(setting, CEILING, 1, tasks, "zk-recipes"))

    def reference(self, setting, recipe, tasks):
        """What a recipe's point is scaled by: (column name, per-repeat ops/s), or (None, {})."""
        if recipe in LIMIT_OF:
            return "× limit", self.limit(setting, tasks)
        fl = FLOOR_OF.get(recipe)
        if fl:
            return f"× {FLOOR_NAMES[fl]} floor", self.floor(setting, fl)[0]
        return None, {}


def per_repeat(num, den):
    """num / den per repeat, for the repeats both have (den > 0)."""
    return [num[rep] / den[rep] for rep in sorted(num) if rep in den and den[rep] > 0]


def ops_of(reps):
    return {rep: r["ops_per_s"] for rep, r in reps.items()}


def flagged(reps):
    """⚠ when a run had violations or errors, or counted no operation at all."""
    return " ⚠" if any(r.get("violations") or r.get("errors") or not r.get("ops") for r in reps.values()) else ""


def slowest_worker(r):
    """The fewest operations one worker (a client, or a task of one) counted, over the mean of
    the run's workers: 1 is an even share, near 0 a worker that starved; None without the
    figure (one worker, or a driver that does not report it)."""
    workers = r.get("clients", 1) * int(r.get("tasks") or 1)
    if r.get("worker_ops_min") is None or workers < 2 or not r.get("ops"):
        return None
    return r["worker_ops_min"] / (r["ops"] / workers)


def point_label(clients, tasks, long=False):
    if tasks > 1:
        return f"1 session × {tasks} tasks" if long and clients == 1 else f"{clients} × {tasks} tasks"
    return str(clients)


# ------------------------------------------------------------------------------------------
# The sections of one setting


def summary(runs, s, label, peers, meta, extra_rows=()):
    """The README table of one setting: zk-recipes' ops/s beside the peers', its ratios."""
    L = [f"### Summary ({label})", ""]
    cols = [p for p in PEER_ORDER if p in peers] + sorted(set(peers) - set(PEER_ORDER))
    L.append("Operations per second, median (min–max) over the repeats; *×Curator* and *× floor* are "
             "zk-recipes' ops/s over Curator's and over the serial-write floor (create+delete for the locks, "
             "setData for the counters), computed per repeat; for the per-entity mutex *× floor* is "
             "*× limit*: over the pipelined create+delete limit of one session with the same T tasks.")
    L.append("")
    L.append("| recipe | clients | " + " | ".join(title(p) for p in cols) + " | ×Curator | × floor |")
    L.append("|---|--:|" + "--:|" * len(cols) + "--:|--:|")
    for floor in FLOORS:
        reps = {p: runs.get(s, floor, 1, 1, p) for p in cols}
        if any(reps.values()):
            L.append(f"| **{FLOOR_NAMES[floor]} floor** | 1 | "
                     + " | ".join(spread(list(ops_of(reps[p]).values()), fmt_ops) for p in cols) + " | | |")
    for floor, name in (("raw", "pipelined create+delete limit"), (CEILING, "per-entity ceiling (no lock)")):
        for c, t in runs.points(s, floor):
            if c == 1 and t > 1:
                reps = {p: runs.get(s, floor, 1, t, p) for p in cols}
                vs = spread(per_repeat(runs.ceiling(s, t), runs.limit(s, t)), fmt_ratio) if floor == CEILING else ""
                L.append(f"| **{name}** | {point_label(1, t, True)} | "
                         + " | ".join(spread(list(ops_of(reps[p]).values()), fmt_ops) if reps[p] else "–" for p in cols)
                         + f" | | {vs} |")
    for recipe in runs.recipes(s):
        for clients, tasks in runs.points(s, recipe):
            _, ref = runs.reference(s, recipe, tasks)
            reps = {p: runs.get(s, recipe, clients, tasks, p) for p in cols}
            ours = ops_of(reps.get("zk-recipes", {}))
            cur = ops_of(reps.get("curator", {}))
            cells = [spread(list(ops_of(reps[p]).values()), fmt_ops) + flagged(reps[p]) if reps[p] else "–"
                     for p in cols]
            L.append(f"| {RECIPE_LABELS.get(recipe, recipe)} | {point_label(clients, tasks, True)} | " + " | ".join(cells)
                     + f" | {spread(per_repeat(ours, cur), fmt_ratio)} | {spread(per_repeat(ours, ref), fmt_ratio)} |")
    L.append("")
    goals = goal_lines(runs, s, meta, extra_rows)
    if goals:
        L.append("Goals of the performance issue (issue 33) in this setting (per repeat):")
        L.append("")
        L.extend(goals)
        L.append("")
    return L


def floors_table(runs, s, label):
    order = FLOORS + (CEILING,)
    rows = sorted({(k[1], k[2], k[3], k[4]) for k in runs.by if k[0] == s and k[1] in order},
                  key=lambda k: (order.index(k[0]), k[2], k[1], peer_rank(k[3])))
    if not rows:
        return []
    L = [f"### Serial-write floors and the pipelined limit ({label})", ""]
    L.append("Plain requests of one session back to back, no recipe: *create+delete* (`raw`) creates an "
             "ephemeral node and deletes it (2 writes per operation), *setData* (`raw_set`) sets one node's data "
             "expecting the version the previous set returned (1 write per operation). A lock hand-off or a "
             "contended counter update needs at least one write on its critical path, so these are the physical "
             "reference of the recipe tables' *× floor*, which divide by zk-recipes' 1-client floor of the same "
             "repeat (*reference* below; the other clients' floors are shown beside it as a check). " + LIMIT_NOTE
             + " " + CEILING_NOTE)
    L.append("")
    L.append("| floor | clients | peer | ops/s | writes/s | × reference | p50 ms | p99 ms | runs |")
    L.append("|---|--:|---|--:|--:|--:|--:|--:|--:|")
    for floor, clients, tasks, peer in rows:
        reps = runs.get(s, floor, clients, tasks, peer)
        ops = list(ops_of(reps).values())
        per = 1 if floor == "raw_set" else 2
        if floor == CEILING:
            vs = spread(per_repeat(ops_of(reps), runs.limit(s, tasks)), fmt_ratio) + " of the limit"
            name = f"{FLOOR_NAMES[floor]}, ceiling"
        else:
            ref, who = runs.floor(s, floor)
            vs = ("reference" if (clients, tasks, peer) == (1, 1, who)
                  else spread(per_repeat(ops_of(reps), ref), fmt_ratio))
            name = FLOOR_NAMES[floor] if tasks == 1 else f"{FLOOR_NAMES[floor]}, pipelined limit"
        L.append(f"| {name} | {point_label(clients, tasks)} | {title(peer)} | {spread(ops, fmt_ops)}{flagged(reps)} | "
                 f"{spread([per * o for o in ops], fmt_ops)} | {vs} | "
                 f"{spread([r.get('p50_ms') for r in reps.values()], fmt_ms)} | "
                 f"{spread([r.get('p99_ms') for r in reps.values()], fmt_ms)} | {len(reps)} |")
    L.append("")
    return L


def recipe_table(runs, s, label, recipe, unsupported, failed, notes_text):
    L = [f"### {RECIPE_LABELS.get(recipe, recipe)} ({label})", ""]
    if notes_text:
        L.append(notes_text)
        L.append("")
    peers = runs.peers(s, recipe)
    bases = [b for b in BASELINES.get(recipe, DEFAULT_BASELINES) if b in peers]
    points = runs.points(s, recipe)
    refs = {(c, t): runs.reference(s, recipe, t) for c, t in points}
    ref_name = next((n for n, r in refs.values() if n and r), None)
    by_tasks = recipe in LIMIT_OF  # one session, T tasks: the first column is T
    head = ("| tasks" if by_tasks else "| clients") + " | peer | ops/s | " + "".join(f"×{title(b)} | " for b in bases)
    head += f"{ref_name} | " if ref_name else ""
    ceilings = {t: runs.ceiling(s, t) for c, t in points} if recipe in LIMIT_OF else {}
    has_ceiling = any(ceilings.values())
    head += "× ceiling | " if has_ceiling else ""
    fair = any(slowest_worker(r) is not None for c, t in points for p in peers
               for r in runs.get(s, recipe, c, t, p).values())
    head += "slowest worker | " if fair else ""
    head += "p50 ms | p99 ms | runs |"
    L.append(head)
    L.append("|--:|---|--:|" + "--:|" * (len(bases) + (1 if ref_name else 0) + has_ceiling + fair) + "--:|--:|--:|")
    notes = []
    for clients, tasks in points:
        ref = refs[(clients, tasks)][1]
        for p in peers:
            reps = runs.get(s, recipe, clients, tasks, p)
            if not reps:
                continue
            ops = ops_of(reps)
            cells = [f"**{spread(list(ops.values()), fmt_ops)}**{flagged(reps)}"]
            for b in bases:
                other = ops_of(runs.get(s, recipe, clients, tasks, b))
                cells.append(spread(per_repeat(ops, other), fmt_ratio) if b != p else "")
            if ref_name:
                cells.append(spread(per_repeat(ops, ref), fmt_ratio))
            if has_ceiling:
                cells.append(spread(per_repeat(ops, ceilings[tasks]), fmt_ratio))
            if fair:
                cells.append(spread([slowest_worker(r) for r in reps.values()], fmt_ratio))
            cells.append(spread([r.get("p50_ms") for r in reps.values()], fmt_ms))
            cells.append(spread([r.get("p99_ms") for r in reps.values()], fmt_ms))
            first = str(tasks) if by_tasks and clients == 1 else point_label(clients, tasks)
            L.append(f"| {first} | {title(p)} | " + " | ".join(cells) + f" | {len(reps)} |")
            v = sum(r.get("violations", 0) for r in reps.values())
            e = sum(r.get("errors", 0) for r in reps.values())
            at = f"{p} at {point_label(clients, tasks)} clients" if tasks == 1 else f"{p} with {point_label(clients, tasks)}"
            if v:
                what = " (entities whose stock did not end exact)" if recipe == "entity" else ""
                notes.append(f"**{v} violation(s)**{what} for {at}")
            if e:
                notes.append(f"{e} failed operation(s) for {at} (over {len(reps)} run(s), "
                             f"{sum(r.get('ops', 0) for r in reps.values()):,} counted)")
            empty = sorted(rep for rep, r in reps.items() if not r.get("ops"))
            if empty:
                notes.append(f"no operation of {at} finished inside the window in repeat(s) "
                             f"{', '.join(map(str, empty))} (counted as 0 ops/s)")
    if ref_name and not all(r for _, r in refs.values()):
        notes.append(f"{ref_name}: no reference run for some points (left empty)")
    L.append("")
    for p in PEER_ORDER:
        if (p, recipe) in unsupported:
            notes.append(f"{p}: not supported — {unsupported[(p, recipe)].removeprefix('kazoo_bench: ')}")
    notes.extend(failed_notes(failed, s, recipe))
    if notes:
        L.extend(f"- {n}" for n in notes)
    else:
        L.append("- No violation and no failed operation in any run.")
    L.append("")
    return L


def failed_notes(failed, s, recipe):
    """One note per peer and point whose runs failed, with the repeats."""
    by = defaultdict(list)
    for f in failed:
        if f.get("setting", "?") == s and f.get("recipe") == recipe:
            point = f"with {f['args']}" if f.get("args") else f"at {f.get('clients', '?')} clients"
            by[(f.get("peer", "?"), point)].append(str(f.get("repeat", "?")))
    return [f"{peer} {point}: run failed in repeat(s) {', '.join(reps)} (see *Failed runs*)"
            for (peer, point), reps in sorted(by.items(), key=lambda k: (peer_rank(k[0][0]), k[0][1]))]


# ------------------------------------------------------------------------------------------
# The report


def settings_meta(path, rows):
    """The settings in run order: key -> metadata (label, servers, times)."""
    meta = {}
    for m in read_jsonl(path):
        meta[m["key"]] = m
    for r in rows:
        s = r.get("setting", "?")
        if s not in meta:
            meta[s] = {"key": s, "label": "setting not recorded" if s == "?" else s}
    return meta


def storage_text(m):
    """Where a setting's servers kept their data: the file system, the directory, the storage."""
    fs = m.get("fs", "?")
    where = f"{fs}" + (f" (`{m['dir']}`)" if m.get("dir") else "")
    if m.get("storage") == "tmpfs" or fs == "tmpfs":
        return f"data and logs on {where}: memory, fsync nearly free, CPU-bound"
    return f"data and logs on {where}" + (": a disk, every commit waits for its fsync" if m.get("storage") == "disk" else "")


def build_report(a):
    rows = read_jsonl(a.results)
    failures = read_jsonl(a.failures)
    meta = settings_meta(a.settings, rows)
    runs = Runs(rows)
    unsupported = {(f["peer"], f["recipe"]): f.get("message", "") for f in failures if f.get("status") == "unsupported"}
    unavailable = {f["peer"]: f.get("message", "") for f in failures if f.get("status") == "unavailable"}
    failed = [f for f in failures if f.get("status") == "failed"]
    peers_run = {r["peer"] for r in rows if "peer" in r}

    def extra_rows_of(s):
        return [r for r in rows if r.get("setting", "?") == s and r.get("recipe") in EXTRA_RECIPES]

    desc, kernel = machine()
    first = next(iter(meta), None)
    vers = versions(os.path.join(os.path.dirname(a.results), f"srvr-{first}.txt") if first else "")
    started = a.started or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    L = ["# Benchmarks: zk-recipes, Apache Curator, kazoo and zookeeper-client", ""]
    L.append("Generated by `bash bench/compare.sh` (then `bench/report.py`); do not edit by hand. "
             "`bench/README.md` describes the settings, the drivers and their common contract.")
    L.append("")
    L.append("## Setting")
    L.append("")
    L.append("| | |")
    L.append("|---|---|")
    L.append(f"| date | {started} – {a.finished or '?'} (UTC), {fmt_duration(a.elapsed)} in all |")
    L.append(f"| machine | {desc}; {kernel} |")
    for key, m in meta.items():
        where = f"{m.get('connect', '?')}" + (f", leader {m['leader']}" if m.get("leader") else "")
        grown = f"; the servers' data grew to {m['data_mb']:,} MB" if m.get("data_mb") is not None else ""
        L.append(f"| server: **{m['label']}** | ZooKeeper on 127.0.0.1 ({where}), same machine as the clients, "
                 f"`tickTime=2000`, {storage_text(m)}; "
                 f"{m.get('started', '?')} – {m.get('finished', '?')}, {fmt_duration(m.get('elapsed'))}, "
                 f"{m.get('runs', '?')} runs{grown} |")
    for k, v in vers.items():
        L.append(f"| {k} | {v} |")
    paths = sorted({r.get("paths") for r in rows if r.get("recipe") == "entity" and r.get("paths")})
    entity_txt = f"; per-entity mutex over {', '.join(f'{int(p):,}' for p in paths)} entities" if paths else ""
    L.append(f"| runs | {a.seconds} s measured window after {a.warmup} s warm-up; {a.repeats} repeat(s) per setting, "
             f"interleaved; semaphore leases {a.leases}{entity_txt} |")
    warmed = ", ".join(f"{m['server_warmup']} s ({m['label']}"
                       + (f"; the JIT compilers at {m['jit_last']} % of a core in the last part" if m.get("jit_last") is not None
                          else "") + ")"
                       for m in meta.values() if "server_warmup" in m)
    bounds = f"at least {a.server_warmup} s (at most {a.server_warmup_max} s)"
    if a.server_warmup_tmpfs != "?":
        bounds = (f"at least {a.server_warmup} s on disk, {a.server_warmup_tmpfs} s on tmpfs (at most "
                  f"{a.server_warmup_max} s and {a.server_warmup_max_tmpfs} s)")
    L.append(f"| server warm-up | untimed load (zkr: raw, mutex at 16, counter at 16, raw 1 × 64 tasks; then mutex, "
             f"counter and raw × 64 in turn) on each setting's fresh servers before the first repeat: {bounds}, "
             f"continued in parts of 12 s while the servers' JIT compiler threads used {a.jit_quiet} % of one core "
             f"or more in the part before{': ' + warmed if warmed else ''} |")
    L.append(f"| peers | {', '.join(p for p in PEER_ORDER if p in peers_run) or 'none'} |")
    L.append("")
    absent = [p for p in PEER_ORDER if p not in peers_run and p not in unavailable]
    if unavailable or absent:
        L.append("Not measured in this run: " + "; ".join(
            [f"**{p}** ({m})" for p, m in sorted(unavailable.items())]
            + [f"**{p}** (not in `PEERS`)" for p in absent]) + ".")
        L.append("")
    L.append("How to read the tables: every figure is the **median over the repeats with (min–max)**; ratios are "
             "computed per repeat (interleaved runs of the same repeat) and shown the same way, so a margin whose "
             "range crosses 1 is inside the noise. *ops/s* counts operations that started and finished inside "
             "the window, summed over all clients; *×Curator* (*×zookeeper-client*) is a peer's ops/s over "
             "that peer's at the same point; *× floor* is the share of the serial-write floor of the same setting "
             "and repeat (create+delete for the locks, setData for the counters; see each setting's floor "
             "table); *× limit* (per-entity mutex) the share of the pipelined create+delete limit of one session "
             "with the same T tasks, same setting and repeat, and *× ceiling* its share of the same requests sent "
             "without a lock (the most any per-entity mutex can reach). *slowest worker* is the fewest operations one client "
             "(or one task, in the *tasks* rows) finished in the window, over the mean per worker: 1 is an even "
             "share, near 0 a worker that starved while the others made the ops/s. "
             "Latency is from asking to holding (for the counter, the call), p50 / p99 in ms. "
             "*n/a*: the peer has no such recipe; ⚠: some run had failed operations or violations, or counted "
             "no operation at all (listed under the table). With fsync on and data on a disk, the transaction log "
             "is synced before each commit: a shared or virtual disk moves every figure, so compare within one "
             "setting and one run. On tmpfs the sync is nearly free and the servers' and clients' CPU (2 cores "
             "shared by all) is the limit.")
    L.append("")
    if os.path.exists(os.path.join(os.path.dirname(a.out), "results.svg")) and first:
        L.append(f"![ops/s per recipe and client count ({meta[first]['label']})](results.svg)")
        L.append("")

    L.extend(goals_overview(runs, meta, extra_rows_of))

    L.append("## What is measured")
    L.append("")
    for recipe in RECIPE_ORDER:
        if any(k[1] == recipe for k in runs.by):
            L.append(f"- **{RECIPE_LABELS.get(recipe, recipe).removesuffix(' (ticks/s)')}**: "
                     + RECIPE_NOTES[recipe].format(leases=a.leases))
    if any(k[1] == "counter" and k[3] > 1 for k in runs.by):
        L.append(f"- {COUNTER_TASKS_NOTE}")
    if any(k[1] == "raw" and k[3] > 1 for k in runs.by):
        L.append(f"- *pipelined create+delete limit*: {LIMIT_NOTE}")
    if any(r.get("recipe") == "holders" for r in rows):
        L.append(f"- **holders**: {RECIPE_NOTES['holders']}")
    L.append("")

    for key, m in meta.items():
        label = m["label"]
        if not any(k[0] == key for k in runs.by):
            continue
        L.append(f"## {label[0].upper() + label[1:]}")
        L.append("")
        L.extend(summary(runs, key, label, sorted({k[4] for k in runs.by if k[0] == key}, key=peer_rank), meta,
                         extra_rows_of(key)))
        L.extend(floors_table(runs, key, label))
        for recipe in runs.recipes(key):
            L.extend(recipe_table(runs, key, label, recipe, unsupported, failed,
                                  ENTITY_TABLE_NOTE if recipe == "entity" else ""))

    for key, m in meta.items():
        mine = extra_rows_of(key)
        L.extend(drain_section([r for r in mine if r.get("recipe") == "drain"], m["label"], a.drain_clients))
        L.extend(memory_section([r for r in mine if r.get("recipe") in ("waiters_memory", "waiters-memory")],
                                m["label"]))
        L.extend(holders_section([r for r in mine if r.get("recipe") == "holders"], m["label"],
                                 [f for f in failed if f.get("setting", "?") == key and f.get("recipe") == "holders"],
                                 {p: msg for (p, rec), msg in unsupported.items() if rec == "holders"}))
    cache_rows = [r for r in rows if r.get("recipe") in CACHE_RECIPES]
    for key, m in meta.items():
        L.extend(cache_section([r for r in cache_rows if r.get("setting", "?") == key], m["label"]))
    if not cache_rows:
        L.extend(kept_cache_section(a.out))

    if failed:
        L.append("## Failed runs")
        L.append("")
        L.append("Not in the medians above; their stderr is in the log named.")
        L.append("")
        for f in failed:
            point = f"with {f['args']}" if f.get("args") else f"at {f.get('clients', '?')} clients"
            L.append(f"- {meta.get(f.get('setting', '?'), {}).get('label', f.get('setting', '?'))}: {f.get('peer', '?')} "
                     f"{f.get('recipe', '?')} {point}, repeat {f.get('repeat', '?')}: "
                     f"exit {f.get('exit')} (`{f.get('log', '')}`)")
        L.append("")
    return "\n".join(L).rstrip() + "\n"


def kept_cache_section(path):
    """The cache section of the report being replaced, kept as it is when this run has none."""
    try:
        old = open(path, encoding="utf-8").read()
    except OSError:
        return []
    if CACHE_BEGIN not in old or CACHE_END not in old:
        return []
    body = old.split(CACHE_BEGIN, 1)[1].split(CACHE_END, 1)[0].strip("\n")
    return [CACHE_BEGIN, body, "", CACHE_END, ""]


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
    out_dir = os.path.join(ROOT, "bench", "out")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=os.path.join(out_dir, "results.jsonl"))
    p.add_argument("--failures", default=os.path.join(out_dir, "failures.jsonl"))
    p.add_argument("--settings", default=os.path.join(out_dir, "settings.jsonl"))
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    p.add_argument("--started", default="")
    p.add_argument("--finished", default="")
    p.add_argument("--elapsed", default="")
    p.add_argument("--seconds", default="?")
    p.add_argument("--warmup", default="?")
    p.add_argument("--server-warmup", default="?")
    p.add_argument("--server-warmup-max", default="?")
    p.add_argument("--server-warmup-tmpfs", default="?")
    p.add_argument("--server-warmup-max-tmpfs", default="?")
    p.add_argument("--jit-quiet", default="?")
    p.add_argument("--repeats", default="?")
    p.add_argument("--leases", default="2")
    p.add_argument("--peers", default="")
    p.add_argument("--drain-clients", default="1")
    p.add_argument("--cache-only", action="store_true", help="replace only the cache section of --out")
    a = p.parse_args(argv)
    if a.cache_only:
        rows = read_jsonl(a.results)
        meta = settings_meta(a.settings, rows)
        key = next(iter(meta), "?")
        text = splice_cache_section(a, meta.get(key, {}).get("label", key), rows)
    else:
        text = build_report(a)
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
