#!/usr/bin/env python3
"""The scaling curve of docs/performance.md as an SVG, from `railpath bench` lines.

    railpath bench --case scale- --repeat 3 > scale.jsonl
    scripts/scaling_figure.py scale.jsonl docs/img/scaling.svg

One line per scaling case (`scale-tcp-N-...`, `scale-mptcp-N-...`): the wall time per packet the
links carried (`ns_per_packet`) against the number of flows N, on a logarithmic N axis. Lines of
`scripts/htsim-scale.sh` (`htsim-tcp-N-...`) are drawn too, dashed, as htsim's curve. Standard
library only: the figure is a few lines and dots.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

WIDTH, HEIGHT = 560, 320
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 30, 50
COLOURS = {"tcp": "#1f77b4", "mptcp": "#d62728", "htsim tcp": "#7f7f7f"}
LABELS = {
    "tcp": "railpath, TCP CUBIC",
    "mptcp": "railpath, MPTCP LIA",
    "htsim tcp": "htsim, TCP NewReno",
}


def read(path: Path) -> dict[str, list[tuple[int, float]]]:
    """Series by kind (tcp, mptcp, htsim tcp): (flows, ns per packet), sorted by flows."""
    series: dict[str, list[tuple[int, float]]] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            case = str(row["case"])
            ns = float(row["ns_per_packet"])
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"{path}: line {n}: not a bench line with ns_per_packet: {e}") from e
        parts = case.split("-")
        if parts[0] not in ("scale", "htsim"):
            continue
        if len(parts) < 3 or not parts[2].isdigit():
            raise SystemExit(
                f"{path}: line {n}: case '{case}': expected {parts[0]}-KIND-FLOWS-..., "
                "FLOWS a whole number"
            )
        kind = parts[1] if parts[0] == "scale" else f"htsim {parts[1]}"
        series.setdefault(kind, []).append((int(parts[2]), ns))
    if not series:
        raise SystemExit(f"{path}: no scale-* or htsim-* bench lines")
    return {k: sorted(v) for k, v in series.items()}


def svg(series: dict[str, list[tuple[int, float]]]) -> str:
    flows = [f for pts in series.values() for f, _ in pts]
    ymax = max(ns for pts in series.values() for _, ns in pts) * 1.15
    lo, hi = math.log10(min(flows)), math.log10(max(flows))
    span = hi - lo or 1.0

    def x(f: int) -> float:
        return LEFT + (math.log10(f) - lo) / span * (WIDTH - LEFT - RIGHT)

    def y(ns: float) -> float:
        return HEIGHT - BOTTOM - ns / ymax * (HEIGHT - TOP - BOTTOM)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
        f'y2="{HEIGHT - BOTTOM}" stroke="black"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="black"/>',
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 12}" text-anchor="middle">'
        "flows (log scale)</text>",
        f'<text x="16" y="{(TOP + HEIGHT - BOTTOM) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 16 {(TOP + HEIGHT - BOTTOM) / 2})">wall ns per packet</text>',
    ]
    for f in sorted(set(flows)):
        out.append(
            f'<text x="{x(f):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{f}</text>'
        )
    step = 10 ** math.floor(math.log10(ymax / 2))
    tick = 0.0
    while tick <= ymax:
        out.append(f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += step if ymax / step <= 10 else 2 * step
    for i, (kind, pts) in enumerate(sorted(series.items(), reverse=True)):
        colour = COLOURS.get(kind, "black")
        path = " ".join(f"{x(f):.1f},{y(ns):.1f}" for f, ns in pts)
        dash = ' stroke-dasharray="6 4"' if kind.startswith("htsim") else ""
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        for f, ns in pts:
            out.append(f'<circle cx="{x(f):.1f}" cy="{y(ns):.1f}" r="3" fill="{colour}"/>')
        out.append(
            f'<text x="{LEFT + 10}" y="{TOP + 14 * i}" fill="{colour}">'
            f"{LABELS.get(kind, kind)}: {', '.join(f'{f}: {ns:.0f}' for f, ns in pts)} ns</text>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(f"usage: {argv[0]} BENCH.jsonl OUT.svg", file=sys.stderr)
        return 2
    Path(argv[2]).write_text(svg(read(Path(argv[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
