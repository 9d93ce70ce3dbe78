"""scripts/scaling_figure.py: docs/performance.md's scaling curve from `railpath bench` lines and
scripts/htsim-scale.sh's (issue 29)."""

from __future__ import annotations

import json
import pathlib

import pytest


def lines(path: pathlib.Path, rows: list[dict[str, object]]) -> pathlib.Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_series_by_kind_sorted_by_flows(tmp_path: pathlib.Path, script) -> None:
    f = script("scaling_figure")
    src = lines(
        tmp_path / "s.jsonl",
        [
            {"case": "scale-tcp-1000-cubic-shared-link-20s", "ns_per_packet": 94.2},
            {"case": "scale-tcp-1-cubic-shared-link-20s", "ns_per_packet": 55.0},
            {"case": "scale-mptcp-10-lia-minrtt-2-shared-links-20s", "ns_per_packet": 86.0},
            {"case": "htsim-tcp-10-newreno-shared-link-20s", "ns_per_packet": 89.5},
            {"case": "htsim-tcp-1-newreno-shared-link-20s", "ns_per_packet": 93.0},
            # Not a scaling case: left out.
            {"case": "tcp-newreno-10mbps-10ms-100pkt-60s", "ns_per_packet": 50.7},
        ],
    )
    assert f.read(src) == {
        "tcp": [(1, 55.0), (1000, 94.2)],
        "mptcp": [(10, 86.0)],
        "htsim tcp": [(1, 93.0), (10, 89.5)],
    }


def test_htsim_drawn_dashed_and_labelled(tmp_path: pathlib.Path, script) -> None:
    f = script("scaling_figure")
    out = f.svg({"tcp": [(1, 55.0), (1000, 94.2)], "htsim tcp": [(1, 93.0), (1000, 215.5)]})
    polylines = [ln for ln in out.splitlines() if ln.startswith("<polyline")]
    assert len(polylines) == 2
    assert sum("stroke-dasharray" in ln for ln in polylines) == 1
    assert "#7f7f7f" in next(ln for ln in polylines if "stroke-dasharray" in ln)
    assert "htsim, TCP NewReno: 1: 93, 1000: 216 ns" in out
    assert "railpath, TCP CUBIC: 1: 55, 1000: 94 ns" in out


def test_bad_line_named(tmp_path: pathlib.Path, script) -> None:
    f = script("scaling_figure")
    src = tmp_path / "bad.jsonl"
    src.write_text('{"case": "scale-tcp-1-x", "ns_per_packet": 55}\n{"case": "scale-tcp-10-x"}\n')
    with pytest.raises(SystemExit, match=r"bad\.jsonl: line 2: not a bench line"):
        f.read(src)
    odd = lines(tmp_path / "odd.jsonl", [{"case": "htsim-tcp-many", "ns_per_packet": 1.0}])
    with pytest.raises(SystemExit, match=r"odd\.jsonl: line 1: case 'htsim-tcp-many'"):
        f.read(odd)
    empty = lines(tmp_path / "none.jsonl", [{"case": "tcp-newreno", "ns_per_packet": 1.0}])
    with pytest.raises(SystemExit, match=r"no scale-\* or htsim-\* bench lines"):
        f.read(empty)
