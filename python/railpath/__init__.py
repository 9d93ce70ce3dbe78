"""railpath from Python: the simulator in-process, results as pandas DataFrames, sweeps.

    import railpath
    sc = railpath.load("scenarios/mptcp-heterogeneous-paths.toml")
    r = railpath.run(sc, seed=2, **{"link.b.delay_ms": 50})
    r.flows                      # one row per flow
    df = railpath.sweep(sc, grid={"link.a.buffer_packets": [50, 100]}, seeds=range(3))
    r = railpath.run(sc, pcap="out/caps")   # with packet captures of every link
    a = railpath.analyze("out/caps", scenario=sc)
    a.subflows, a.stalls         # the analysis of captures of either stack as DataFrames

Everything runs in the Rust crates (scenario validation, simulation): this package only moves
values across and shapes them into tables. See docs/tutorial.md.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import pathlib
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from typing import Any, Union

import pandas as pd

from . import _core

__all__ = [
    "ScenarioError",
    "Scenario",
    "Result",
    "Analysis",
    "load",
    "run",
    "analyze",
    "sweep",
    "repro",
    "__version__",
]

ScenarioError = _core.ScenarioError
"""An invalid scenario or override (a `ValueError`): `str(e)` is the CLI's message naming the
file, key and expected range; `e.file` and `e.key` hold the file and the key."""

__version__: str = _core.__version__

PathLike = Union[str, "os.PathLike[str]"]


def _toml_value(v: Any) -> str:
    """A Python value in TOML syntax, as the CLI's `--set key=value` takes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot give {type(v).__name__} {v!r} as a scenario value")


def _override_specs(overrides: Mapping[str, Any]) -> list[str]:
    return [f"{k}={_toml_value(v)}" for k, v in overrides.items()]


class Scenario:
    """A validated scenario: its TOML text, the name errors use, the directory the files it
    names are relative to, and overrides (`--set` syntax) applied on top. Plain strings only,
    so it pickles to worker processes and Dask workers."""

    __slots__ = ("text", "source", "base_dir", "overrides")

    def __init__(
        self,
        text: str,
        source: str = "<string>",
        base_dir: PathLike = ".",
        overrides: Sequence[str] = (),
    ) -> None:
        self.text = text
        self.source = source
        self.base_dir = str(base_dir)
        self.overrides = list(overrides)
        _core.validate(self.text, self.source, self.base_dir, self.overrides)

    def with_overrides(self, overrides: Mapping[str, Any] | None = None, **kw: Any) -> Scenario:
        """A copy with more overrides, e.g. `sc.with_overrides({"link.a.loss": 0.01})`."""
        more = dict(overrides or {}, **kw)
        return Scenario(
            self.text, self.source, self.base_dir, self.overrides + _override_specs(more)
        )

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)

    def __repr__(self) -> str:
        extra = f", overrides={self.overrides!r}" if self.overrides else ""
        return f"Scenario({self.source!r}{extra})"


def load(source: PathLike | str | Mapping[str, Any], **overrides: Any) -> Scenario:
    """A scenario from a file path, TOML text, or a dict of scenario keys, validated exactly as
    `railpath run` validates it (a bad one raises `ScenarioError` naming file, key and range).
    Keyword overrides use the CLI's `--set` paths: `load(p, **{"link.a.loss": 0.01})`."""
    specs = _override_specs(overrides)
    if isinstance(source, Mapping):
        text = _core.toml_from_json(json.dumps(source), "<dict>")
        return Scenario(text, "<dict>", os.getcwd(), specs)
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and source.strip().endswith(".toml")
    ):
        path = pathlib.Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            err = ScenarioError(f"{path}: cannot read scenario file: {e}")
            err.file, err.key = str(path), ""
            raise err from e
        return Scenario(text, str(source), path.parent, specs)
    if isinstance(source, str):
        return Scenario(source, "<string>", os.getcwd(), specs)
    raise TypeError(f"load() takes a path, TOML text or a dict, not {type(source).__name__}")


def _as_scenario(scenario: Scenario | PathLike | str | Mapping[str, Any]) -> Scenario:
    return scenario if isinstance(scenario, Scenario) else load(scenario)


