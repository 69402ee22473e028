"""The contract check of one driver's output line (`report.py --check-line`)."""

import json

from report_fmt import fmt_ms

RUN_FIELDS = ("peer", "recipe", "clients", "seconds", "ops", "ops_per_s", "p50_ms", "p99_ms", "violations", "errors")
MEMORY_FIELDS = ("peer", "recipe", "waiters", "rss_mb")


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
    if recipe == "shedlock":
        summary = (f"{obj['ops_per_s']:,.1f} ticks/s decided by {obj.get('replicas', obj['clients'])} replicas, "
                   f"p50 {fmt_ms(obj['p50_ms'])} ms, p99 {fmt_ms(obj['p99_ms'])} ms")
    if recipe == "drain":
        summary = f"{obj['ops']} waiters in {obj['total_ms']:,.1f} ms ({obj['per_handoff_ms']} ms per handoff)"
    if recipe == "holders":
        for f in ("holders", "acquire_ms", "release_ms", "rss_mb"):
            if f not in obj:
                raise ValueError(f"holders needs {f}")
        summary = (f"{obj['ops']:,} of {obj['holders']:,} locks held, acquired in {obj['acquire_ms'] / 1000:,.1f} s, "
                   f"released in {obj['release_ms'] / 1000:,.1f} s, RSS {obj['rss_mb']:,.1f} MB"
                   + (f" ({obj['rss_kb_per_lock']:.2f} KB per lock)" if "rss_kb_per_lock" in obj else ""))
    if recipe == "entity":
        if "tasks" not in obj:
            raise ValueError("entity needs tasks")
        summary += f", {obj['tasks']} tasks on {obj.get('paths', '?')} entities"
        if obj.get("worker_ops_min") is not None and obj["ops"]:
            summary += f", slowest task {obj['worker_ops_min'] / (obj['ops'] / obj['tasks']):.2f} of the mean"
    if obj["violations"]:
        summary += f"  !! {obj['violations']} VIOLATIONS"
    if obj["errors"]:
        summary += f"  ({obj['errors']} errors)"
    return summary
