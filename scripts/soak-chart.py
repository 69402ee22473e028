#!/usr/bin/env python3
"""Renders the soak's samples (tests/soak, scripts/soak.sh) as an SVG of small charts, one per
sampled quantity, against minutes into the run. Standard library only.

    python3 scripts/soak-chart.py target/soak-hour/soak.csv docs/soak.svg
"""
import csv
import sys

PANELS = [
    ("rss_kib", "RSS (MiB)", 1 / 1024),
    ("fds", "open file descriptors", 1),
    ("tasks", "live tokio tasks", 1),
    ("watches", "server watches", 1),
    ("znodes", "server znodes", 1),
    ("ephemerals", "ephemeral nodes", 1),
    ("lock_cycles", "lock cycles (thousands)", 1 / 1000),
    ("elections", "leader elections", 1),
    ("expiries", "session expiries / connection cuts", 1),
]
W, H, PAD, COLS = 300, 170, 42, 3


def upper(v):
    """A round number at or above v."""
    if v <= 0:
        return 1.0
    mag = 1.0
    while mag * 10 <= v:
        mag *= 10
    while mag > v:
        mag /= 10
    for k in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if k * mag >= v:
            return k * mag
    return 10 * mag


def panel(rows, key, title, scale, x0, y0, xmax):
    out = [f'<g transform="translate({x0},{y0})">']
    out.append(f'<text x="{W / 2}" y="14" text-anchor="middle" font-size="12">{title}</text>')
    iw, ih = W - PAD - 10, H - 50
    ox, oy = PAD, 24
    series = [(key, "#1f77b4")]
    if key == "expiries":
        series.append(("cuts", "#d62728"))
    ys = [float(r[k]) * scale for k, _ in series for r in rows]
    ymax = upper(max(ys) if ys else 1)
    out.append(f'<rect x="{ox}" y="{oy}" width="{iw}" height="{ih}" fill="none" stroke="#999"/>')
    for i in range(5):
        v = ymax * i / 4
        y = oy + ih - ih * i / 4
        out.append(f'<line x1="{ox}" x2="{ox + iw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        label = f"{v:.0f}" if ymax >= 8 else f"{v:.2g}"
        out.append(f'<text x="{ox - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{label}</text>')
    for i in range(5):
        v = xmax * i / 4
        x = ox + iw * i / 4
        out.append(f'<text x="{x:.1f}" y="{oy + ih + 13}" text-anchor="middle" font-size="10">{v:.0f}</text>')
    for k, colour in series:
        pts = " ".join(
            f"{ox + iw * float(r['seconds']) / 60 / xmax:.1f},{oy + ih - ih * float(r[k]) * scale / ymax:.1f}" for r in rows
        )
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
    out.append("</g>")
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{src}: no samples")
    xmax = max(1.0, max(float(r["seconds"]) for r in rows) / 60)
    rows_n = (len(PANELS) + COLS - 1) // COLS
    width, height = COLS * W, rows_n * H + 30
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle" font-size="12">'
        "minutes into the soak (expiries: blue, cuts: red)</text>",
    ]
    for i, (key, title, scale) in enumerate(PANELS):
        svg += panel(rows, key, title, scale, (i % COLS) * W, (i // COLS) * H, xmax)
    svg.append("</svg>")
    with open(dst, "w") as f:
        f.write("\n".join(svg) + "\n")
    print(f"{dst}: {len(rows)} samples")


if __name__ == "__main__":
    main()
