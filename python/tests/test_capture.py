"""Packet captures from Python (issue 30): `run(..., pcap=DIR)` and `analyze` give the CLI's
captures and analysis, as DataFrames, and the analysis agrees with the run's own summary."""

from __future__ import annotations

import json
import subprocess

import pytest

import railpath


def test_analysis_of_a_runs_capture_gives_its_counts_and_stream(root, tmp_path):
    sc = railpath.load(str(root / "scenarios/mptcp-backup-outage.toml"))
    r = railpath.run(sc, pcap=tmp_path / "caps")
    assert sorted(p.name for p in (tmp_path / "caps").iterdir()) == [
        "receiver.pcapng",
        "sender.pcapng",
    ]
    a = railpath.analyze(tmp_path / "caps", scenario=sc)
    run_flow = r.flows.iloc[0]
    flow = a.flows.iloc[0]
    assert flow["flow"] == "m" and flow["kind"] == "mptcp"
    for k in ("sent_packets", "retransmitted_packets", "delivered_bytes"):
        assert flow[k] == run_flow[k], k
    subs = a.subflows
    assert list(subs["subflow"]) == ["a", "b"]
    assert list(subs["sent_packets"]) == list(r.subflows["sent_packets"])
    assert subs["rtt_min_ms"].min() >= 50.0
    assert not a.stalls.empty and set(a.stalls.columns) == {"flow", "start_s", "duration_s"}
    assert list(a.mp_prio["backup"]) == [False, True]

    # The in-order stream, bin by bin, is the run's goodput series.
    def goodput(ts):
        sel = ts[(ts.metric == "goodput_bps") & (ts.flow == "m") & (ts.subflow == "")]
        return list(sel["value"])

    assert goodput(a.timeseries) == goodput(r.timeseries)


def test_python_and_cli_analysis_are_one(root, cli, tmp_path):
    scen = root / "scenarios/tcp-outage.toml"
    subprocess.run(
        [str(cli), "run", str(scen), "--out", str(tmp_path / "o"), "--pcap", str(tmp_path / "p")],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            str(cli),
            "analyze",
            str(tmp_path / "p"),
            "--scenario",
            str(scen),
            "--out",
            str(tmp_path / "an"),
        ],
        check=True,
        capture_output=True,
    )
    want = json.loads((tmp_path / "an" / "analysis.json").read_text())
    got = railpath.analyze(str(tmp_path / "p"), scenario=str(scen)).summary
    assert got["flows"] == want["flows"]
    assert got["points"] == want["points"]


def test_a_bad_capture_raises_value_error_naming_the_file(tmp_path):
    bad = tmp_path / "notes.pcap"
    bad.write_text("not a capture\n")
    with pytest.raises(ValueError, match="notes.pcap"):
        railpath.analyze(bad)
    with pytest.raises(ValueError, match="stall_ms"):
        railpath.analyze(bad, stall_ms=-1.0)
