#!/usr/bin/env python3
"""Compare `railpath` builds on the bench cases, the way docs/performance.md measures them.

    scripts/bench_compare.py [-n N] [--case C]... [--repeat R] [--instructions] BIN [BIN...]

Each round runs every case once with every binary, the binaries alternated, so that what the
machine does over the minutes (other work, frequency, where memory lands) falls on all of them
alike; a binary's number for a case is the best of its N rounds (`railpath bench` itself keeps
the best of `--repeat` runs in one process). The first binary is the reference: the table gives
each other binary's time and how many times faster than the reference it is.

With `--instructions`, each binary's instruction count for each case, under valgrind
(`--tool=cachegrind --cache-sim=no`, the whole process, `--repeat 1`): counts are the same from
run to run, so one run each.

Cases are `railpath bench --case` filters (a substring of the case names; one filter may select
several cases). The default is issue 29's two bench cases, `tcp-newreno` (`--repeat 40`) and
`mptcp-lia-minrtt` (`--repeat 20`). For the scaling cases (`--case scale-`) the table gives ns
per packet and, per binary, the largest size's cost per packet over the smallest's.

Standard library only. Exit status 2 on bad arguments, 1 when a binary fails (its message is
shown).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

DEFAULT_CASES = [("tcp-newreno", 40), ("mptcp-lia-minrtt", 20)]
SCALE = re.compile(r"^scale-(?P<kind>[a-z]+)-(?P<n>\d+)-")
IREFS = re.compile(r"I\s+refs:\s+([\d,]+)")


class BenchError(Exception):
    """A binary that could not run a case: the message says which and why."""


@dataclass
class Best:
    """The best (least) numbers seen for one binary and one case."""

    wall_s: float = float("inf")
    ns_per_packet: float = float("inf")
    instructions: int | None = None

    def note(self, wall_s: float, ns_per_packet: float) -> None:
        self.wall_s = min(self.wall_s, wall_s)
        if not math.isnan(ns_per_packet):
            self.ns_per_packet = min(self.ns_per_packet, ns_per_packet)


@dataclass
class Results:
    """Best numbers by binary, then by case name, cases in the order first seen."""

    bins: list[str]
    cases: list[str] = field(default_factory=list)
    best: dict[tuple[str, str], Best] = field(default_factory=dict)

    def get(self, binary: str, case: str) -> Best:
        if case not in self.cases:
            self.cases.append(case)
        return self.best.setdefault((binary, case), Best())


def parse_bench_lines(text: str, binary: str) -> list[tuple[str, float, float]]:
    """(case, wall_s, ns_per_packet) of each JSON line `railpath bench` printed."""
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            # Builds older than the scaling cases print no `ns_per_packet`.
            ns = float(row.get("ns_per_packet", "nan"))
            rows.append((str(row["case"]), float(row["wall_s"]), ns))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise BenchError(
                f"{binary}: line {n} of its bench output is not a bench result "
                f"(expected a JSON object with case and wall_s): {e}: {line[:120]!r}"
            ) from e
    return rows


def run_bench(binary: str, case: str, repeat: int) -> list[tuple[str, float, float]]:
    """One invocation of `BIN bench --case CASE --repeat R`."""
    cmd = [binary, "bench", "--case", case, "--repeat", str(repeat)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise BenchError(
            f"{' '.join(cmd)} failed (exit status {p.returncode}): {p.stderr.strip()[-600:]}"
        )
    rows = parse_bench_lines(p.stdout, binary)
    if not rows:
        raise BenchError(f"{' '.join(cmd)} printed no result")
    return rows


def parse_irefs(text: str, what: str) -> int:
    """The `I refs` count in valgrind's summary."""
    m = IREFS.search(text)
    if not m:
        raise BenchError(f"{what}: no 'I refs' line in valgrind's output: {text.strip()[-400:]}")
    return int(m.group(1).replace(",", ""))


def count_instructions(binary: str, case: str) -> int:
    """Instructions of the whole process `BIN bench --case CASE --repeat 1` under cachegrind, for
    the one case the filter `case` (a case's full name) selects."""
    cmd = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        binary,
        "bench",
        "--case",
        case,
        "--repeat",
        "1",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise BenchError(
            f"{' '.join(cmd)} failed (exit status {p.returncode}): {p.stderr.strip()[-600:]}"
        )
    names = [name for name, _, _ in parse_bench_lines(p.stdout, binary)]
    if names != [case]:
        raise BenchError(f"{' '.join(cmd)} ran {names}, not the one case {case!r}")
    return parse_irefs(p.stderr, " ".join(cmd))


