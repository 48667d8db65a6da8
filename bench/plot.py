#!/usr/bin/env python3
"""Plots bench/rma_run.sh's rma.dat as an SVG: write and read bandwidth
against transfer size (log-log) for oxfabric, upstream shm and the
ceilings (memcpy, process_vm_writev/readv, and both processes copying
halves with them at once), and oxfabric with its bulk copies
staged through shared memory (FI_OXSHM_CMA=0). Standard library only.

Usage: bench/plot.py rma.dat out.svg
"""
import math
import sys

SERIES = [
    # column, label, colour, dash
    (1, "oxfabric write", "#1f77b4", ""),
    (2, "oxfabric read", "#1f77b4", "6,3"),
    (3, "upstream shm write", "#d62728", ""),
    (4, "upstream shm read", "#d62728", "6,3"),
    (5, "memcpy (one thread)", "#7f7f7f", "2,2"),
    (6, "process_vm_writev", "#2ca02c", ""),
    (7, "process_vm_readv", "#2ca02c", "6,3"),
    (8, "oxfabric staged write", "#9467bd", ""),
    (9, "oxfabric staged read", "#9467bd", "6,3"),
    (10, "two processes, halves", "#ff7f0e", "2,2"),
]

W, H = 760, 460
L, R, T, B = 70, 210, 30, 50


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            rows.append([float(x) for x in line.split()])
    return rows


def size_label(n):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{int(n // k)} {unit}"
    return f"{int(n)} B"


def main(src, dst):
    rows = load(src)
    xs = [r[0] for r in rows]
    vals = [v for r in rows for v in r[1:] if v > 0 and not math.isnan(v)]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs))
    y0 = math.floor(math.log10(min(vals)))
    y1 = math.ceil(math.log10(max(vals)))

    def px(x):
        return L + (math.log10(x) - x0) / (x1 - x0) * (W - L - R)

    def py(y):
        return T + (y1 - math.log10(y)) / (y1 - y0) * (H - T - B)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{L}" y="18" font-size="14">RMA bandwidth between two processes '
        f"(GB/s, log scale)</text>",
    ]
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 8}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
    for x in xs:
        out.append(f'<line x1="{px(x):.1f}" y1="{T}" x2="{px(x):.1f}" y2="{H - B}" stroke="#eee"/>')
        out.append(
            f'<text x="{px(x):.1f}" y="{H - B + 18}" text-anchor="middle">{size_label(x)}</text>'
        )
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 10}" text-anchor="middle">transfer size</text>')
    for i, (col, label, colour, dash) in enumerate(SERIES):
        pts = [
            (px(r[0]), py(r[col]))
            for r in rows
            if col < len(r) and r[col] > 0 and not math.isnan(r[col])
        ]
        if not pts:
            continue
        d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        width = 2.5 if col <= 2 else 1.5
        out.append(
            f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="{width}"{extra}/>'
        )
        ly = T + 10 + i * 20
        out.append(
            f'<line x1="{W - R + 15}" y1="{ly}" x2="{W - R + 45}" y2="{ly}" stroke="{colour}" '
            f'stroke-width="{width}"{extra}/>'
        )
        out.append(f'<text x="{W - R + 52}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