class Result:
    """One run: `summary` (summary.json as a dict) and tidy DataFrames with units in the
    column names: `flows`, `subflows`, `links`, `handovers` (one row each) and `timeseries`
    (one row per bin and series: t_s, flow, subflow, metric, value; `t_s` is the bin's end)."""

    def __init__(self, summary: dict[str, Any], bin_s: float, series: list[tuple]) -> None:
        self.summary = summary
        self.bin_s = bin_s
        self._series = series

    @property
    def flows(self) -> pd.DataFrame:
        return pd.DataFrame(_flow_records(self.summary))

    @property
    def subflows(self) -> pd.DataFrame:
        rows = [
            {"flow": f["id"], **{("subflow" if k == "id" else k): v for k, v in s.items()}}
            for f in self.summary["flows"]
            for s in f.get("subflows") or []
        ]
        cols = ["flow", "subflow", "link", "goodput_bps", "sent_packets", "retransmitted_packets"]
        return pd.DataFrame(rows, columns=cols)

    @property
    def links(self) -> pd.DataFrame:
        rows = []
        for lk in self.summary["links"]:
            rows.append(
                {
                    "link": lk["id"],
                    "forwarded_packets": lk["forwarded_packets"],
                    "dropped_packets": lk["dropped_packets"],
                    "random_losses": lk["random_losses"],
                    "queue_avg_bytes": lk["queue_bytes"]["avg"],
                    "queue_max_bytes": lk["queue_bytes"]["max"],
                    "queue_delay_avg_ms": lk["queue_delay_ms"]["avg"],
                    "queue_delay_max_ms": lk["queue_delay_ms"]["max"],
                    "outages": len(lk.get("outages", [])),
                }
            )
        return pd.DataFrame(rows)

    @property
    def handovers(self) -> pd.DataFrame:
        cols = ["t_s", "position_m", "carrier", "from_cell", "to_cell", "interruption_ms"]
        return pd.DataFrame(self.summary["handovers"], columns=cols)

    @property
    def timeseries(self) -> pd.DataFrame:
        return _long_series(self._series, self.bin_s)

    def __repr__(self) -> str:
        g = ", ".join(
            f"{f['id']}: {f['goodput_bps'] / 1e6:.3f} Mbit/s" for f in self.summary["flows"]
        )
        return f"<railpath.Result {self.summary['scenario']} seed={self.summary['seed']} {g}>"


def run(
    scenario: Scenario | PathLike | str | Mapping[str, Any],
    seed: int | None = None,
    pcap: PathLike | None = None,
    **overrides: Any,
) -> Result:
    """Run a scenario in-process (the GIL is released while it runs). `seed` is `run.seed`;
    keyword overrides use the CLI's `--set` paths: `run(sc, seed=7, **{"link.a.loss": 0.01})`.
    `pcap`: write packet captures of both ends of every link into that directory, as
    `railpath run --pcap` (read them back with `analyze`)."""
    sc = _as_scenario(scenario)
    specs = sc.overrides + _override_specs(overrides)
    if seed is not None:
        specs.append(f"run.seed={int(seed)}")
    summary, bin_s, series = _core.run(
        sc.text, sc.source, sc.base_dir, specs, None if pcap is None else os.fspath(pcap)
    )
    return Result(json.loads(summary), bin_s, series)