def measure(
    bins: list[str],
    cases: list[tuple[str, int]],
    rounds: int,
    instructions: bool,
    progress: bool = True,
) -> Results:
    """Every case with every binary, `rounds` times, alternated; then the instruction counts."""
    res = Results(bins=bins)
    for r in range(rounds):
        for case, repeat in cases:
            for b in bins:
                if progress:
                    print(f"round {r + 1}/{rounds}: {case} {b}", file=sys.stderr)
                for name, wall_s, ns in run_bench(b, case, repeat):
                    res.get(b, name).note(wall_s, ns)
    if instructions:
        # One process per case the filters selected, under its full name (a filter selecting
        # several cases would count them together).
        for name in res.cases:
            for b in bins:
                if (b, name) not in res.best:
                    continue
                if progress:
                    print(f"instructions: {name} {b}", file=sys.stderr)
                res.best[(b, name)].instructions = count_instructions(b, name)
    return res


def fmt_ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms"


def table(res: Results) -> str:
    """The results as a Markdown table, the first binary the reference."""
    ref = res.bins[0]
    head = ["case"]
    for i, b in enumerate(res.bins):
        head.append(os.path.basename(b) if i == 0 else f"{os.path.basename(b)} (vs first)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    scale = any(SCALE.match(c) for c in res.cases)
    for c in res.cases:
        base = res.best.get((ref, c))
        cells = [c]
        for i, b in enumerate(res.bins):
            x = res.best.get((b, c))
            if x is None:
                cells.append("")
                continue
            if SCALE.match(c) and math.isfinite(x.ns_per_packet):
                v = f"{x.ns_per_packet:.1f} ns/packet"
            else:
                v = fmt_ms(x.wall_s)
            if i > 0 and base is not None and x.wall_s > 0:
                v += f" ({base.wall_s / x.wall_s:.2f}x)"
            cells.append(v)
        lines.append("| " + " | ".join(cells) + " |")
        if any(res.best.get((b, c), Best()).instructions is not None for b in res.bins):
            cells = [f"{c}: instructions"]
            for i, b in enumerate(res.bins):
                x = res.best.get((b, c))
                n = x.instructions if x else None
                if n is None:
                    cells.append("")
                    continue
                v = f"{n:,}"
                bn = base.instructions if base else None
                if i > 0 and bn:
                    v += f" ({bn / n:.2f}x)"
                cells.append(v)
            lines.append("| " + " | ".join(cells) + " |")
    if scale:
        lines.append("")
        lines.extend(scaling_ratios(res))
    return "\n".join(lines)


def scaling_ratios(res: Results) -> list[str]:
    """Per binary and kind: the largest size's ns per packet over the smallest's."""
    out = []
    for b in res.bins:
        by_kind: dict[str, list[tuple[int, float]]] = {}
        for (bb, c), x in res.best.items():
            m = SCALE.match(c)
            if bb == b and m:
                by_kind.setdefault(m["kind"], []).append((int(m["n"]), x.ns_per_packet))
        for kind, pts in sorted(by_kind.items()):
            pts.sort()
            if len(pts) > 1 and 0 < pts[0][1] and math.isfinite(pts[-1][1]):
                curve = " / ".join(f"{ns:.1f}" for _, ns in pts)
                sizes = "/".join(str(n) for n, _ in pts)
                out.append(
                    f"{os.path.basename(b)} {kind} {sizes}: {curve} ns/packet, "
                    f"largest over smallest {pts[-1][1] / pts[0][1]:.2f}"
                )
    return out


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Compare railpath builds on the bench cases (alternated, best of N)."
    )
    ap.add_argument(
        "bins", nargs="+", metavar="BIN", help="railpath binaries; the first is the reference"
    )
    ap.add_argument("-n", "--rounds", type=int, default=5, help="rounds (default 5)")
    ap.add_argument(
        "--case",
        action="append",
        default=None,
        help="a `railpath bench --case` filter (repeatable; default: the two bench cases)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="runs per invocation (default 40 / 20, 3 for others)",
    )
    ap.add_argument(
        "--instructions", action="store_true", help="also count instructions under valgrind"
    )
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error(f"--rounds: expected at least 1, found {a.rounds}")
    if a.repeat is not None and a.repeat < 1:
        ap.error(f"--repeat: expected at least 1, found {a.repeat}")
    for b in a.bins:
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            ap.error(f"{b}: not an executable file (expected a railpath binary)")
    if a.instructions and shutil.which("valgrind") is None:
        ap.error("--instructions needs valgrind on the PATH (Debian: apt-get install valgrind)")
    return a


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    if a.case:
        default = dict(DEFAULT_CASES)
        cases = [(c, a.repeat or default.get(c, 3)) for c in a.case]
    else:
        cases = [(c, a.repeat or r) for c, r in DEFAULT_CASES]
    try:
        res = measure(a.bins, cases, a.rounds, a.instructions)
    except BenchError as e:
        print(f"bench_compare: {e}", file=sys.stderr)
        return 1
    print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
