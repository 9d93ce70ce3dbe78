"""scripts/bench_compare.py: railpath builds compared on the bench cases, alternated, best of N
(issue 29's method, docs/performance.md). The binaries here are small scripts that answer
`bench --case C --repeat R` as railpath does, from a file of the times they are to report in
turn, so that which run is the best is known beforehand."""

from __future__ import annotations

import json
import os
import pathlib
import stat
import sys

import pytest

CASES = {
    "tcp-newreno": ["tcp-newreno-10mbps-10ms-100pkt-60s"],
    "mptcp-lia-minrtt": ["mptcp-lia-minrtt-2x10mbps-10ms-100pkt-60s"],
    "scale-tcp": ["scale-tcp-1-cubic-shared-link-20s", "scale-tcp-1000-cubic-shared-link-20s"],
}


def fake_railpath(tmp_path: pathlib.Path, name: str, walls: list[float]) -> str:
    """An executable that prints, for each case its `--case` selects, a bench line whose wall
    time is the next of `walls` (ns per packet: wall time x 1e6), and logs its calls."""
    times = tmp_path / f"{name}.times"
    times.write_text(json.dumps(walls))
    log = tmp_path / "calls.log"
    exe = tmp_path / name
    exe.write_text(
        f"""#!{sys.executable}
import json, sys
args = sys.argv[1:]
assert args[0] == "bench" and args[1] == "--case" and args[3] == "--repeat", args
cases = {json.dumps(CASES)}
times = json.load(open({str(times)!r}))
with open({str(log)!r}, "a") as f:
    f.write({name!r} + " " + args[2] + " " + args[4] + "\\n")
for name in [n for ns in cases.values() for n in ns if args[2] in n]:
    w = times.pop(0)
    print(json.dumps({{"case": name, "wall_s": w, "events": 1, "events_per_s": 1.0,
                       "sim_s": 60.0, "packets": 1000, "ns_per_packet": w * 1e6}}))
json.dump(times, open({str(times)!r}, "w"))
if args[2] == "broken":
    print("error: something went wrong", file=sys.stderr)
    sys.exit(3)
"""
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def test_best_of_alternated_rounds_and_ratio_to_the_first(tmp_path: pathlib.Path, script) -> None:
    m = script("bench_compare")
    # Three rounds of the two cases; each binary's times in call order (newreno, mptcp) x 3.
    ref = fake_railpath(tmp_path, "ref", [0.0050, 0.0130, 0.0052, 0.0138, 0.0049, 0.0135])
    new = fake_railpath(tmp_path, "new", [0.0026, 0.0070, 0.0025, 0.0066, 0.0027, 0.0068])
    res = m.measure([ref, new], [("tcp-newreno", 40), ("mptcp-lia-minrtt", 20)], 3, False, False)
    nr, mp = CASES["tcp-newreno"][0], CASES["mptcp-lia-minrtt"][0]
    assert res.cases == [nr, mp]
    assert res.best[(ref, nr)].wall_s == 0.0049
    assert res.best[(new, nr)].wall_s == 0.0025
    assert res.best[(ref, mp)].wall_s == 0.0130
    assert res.best[(new, mp)].wall_s == 0.0066
    # Alternated: each round runs one case with every binary before the next case.
    calls = (tmp_path / "calls.log").read_text().split("\n")
    assert calls[:4] == [
        "ref tcp-newreno 40",
        "new tcp-newreno 40",
        "ref mptcp-lia-minrtt 20",
        "new mptcp-lia-minrtt 20",
    ]
    t = m.table(res)
    # 4.9 / 2.5 = 1.96x; 13.0 / 6.6 = 1.97x.
    assert f"| {nr} | 4.900 ms | 2.500 ms (1.96x) |" in t
    assert f"| {mp} | 13.000 ms | 6.600 ms (1.97x) |" in t


def test_scaling_cases_give_ns_per_packet_and_the_ratio(tmp_path: pathlib.Path, script) -> None:
    m = script("bench_compare")
    a = fake_railpath(tmp_path, "a", [55e-6, 78e-6, 56e-6, 77e-6])
    res = m.measure([a], [("scale-tcp", 3)], 2, False, False)
    t = m.table(res)
    assert "| scale-tcp-1000-cubic-shared-link-20s | 77.0 ns/packet |" in t
    # 77 / 55 = 1.40.
    assert "a tcp 1/1000: 55.0 / 77.0 ns/packet, largest over smallest 1.40" in t


def test_a_bench_case_beside_scaling_cases_keeps_its_wall_time(
    tmp_path: pathlib.Path, script
) -> None:
    m = script("bench_compare")
    a = fake_railpath(tmp_path, "a", [0.0026, 55e-6, 78e-6])
    res = m.measure([a], [("tcp-newreno", 40), ("scale-tcp", 3)], 1, False, False)
    t = m.table(res)
    assert f"| {CASES['tcp-newreno'][0]} | 2.600 ms |" in t
    assert "| scale-tcp-1-cubic-shared-link-20s | 55.0 ns/packet |" in t


def test_instructions_counted_per_case_by_its_full_name(
    tmp_path: pathlib.Path, script, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = script("bench_compare")
    # A stand-in valgrind: runs the binary and reports 1000 instructions per character of the
    # case filter it was given, as valgrind's summary line does.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "valgrind"
    fake.write_text(
        f"""#!{sys.executable}
import subprocess, sys
p = subprocess.run(sys.argv[4:], capture_output=True, text=True)
sys.stdout.write(p.stdout)
print("==1== I   refs:      " + format(1000 * len(sys.argv[7]), ","), file=sys.stderr)
"""
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    a = fake_railpath(tmp_path, "a", [55e-6, 78e-6, 1.0, 2.0])
    # One filter, two cases: each is counted in a process of its own, by its full name.
    res = m.measure([a], [("scale-tcp", 3)], 1, True, False)
    one, thousand = CASES["scale-tcp"]
    assert res.best[(a, one)].instructions == 1000 * len(one)
    assert res.best[(a, thousand)].instructions == 1000 * len(thousand)
    assert "| scale-tcp-1-cubic-shared-link-20s: instructions | 33,000 |" in m.table(res)


def test_instructions_from_valgrinds_summary(script) -> None:
    m = script("bench_compare")
    text = "==12== Cachegrind...\n==12== I   refs:      62,813,848\n"
    assert m.parse_irefs(text, "x") == 62_813_848
    with pytest.raises(m.BenchError, match="no 'I refs' line"):
        m.parse_irefs("==12== ERROR SUMMARY: 0 errors\n", "x")


def test_a_failing_binary_is_named_with_its_message(tmp_path: pathlib.Path, script) -> None:
    m = script("bench_compare")
    b = fake_railpath(tmp_path, "b", [])
    with pytest.raises(m.BenchError, match=r"bench --case broken .*exit status 3.*went wrong"):
        m.run_bench(b, "broken", 1)
    with pytest.raises(m.BenchError, match="printed no result"):
        m.run_bench(b, "no-such-case", 1)


def test_output_that_is_not_a_bench_line_is_refused(script) -> None:
    m = script("bench_compare")
    with pytest.raises(m.BenchError, match=r"b: line 2 of its bench output .*case and wall_s"):
        m.parse_bench_lines('{"case": "x", "wall_s": 1, "ns_per_packet": 2}\n{"case": "y"}\n', "b")
    # A build older than the scaling cases prints no ns_per_packet: its wall time is taken.
    rows = m.parse_bench_lines('{"case": "x", "wall_s": 0.005, "events": 3, "sim_s": 60.0}', "b")
    assert rows[0][:2] == ("x", 0.005)


def test_bad_arguments_exit_2(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], script
) -> None:
    m = script("bench_compare")
    b = fake_railpath(tmp_path, "b", [])
    with pytest.raises(SystemExit) as e:
        m.main([str(tmp_path / "missing")])
    assert e.value.code == 2
    assert "not an executable file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        m.main(["-n", "0", b])
    assert e.value.code == 2
    assert "--rounds: expected at least 1, found 0" in capsys.readouterr().err