def _long_series(series: list[tuple], bin_s: float) -> pd.DataFrame:
    """(flow, subflow, metric, values) series as one long table, `t_s` the bins' ends."""
    frames = []
    for flow, subflow, metric, values in series:
        n = len(values)
        frames.append(
            pd.DataFrame(
                {
                    "t_s": [round((k + 1) * bin_s, 9) for k in range(n)],
                    "flow": flow,
                    "subflow": subflow,
                    "metric": metric,
                    "value": values,
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=["t_s", "flow", "subflow", "metric", "value"])
    return pd.concat(frames, ignore_index=True)


class Analysis:
    """The analysis of packet captures (`railpath analyze`): `summary` (analysis.json as a
    dict) and DataFrames: `flows`, `subflows` (one row each), `stalls` and `mp_prio` (one row
    per stall of a flow's in-order data stream and per MP_PRIO option), `timeseries` (as a
    run's: t_s, flow, subflow, metric, value; metrics goodput_bps, rtt_ms, sent_packets,
    retransmitted_packets)."""

    def __init__(self, summary: dict[str, Any], bin_s: float, series: list[tuple]) -> None:
        self.summary = summary
        self.bin_s = bin_s
        self._series = series

    @property
    def flows(self) -> pd.DataFrame:
        skip = {"subflows", "stalls", "mp_prio"}
        rows = []
        for f in self.summary["flows"]:
            row = {("flow" if k == "id" else k): v for k, v in f.items() if k not in skip}
            row["stalls"] = len(f["stalls"])
            row["stalled_s"] = sum(s["duration_s"] for s in f["stalls"])
            row["mp_prio"] = len(f["mp_prio"])
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def subflows(self) -> pd.DataFrame:
        cols = [
            "flow",
            "subflow",
            "links",
            "client",
            "sent_packets",
            "retransmitted_packets",
            "delivered_bytes",
            "rtt_samples",
            "rtt_min_ms",
            "rtt_mean_ms",
            "rtt_max_ms",
            "backup_at_join",
        ]
        rows = []
        for f in self.summary["flows"]:
            for s in f["subflows"]:
                rtt = s.get("rtt") or {}
                rows.append(
                    {
                        "flow": f["id"],
                        "subflow": s["id"],
                        "links": ",".join(s["links"]),
                        "client": s["client"],
                        "sent_packets": s["sent_packets"],
                        "retransmitted_packets": s["retransmitted_packets"],
                        "delivered_bytes": s["delivered_bytes"],
                        "rtt_samples": rtt.get("samples", 0),
                        "rtt_min_ms": rtt.get("min_ms"),
                        "rtt_mean_ms": rtt.get("mean_ms"),
                        "rtt_max_ms": rtt.get("max_ms"),
                        "backup_at_join": s["backup_at_join"],
                    }
                )
        return pd.DataFrame(rows, columns=cols)

    @property
    def stalls(self) -> pd.DataFrame:
        rows = [{"flow": f["id"], **s} for f in self.summary["flows"] for s in f["stalls"]]
        return pd.DataFrame(rows, columns=["flow", "start_s", "duration_s"])

    @property
    def mp_prio(self) -> pd.DataFrame:
        rows = [{"flow": f["id"], **p} for f in self.summary["flows"] for p in f["mp_prio"]]
        return pd.DataFrame(rows, columns=["flow", "t_s", "subflow", "backup", "from"])

    @property
    def timeseries(self) -> pd.DataFrame:
        return _long_series(self._series, self.bin_s)

    def __repr__(self) -> str:
        g = ", ".join(
            f"{f['id']}: {f['goodput_bps'] / 1e6:.3f} Mbit/s" for f in self.summary["flows"]
        )
        return f"<railpath.Analysis {len(self.summary['files'])} files {g}>"


def analyze(
    captures: PathLike | Sequence[PathLike],
    scenario: Scenario | PathLike | str | Mapping[str, Any] | None = None,
    bin_ms: float | None = None,
    stall_ms: float = 200.0,
) -> Analysis:
    """Analyse packet captures of either stack (files or directories of .pcap/.pcapng), as
    `railpath analyze`: the scenario they are of names the flows and sets the bins (else 100
    ms bins up to the last packet). A bad capture raises ValueError naming the file and the
    record."""
    paths = [captures] if isinstance(captures, (str, os.PathLike)) else list(captures)
    specs = [os.fspath(p) for p in paths]
    if scenario is None:
        summary, bin_s, series = _core.analyze(specs, bin_ms=bin_ms, stall_ms=stall_ms)
    else:
        sc = _as_scenario(scenario)
        summary, bin_s, series = _core.analyze(
            specs,
            sc.text,
            sc.source,
            sc.base_dir,
            sc.overrides,
            bin_ms=bin_ms,
            stall_ms=stall_ms,
        )
    return Analysis(json.loads(summary), bin_s, series)


# ---- sweeps ----


def _flow_records(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`Result.flows` as plain rows. A sweep's workers build these rather than DataFrames:
    pandas holds the GIL for about a millisecond a frame, a sixth of a short run, and that
    serial part kept two threads from doubling a sweep's speed (issue 15)."""
    skip = {"subflows", "receive_buffer", "send_buffer", "reorder_delay_ms", "handoffs"}
    rows = []
    for f in summary["flows"]:
        row = {("flow" if k == "id" else k): v for k, v in f.items() if k not in skip}
        row["mechanisms"] = ",".join(f["mechanisms"])
        for k in ("receive_buffer", "send_buffer"):
            b = f.get(k) or {}
            row[f"{k}_max_packets"] = b.get("max_packets")
            row[f"{k}_avg_packets"] = b.get("avg_packets")
        d = f.get("reorder_delay_ms") or {}
        row["reorder_delay_avg_ms"] = d.get("avg")
        row["reorder_delay_max_ms"] = d.get("max")
        rows.append(row)
    return rows


def _run_point(sc: Scenario, params: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """One sweep point in a worker: rows of its flows, or one row with the error."""
    try:
        rows = _flow_records(run(sc, seed=seed, **params).summary)
    except Exception as e:  # noqa: BLE001 - a failed point is reported, not raised
        return [{**params, "seed": seed, "error": f"{type(e).__name__}: {e}"}]
    return [{**params, "seed": seed, **row, "error": None} for row in rows]


def _is_dask_client(executor: Any) -> bool:
    return type(executor).__name__ == "Client" and hasattr(executor, "gather")


def sweep(
    scenario: Scenario | PathLike | str | Mapping[str, Any],
    grid: Mapping[str, Iterable[Any]] | None = None,
    seeds: Iterable[int] = (1,),
    executor: None | str | Executor | Any = None,
    max_workers: int | None = None,
    progress: bool = True,
    parquet: PathLike | None = None,
) -> pd.DataFrame:
    """Run the product of `grid` (override path -> values) and `seeds` in parallel and gather
    one DataFrame: one row per run and flow, the grid's keys and `seed` as columns, `error` set
    (and the metrics missing) for a point that failed; the other points are kept.

    `executor`: None or "threads" (default: a thread per core; runs release the GIL),
    "processes" (a process pool), "serial", any `concurrent.futures.Executor`, or a
    `dask.distributed.Client` (one task per point: unchanged on a cluster). `parquet`: also
    write the table there."""
    sc = _as_scenario(scenario)
    grid = {k: list(v) for k, v in (grid or {}).items()}
    seeds = list(seeds)
    points = [
        (dict(zip(grid, combo)), seed)
        for combo in itertools.product(*grid.values())
        for seed in seeds
    ]
    # Check every override path once, before any work is spread out.
    for params, _ in points[:1]:
        sc.with_overrides(params)
    bar = _progress(len(points), progress)
    rows: list[list[dict[str, Any]]] = [[] for _ in points]
    if executor == "serial":
        for i, (params, seed) in enumerate(points):
            rows[i] = _run_point(sc, params, seed)
            bar.update(1)
    elif _is_dask_client(executor):
        futures = [executor.submit(_run_point, sc, p, s, pure=False) for p, s in points]
        index = {f.key: i for i, f in enumerate(futures)}
        from dask.distributed import as_completed as dask_completed

        for f in dask_completed(futures):
            rows[index[f.key]] = f.result()
            bar.update(1)
    else:
        own = executor is None or isinstance(executor, str)
        if executor is None or executor == "threads":
            pool: Executor = ThreadPoolExecutor(max_workers or os.cpu_count() or 1)
        elif executor == "processes":
            pool = ProcessPoolExecutor(max_workers or os.cpu_count() or 1)
        elif isinstance(executor, Executor):
            pool = executor
        else:
            raise ValueError(
                f"executor: expected None, 'threads', 'processes', 'serial', a "
                f"concurrent.futures.Executor or a dask.distributed.Client, not {executor!r}"
            )
        try:
            futs = {pool.submit(_run_point, sc, p, s): i for i, (p, s) in enumerate(points)}
            for f in as_completed(futs):
                rows[futs[f]] = f.result()
                bar.update(1)
        finally:
            if own:
                pool.shutdown()
    bar.close()
    df = pd.DataFrame([r for rs in rows for r in rs])
    failed = df[df["error"].notna()] if "error" in df else df.iloc[0:0]
    for _, r in failed.iterrows():
        params = {k: r[k] for k in grid} | {"seed": r["seed"]}
        warnings.warn(f"railpath.sweep: point {params} failed: {r['error']}", stacklevel=2)
    if parquet is not None:
        df.to_parquet(parquet)
    return df


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, show: bool) -> Any:
    if not show:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="railpath sweep", unit="run")


def repro(
    paper: str = "all", out: PathLike = "out/repro", seeds: int = 10, jobs: int = 0
) -> list[dict[str, Any]]:
    """Reproduce a source paper (or "all"): the same code as `railpath repro PAPER --out OUT`.
    Writes OUT/<paper>/summary.json, OUT/<paper>/report.html and OUT/index.html, and returns
    the summaries (claims, and the paper's numbers beside railpath's with 95% intervals)."""
    return json.loads(_core.repro(paper, str(out), int(seeds), int(jobs)))
