"""The goals of the performance issue (issue 33), checked per setting and per repeat (used by
bench/report.py): a line per goal under each setting's summary, and one table of every goal
in every setting near the top of bench/RESULTS.md."""

from report_fmt import fmt_ratio, spread

# Ratio goals: (key, text, recipe, clients, tasks, against, at least, topologies or None for
# all, clean). `against` is "floor" (the recipe's serial-write floor, zk-recipes' 1-client run
# of the same repeat), "limit" (the pipelined create+delete limit, raw 1 client x the same
# tasks) or a peer (its ops/s at the same point and repeat). `clean`: a repeat meets the goal
# only when zk-recipes' run also had no failed operation and no violation.
RATIO_GOALS = (
    ("entity-curator", "per-entity mutex, 64 tasks ≥ 5 × Curator", "entity", 1, 64, "curator", 5.0, None, False),
    ("entity-limit", "per-entity mutex, 64 tasks ≥ 0.6 × the pipelined create+delete limit (1 session × 64 tasks)",
     "entity", 1, 64, "limit", 0.6, None, False),
    ("mutex-floor", "mutex at 16 clients ≥ 1.6 × the create+delete floor", "mutex", 16, 1, "floor", 1.6,
     ("standalone",), False),
    ("mutex-floor", "mutex at 16 clients ≥ 1.4 × the create+delete floor", "mutex", 16, 1, "floor", 1.4,
     ("ensemble",), False),
    ("semaphore-floor", "semaphore at 16 clients ≥ 1.0 × the create+delete floor", "semaphore", 16, 1, "floor", 1.0,
     None, False),
    ("counter-curator", "counter at 16 sessions ≥ 1.5 × Curator, with 0 errors and 0 violations", "counter", 16, 1,
     "curator", 1.5, None, True),
)
# Absolute goals of zk-recipes' extra runs: (key, text, recipe, size field, size, value, unit,
# at most, format).
ABSOLUTE_GOALS = (
    ("holders-rss", "100,000 held locks in ≤ 200 MB RSS", "holders", "holders", 100_000,
     lambda r: r.get("rss_mb"), "MB", 200.0, "{:,.1f}"),
    ("holders-acquire", "100,000 held locks acquired in ≤ 60 s", "holders", "holders", 100_000,
     lambda r: r["acquire_ms"] / 1000 if r.get("acquire_ms") is not None else None, "s", 60.0, "{:,.1f}"),
    ("memory-rss", "10,000 waiters in ≤ 30 MB RSS", "waiters-memory", "waiters", 10_000,
     lambda r: r.get("rss_mb"), "MB", 30.0, "{:,.1f}"),
)
GOAL_ORDER = ("entity-curator", "entity-limit", "mutex-floor", "semaphore-floor", "counter-curator", "holders-rss",
              "holders-acquire", "memory-rss")
OVERVIEW_TEXT = {
    "entity-curator": "per-entity mutex, 64 tasks ≥ 5 × Curator",
    "entity-limit": "per-entity mutex, 64 tasks ≥ 0.6 × the pipelined limit",
    "mutex-floor": "mutex at 16 clients ≥ 1.6 × (standalone) / 1.4 × (ensemble) the create+delete floor",
    "semaphore-floor": "semaphore at 16 clients ≥ 1.0 × the create+delete floor",
    "counter-curator": "counter at 16 sessions ≥ 1.5 × Curator, 0 errors, 0 violations",
    "holders-rss": "100,000 held locks in ≤ 200 MB RSS",
    "holders-acquire": "100,000 held locks acquired in ≤ 60 s",
    "memory-rss": "10,000 waiters in ≤ 30 MB RSS",
}


def topology(meta, s):
    return (meta.get(s, {}).get("setting") or s.split("-")[0]) if meta else s.split("-")[0]


