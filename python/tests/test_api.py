"""railpath from Python (issue 15): the same numbers as the CLI, the same errors, sweeps."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest

import railpath

TWO_PATHS = """
[run]
duration_s = 10
seed = 1
[[link]]
id = "a"
rate_mbps = 10
delay_ms = 10
[[link]]
id = "b"
rate_mbps = 10
delay_ms = 30
[[flow]]
id = "m"
kind = "mptcp"
cc = "lia"
scheduler = "minrtt"
paths = ["a", "b"]
"""


def _without_wall(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "wall_s"}


def test_run_gives_the_cli_summary_for_every_example(root, cli, tmp_path):
    examples = sorted((root / "scenarios").glob("*.toml"))
    assert len(examples) >= 5
    for sc in examples:
        out = tmp_path / sc.stem
        subprocess.run(
            [str(cli), "run", str(sc), "--seed", "3", "--out", str(out)],
            check=True,
            capture_output=True,
        )
        want = json.loads((out / "summary.json").read_text())
        got = railpath.run(railpath.load(str(sc)), seed=3)
        assert _without_wall(got.summary) == _without_wall(want), sc.name
        # The time series are the CLI's timeseries.csv, row for row.
        csv = pd.read_csv(out / "timeseries.csv", keep_default_na=False)
        ts = got.timeseries
        assert len(ts) == len(csv), sc.name
        assert (ts["metric"].to_numpy() == csv["metric"].to_numpy()).all()
        assert ts["value"].to_numpy() == pytest.approx(
            csv["value"].to_numpy(), rel=1e-12, nan_ok=True
        )


def test_tables_are_tidy_with_units_in_names():
    r = railpath.run(TWO_PATHS)
    assert list(r.flows["flow"]) == ["m"]
    assert {"goodput_bps", "delivered_bytes", "reorder_delay_avg_ms"} <= set(r.flows.columns)
    assert list(r.subflows["subflow"]) == ["a", "b"]
    ts = r.timeseries
    assert list(ts.columns) == ["t_s", "flow", "subflow", "metric", "value"]
    assert len(ts[(ts.metric == "goodput_bps") & (ts.subflow == "")]) == 100
    assert r.handovers.empty and list(r.handovers.columns)[0] == "t_s"
    assert list(r.links["link"]) == ["a", "b"]


def test_load_accepts_a_dict_and_text_and_validates_like_the_cli():
    d = {
        "run": {"duration_s": 5},
        "link": [{"id": "a", "rate_mbps": 10, "delay_ms": 10}],
        "flow": [{"id": "t", "kind": "tcp", "cc": "cubic", "paths": ["a"]}],
    }
    assert railpath.run(railpath.load(d)).flows.loc[0, "goodput_bps"] > 8e6
    bad = dict(d, link=[{"id": "a", "rate_mbps": -5}])
    with pytest.raises(railpath.ScenarioError) as e:
        railpath.load(bad)
    assert e.value.key == "link[0].rate_mbps"
    assert "link[0].rate_mbps" in str(e.value) and ">= 0.001" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_a_fault_found_while_building_the_run_is_a_scenario_error(root):
    # No base station within reach of the track: found only when the run is built (the CLI's
    # exit status 2), raised as ScenarioError naming the key, not as a RuntimeError.
    sc = railpath.load(str(root / "scenarios" / "pha-radio-tcp.toml"))
    with pytest.raises(railpath.ScenarioError) as e:
        railpath.run(sc, **{"carrier.A.first_enb_m": 1e6})
    assert e.value.key == "carrier[0].first_enb_m"
    assert "no base station" in str(e.value)


def test_bad_override_raises_with_the_key(root):
    sc = railpath.load(str(root / "scenarios" / "tcp-outage.toml"))
    with pytest.raises(railpath.ScenarioError) as e:
        railpath.run(sc, **{"link.x2.loss": 2.0})
    assert "link" in e.value.key and "loss" in str(e.value)
    with pytest.raises(railpath.ScenarioError) as e:
        railpath.run(sc, **{"link.nope.loss": 0.1})
    assert "nope" in str(e.value)
    with pytest.raises(railpath.ScenarioError):
        railpath.load(str(root / "scenarios" / "no-such-file.toml"))


def test_overrides_change_the_run_as_the_cli_set_does():
    base = railpath.run(TWO_PATHS, seed=1)
    lossy = railpath.run(TWO_PATHS, seed=1, **{"link.a.loss": 0.01})
    assert lossy.flows.loc[0, "retransmitted_packets"] > base.flows.loc[0, "retransmitted_packets"]
    assert lossy.summary["seed"] == 1


GRID = {"tcp.min_rto_ms": [200, 300, 5000], "tcp.max_rto_ms": [1000, 60000, 90000, 120000]}


def test_sweep_grid_and_seeds_give_one_row_per_run():
    df = railpath.sweep(
        TWO_PATHS,
        grid={"link.a.delay_ms": [5, 10, 20], "link.b.loss": [0.0, 0.01]},
        seeds=range(2),
        progress=False,
    )
    assert len(df) == 12
    assert {"link.a.delay_ms", "link.b.loss", "seed", "flow", "goodput_bps", "error"} <= set(
        df.columns
    )
    assert df["error"].isna().all()
    assert df.groupby(["link.a.delay_ms", "link.b.loss", "seed"]).size().eq(1).all()


def test_a_failing_point_leaves_the_others():
    with pytest.warns(UserWarning, match="5000"):
        df = railpath.sweep(TWO_PATHS, grid=GRID, seeds=[1], progress=False)
    ok = df[df["error"].isna()]
    bad = df[df["error"].notna()]
    assert len(ok) == 11 and len(bad) == 1
    assert bad.iloc[0]["tcp.min_rto_ms"] == 5000 and bad.iloc[0]["tcp.max_rto_ms"] == 1000
    assert "min_rto_ms" in bad.iloc[0]["error"]


def test_processes_and_dask_give_the_same_numbers(tmp_path):
    from dask.distributed import Client, LocalCluster

    grid = {"link.a.delay_ms": [5, 10, 20], "link.b.loss": [0.0, 0.01]}
    key = ["link.a.delay_ms", "link.b.loss", "seed"]
    ref = railpath.sweep(TWO_PATHS, grid=grid, seeds=range(2), progress=False).sort_values(key)
    procs = railpath.sweep(
        TWO_PATHS, grid=grid, seeds=range(2), executor="processes", progress=False
    ).sort_values(key)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        dsk = railpath.sweep(
            TWO_PATHS,
            grid=grid,
            seeds=range(2),
            executor=client,
            progress=False,
            parquet=tmp_path / "sweep.parquet",
        ).sort_values(key)
    for other in (procs, dsk):
        assert len(other) == 12
        assert list(other["goodput_bps"]) == list(ref["goodput_bps"])
    back = pd.read_parquet(tmp_path / "sweep.parquet")
    assert len(back) == 12 and "goodput_bps" in back


def _sched() -> dict[str, tuple[int, int]]:
    """Per thread of this process: ns on a CPU and ns waiting for one (/proc/<tid>/schedstat)."""
    out = {}
    for t in pathlib.Path("/proc/self/task").iterdir():
        try:
            cpu, wait, _ = (t / "schedstat").read_text().split()
        except (OSError, ValueError):
            continue
        out[t.name] = (int(cpu), int(wait))
    return out


def _steal() -> float:
    """Seconds the hypervisor ran something else on this machine's CPUs (/proc/stat, all CPUs)."""
    try:
        fields = pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _core_sharing() -> float:
    """How much more CPU time a fixed job takes on each of two threads run at once than on one
    thread alone: about 1.0 when the machine's two cores are independent, more when they share
    one core's resources or clock (SMT siblings, a boost a single busy core gets). The job is
    SHA-256 over 192 MiB, which holds no lock (hashlib releases the GIL) and no railpath code."""
    buf = bytes(32 << 20)

    def job(out: list[float], i: int) -> None:
        t = time.thread_time()
        for _ in range(6):
            hashlib.sha256(buf).digest()
        out[i] = time.thread_time() - t

    alone = [0.0]
    job(alone, 0)
    both = [0.0, 0.0]
    threads = [threading.Thread(target=job, args=(both, i)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(both) / 2 / max(alone[0], 1e-9)


def test_two_cores_run_a_sweep_faster_than_one():
    # 200 short runs; each releases the GIL, so two threads use both cores: at least 1.7x faster
    # on two cores than on one (issue 15). That speedup is only measurable when the machine gives
    # this process its cores, so the kernel's accounting of each worker thread says which part
    # of the test applies: the threads' time on a CPU plus their time waiting for one, over the
    # wall time, is how many threads wanted a core at once, whatever else the machine runs (two
    # workers blocked on each other, by the GIL or a lock, would want one). That must be 1.7 or
    # more; the wall-clock speedup must be 1.7 or more when the threads waited for a core less
    # than 10% of their time (the hypervisor's steal from the machine's CPUs counted as waiting)
    # and the machine's two cores each did a core's work (a job without railpath,
    # `_core_sharing`, took less than 15% more CPU time per thread on two threads than on one,
    # before and after the sweeps); otherwise it is printed, not asserted. A CI run on 2026-11-28
    # measured 1.50x with both threads on a CPU all the time (2.01 wanting one) and 34% more CPU
    # time per run on two threads than on one; the same test on that machine gave 1.75-2.51x in
    # nine runs in the next half hour. One retry.
    sc = railpath.load(TWO_PATHS, **{"run.duration_s": 20})
    grid = {"link.a.delay_ms": list(range(5, 105))}

    def timed(workers: int) -> tuple[float, float, float]:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            before = _sched()
            stolen = _steal()
            t = time.perf_counter()
            df = railpath.sweep(sc, grid=grid, seeds=range(2), executor=pool, progress=False)
            wall = time.perf_counter() - t
            stolen = (_steal() - stolen) / (wall * (os.cpu_count() or 1))
            after = _sched()
        assert len(df) == 200
        cpu = sum(c - before.get(k, (0, 0))[0] for k, (c, _) in after.items()) / 1e9
        wait = sum(w - before.get(k, (0, 0))[1] for k, (_, w) in after.items()) / 1e9
        # Time the hypervisor stole from the machine's CPUs counts as waiting for a core.
        return wall, (cpu + wait) / wall, max(wait / max(cpu + wait, 1e-9), stolen)

    for attempt in range(2):
        before = _core_sharing()
        (one, _, wait1), (two, demand, wait2) = timed(1), timed(2)
        sharing = max(before, _core_sharing())
        loaded = max(wait1, wait2) >= 0.10
        shared = sharing >= 1.15
        if (demand >= 1.7 and (loaded or shared or one / two >= 1.7)) or attempt == 1:
            break
    print(
        f"sweep of 200 runs: 1 core {one:.2f} s, 2 cores {two:.2f} s ({one / two:.2f}x); "
        f"threads wanting a core at once with 2 workers: {demand:.2f}; "
        f"time waiting for a core: {wait1:.0%} (1 worker), {wait2:.0%} (2 workers); "
        f"CPU time per thread of a job without railpath on two threads: {sharing:.2f}x one's"
    )
    assert demand >= 1.7, f"two workers kept only {demand:.2f} threads busy at once"
    if loaded:
        print(
            "LOADED MACHINE: the wall-clock speedup is not asserted (threads waited for a core, "
            "or the hypervisor stole the machine's CPUs)"
        )
    elif shared:
        print(
            "SHARED CORES: the wall-clock speedup is not asserted (two threads each took "
            f"{sharing:.2f}x the CPU time one took alone for the same job)"
        )
    else:
        assert one / two >= 1.7, f"1 core {one:.2f} s, 2 cores {two:.2f} s"


def test_repro_runs_the_same_code_as_the_cli(cli, tmp_path):
    got = railpath.repro("pha", out=tmp_path / "py", seeds=2)
    subprocess.run(
        [str(cli), "repro", "pha", "--seeds", "2", "--out", str(tmp_path / "cli")],
        check=True,
        capture_output=True,
    )
    want = json.loads((tmp_path / "cli" / "pha" / "summary.json").read_text())
    assert [s["paper"] for s in got] == ["pha"]
    assert got[0] == want
    assert (tmp_path / "py" / "pha" / "report.html").is_file()
    with pytest.raises(ValueError, match="unknown paper"):
        railpath.repro("nope")