def evaluate(runs, s, topo, extra_rows):
    """The goals that apply to setting s: dicts with key, text, values (per repeat or run),
    fmt, met, n, note; `values` is empty (and `note` says why) when a goal's rows are missing."""
    out = []
    for key, text, recipe, clients, tasks, against, least, topos, clean in RATIO_GOALS:
        if topos and topo not in topos:
            continue
        if not runs.points(s, recipe):
            continue  # the recipe did not run in this setting at all
        reps = runs.get(s, recipe, clients, tasks, "zk-recipes")
        if against == "floor":
            den = runs.reference(s, recipe, tasks)[1]
            what = "zk-recipes' create+delete floor"
        elif against == "limit":
            den = runs.limit(s, tasks)
            what = f"the pipelined limit (raw, 1 client × {tasks} tasks)"
        else:
            den = {rep: r["ops_per_s"] for rep, r in runs.get(s, recipe, clients, tasks, against).items()}
            what = f"{against}'s {recipe} runs at this point"
        g = {"key": key, "text": text, "values": [], "fmt": fmt_ratio, "met": 0, "n": 0, "note": ""}
        if not reps:
            g["note"] = f"not measured: no zk-recipes {recipe} run at this point"
        elif not den:
            g["note"] = f"not measured: {what} missing"
        else:
            for rep in sorted(reps):
                if rep not in den or den[rep] <= 0:
                    continue
                x = reps[rep]["ops_per_s"] / den[rep]
                ok = x >= least and not (clean and (reps[rep].get("errors") or reps[rep].get("violations")))
                g["values"].append(x)
                g["met"] += ok
                g["n"] += 1
            bad_v = sum(r.get("violations", 0) for r in reps.values())
            bad_e = sum(r.get("errors", 0) for r in reps.values())
            g["note"] = f"{bad_v} violation(s), {bad_e} error(s)" if bad_v or bad_e else "0 violations, 0 errors"
            if against == "limit":
                ceiling = runs.ceiling(s, tasks)
                shares = [ceiling[rep] / den[rep] for rep in sorted(ceiling) if den.get(rep, 0) > 0]
                if shares:
                    g["note"] += (f"; the same requests without a lock reach {spread(shares, fmt_ratio)} × the limit "
                                  "(the per-entity ceiling)")
            if not g["n"]:
                g["note"] = f"not measured: no repeat with both zk-recipes' run and {what}"
        out.append(g)
    for key, text, recipe, size_field, size, value, unit, most, fmt in ABSOLUTE_GOALS:
        rows = [r for r in extra_rows if r.get("peer") == "zk-recipes"
                and (r.get("recipe") or "").replace("_", "-") == recipe]
        if not rows:
            continue
        g = {"key": key, "text": text, "values": [], "fmt": lambda v, f=fmt, u=unit: f"{f.format(v)} {u}", "met": 0,
             "n": 0, "note": ""}
        at = [r for r in rows if (r.get(size_field) or 0) >= size]
        if not at:
            sizes = sorted({int(r.get(size_field) or 0) for r in rows})
            g["note"] = f"not measured at {size:,}: the runs had {', '.join(f'{x:,}' for x in sizes)}"
        for r in at:
            v = value(r)
            if v is None:
                continue
            whole = recipe != "holders" or (r.get("ops", 0) >= size and not r.get("violations"))
            g["values"].append(v)
            g["met"] += v <= most and whole
            g["n"] += 1
        if at:
            bad = sum(r.get("violations", 0) + r.get("errors", 0) for r in at)
            g["note"] = f"{bad} violation(s)/error(s)" if bad else "0 violations, 0 errors"
        out.append(g)
    return out


def goal_lines(runs, s, meta, extra_rows=()):
    L = []
    for g in evaluate(runs, s, topology(meta, s), extra_rows):
        if not g["n"]:
            L.append(f"- {g['text']}: {g['note']}")
            continue
        unit = "repeat(s)" if g["key"] not in ("holders-rss", "holders-acquire", "memory-rss") else "run(s)"
        L.append(f"- {g['text']}: **{spread(g['values'], g['fmt'])}**, met in {g['met']} of {g['n']} {unit}; "
                 f"{g['note']}")
    return L


def goals_overview(runs, meta, extra_rows_of):
    """One table: every goal (rows) in every setting (columns); `extra_rows_of(s)` gives a
    setting's drain/memory/holders lines."""
    cols, cells = [], {}
    for s, m in meta.items():
        got = evaluate(runs, s, topology(meta, s), extra_rows_of(s))
        if not got:
            continue
        cols.append((s, m.get("label", s)))
        for g in got:
            if g["n"]:
                cells[(g["key"], s)] = f"{spread(g['values'], g['fmt'])}: **{g['met']} of {g['n']}**"
            else:
                cells[(g["key"], s)] = "not measured"
    if not cols:
        return []
    L = ["## Goals of the performance issue (issue 33)", ""]
    L.append("Checked per repeat in each setting where the row runs (ratios computed per repeat: median (min–max) "
             "of the repeats, then in how many repeats the goal was met; the holders and memory goals per run). "
             "Each setting's summary repeats its lines with the violations and errors.")
    L.append("")
    L.append("| goal | " + " | ".join(label for _, label in cols) + " |")
    L.append("|---|" + "---|" * len(cols))
    for key in GOAL_ORDER:
        if any((key, s) in cells for s, _ in cols):
            L.append(f"| {OVERVIEW_TEXT[key]} | " + " | ".join(cells.get((key, s), "–") for s, _ in cols) + " |")
    L.append("")
    return L
