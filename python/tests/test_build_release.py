"""scripts/build-release.sh (`make build`): the profile-guided release build's steps, in order,
with stand-ins for cargo, rustc and llvm-profdata on PATH that record what they are asked (a real
build takes minutes; `make run` does one).

What must hold: an instrumented build under target/pgo/ (-Cprofile-generate), every example
scenario run once by it, the counts merged, then the release build with -Cprofile-use of that
profile where `cargo build --release` puts it; a second build with nothing changed does not train
again; RAILPATH_PGO=0 and a toolchain without llvm-profdata give the plain build and say so; a bad
RAILPATH_PGO is an error naming it; a scenario the instrumented build fails on stops the build;
the optimised build lays out blocks by LLVM's ext-TSP model when this rustc's LLVM has the option,
and says so and keeps LLVM's default layout when it has not.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import stat
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOST = "x86_64-unknown-linux-gnu"

# The stand-in cargo: one JSON line per call (arguments, RUSTFLAGS, CARGO_TARGET_DIR); a build
# with -Cprofile-generate=DIR leaves an "instrumented railpath" in its target dir that records
# each run and drops a raw profile into DIR.
CARGO = r"""#!/usr/bin/env python3
import json, os, pathlib, sys
log = pathlib.Path(os.environ["STUB_LOG"])
flags = os.environ.get("RUSTFLAGS", "")
target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR") or pathlib.Path.cwd() / "target")
with log.open("a") as f:
    f.write(json.dumps({"tool": "cargo", "args": sys.argv[1:], "rustflags": flags,
                        "target": str(target)}) + "\n")
gen = [w.split("=", 1)[1] for w in flags.split() if w.startswith("-Cprofile-generate=")]
exe = target / "release" / "railpath"
exe.parent.mkdir(parents=True, exist_ok=True)
if gen:
    exe.write_text(f'''#!/usr/bin/env python3
import json, os, pathlib, sys
with open({str(log)!r}, "a") as f:
    f.write(json.dumps({{"tool": "instrumented", "args": sys.argv[1:]}}) + "\\n")
if os.environ.get("STUB_FAIL_ON") and sys.argv[2].endswith(os.environ["STUB_FAIL_ON"]):
    sys.exit(1)
raw = pathlib.Path({gen[0]!r})
raw.mkdir(parents=True, exist_ok=True)
(raw / f"default_{{os.getpid()}}.profraw").write_text(sys.argv[2])
''')
else:
    exe.write_text("#!/bin/sh\n")
exe.chmod(0o755)
"""

RUSTC = r"""#!/bin/sh
case "$*" in
  "--print sysroot") echo "$STUB_SYSROOT" ;;
  "-vV") echo "rustc 1.95.0"; echo "host: HOST" ;;
  # The probe for LLVM's ext-TSP block layout: an LLVM without the option refuses it.
  "--crate-name probe -Cllvm-args=-enable-ext-tsp-block-placement --emit=metadata -o "*" -")
    cat >/dev/null
    if [ -n "${STUB_NO_EXT_TSP:-}" ]; then
      echo "Unknown command line argument '-enable-ext-tsp-block-placement'" >&2; exit 1
    fi ;;
  *) echo "unexpected rustc call: $*" >&2; exit 3 ;;
esac
""".replace("HOST", HOST)

# The stand-in llvm-profdata: `merge -o OUT DIR` writes the sorted raw profiles' contents.
PROFDATA = r"""#!/usr/bin/env python3
import json, os, pathlib, sys
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps({"tool": "llvm-profdata", "args": sys.argv[1:]}) + "\n")
assert sys.argv[1:3] == ["merge", "-o"], sys.argv
raws = sorted(pathlib.Path(sys.argv[4]).glob("*.profraw"))
pathlib.Path(sys.argv[3]).write_text("\n".join(sorted(r.read_text() for r in raws)))
"""


def write_exe(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    """A copy of what the script reads: itself and the example scenarios."""
    copy = tmp_path / "repo"
    (copy / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "build-release.sh", copy / "scripts")
    shutil.copytree(ROOT / "scenarios", copy / "scenarios")
    return copy


def env_for(tmp_path: pathlib.Path, *, profdata: bool = True, **extra: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    sysroot = tmp_path / "sysroot"
    write_exe(bin_dir / "cargo", CARGO)
    write_exe(bin_dir / "rustc", RUSTC)
    tool = sysroot / "lib" / "rustlib" / HOST / "bin" / "llvm-profdata"
    if profdata:
        write_exe(tool, PROFDATA)
    elif tool.exists():
        tool.unlink()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CARGO", "RUSTC", "CARGO_TARGET_DIR", "RUSTFLAGS", "RAILPATH_PGO")
    }
    env.update(
        PATH=f"{bin_dir}:{env['PATH']}",
        STUB_LOG=str(tmp_path / "calls.jsonl"),
        STUB_SYSROOT=str(sysroot),
        **extra,
    )
    return env


def build(
    repo: pathlib.Path, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    log = pathlib.Path(env["STUB_LOG"])
    if log.exists():
        log.unlink()
    p = subprocess.run(
        ["bash", str(repo / "scripts" / "build-release.sh")],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return p, calls


def scenarios(repo: pathlib.Path) -> list[str]:
    return sorted(str(s.relative_to(repo)) for s in (repo / "scenarios").rglob("*.toml"))


def test_instrumented_build_then_training_then_the_optimised_build(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    env = env_for(tmp_path)
    p, calls = build(repo, env)
    assert p.returncode == 0, p.stdout + p.stderr
    target = repo / "target"
    pgo = target / "pgo"
    gen, *runs, merge, final = calls
    assert gen["tool"] == "cargo" and gen["args"] == ["build", "--release", "-p", "railpath-cli"]
    assert f"-Cprofile-generate={pgo}/raw" in gen["rustflags"].split()
    assert gen["target"] == str(pgo / "build")
    # Every example scenario, once, seed 1, by the instrumented binary.
    assert [r["tool"] for r in runs] == ["instrumented"] * len(runs)
    assert sorted(r["args"][1] for r in runs) == scenarios(repo)
    assert all(r["args"][0] == "run" and r["args"][2:4] == ["--seed", "1"] for r in runs)
    assert merge["args"] == ["merge", "-o", str(pgo / "merged.profdata"), str(pgo / "raw")]
    # The optimised build: the release profile, into the usual target dir, with the merged profile.
    assert final["tool"] == "cargo" and final["args"] == [
        "build",
        "--release",
        "-p",
        "railpath-cli",
    ]
    assert f"-Cprofile-use={pgo}/merged.profdata" in final["rustflags"].split()
    assert "-Cllvm-args=-enable-ext-tsp-block-placement" in final["rustflags"].split()
    assert "-Cprofile-generate" not in final["rustflags"]
    # The layout is the optimised build's alone: the instrumented build has no profile to use.
    assert "ext-tsp" not in gen["rustflags"]
    assert final["target"] == str(target)
    assert (pgo / "merged.profdata").read_text().splitlines() == scenarios(repo)
    # The raw counts and the training's outputs are not left behind.
    assert not (pgo / "raw").exists() and not (pgo / "runs").exists()

    # Nothing changed: the profile is kept (no training), the release build asked again (a no-op
    # for cargo).
    p, calls = build(repo, env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [c["tool"] for c in calls] == ["cargo", "cargo"]
    assert "the profile is up to date" in p.stdout
    # A scenario changed: trained again.
    first = repo / scenarios(repo)[0]
    first.write_text(first.read_text() + "\n")
    p, calls = build(repo, env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sum(c["tool"] == "instrumented" for c in calls) == len(scenarios(repo))


def test_rustflags_and_target_dir_are_kept(repo: pathlib.Path, tmp_path: pathlib.Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    p, calls = build(
        repo, env_for(tmp_path, RUSTFLAGS="-Cdebuginfo=1", CARGO_TARGET_DIR=str(elsewhere))
    )
    assert p.returncode == 0, p.stdout + p.stderr
    gen, final = calls[0], calls[-1]
    assert gen["target"] == str(elsewhere / "pgo" / "build") and final["target"] == str(elsewhere)
    for c in (gen, final):
        assert c["rustflags"].split()[0] == "-Cdebuginfo=1"


@pytest.mark.parametrize("why", ["RAILPATH_PGO=0", "no llvm-profdata"])
def test_plain_build_when_asked_or_without_llvm_profdata(
    repo: pathlib.Path, tmp_path: pathlib.Path, why: str
) -> None:
    env = (
        env_for(tmp_path, RAILPATH_PGO="0")
        if why == "RAILPATH_PGO=0"
        else env_for(tmp_path, profdata=False)
    )
    p, calls = build(repo, env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(calls) == 1 and calls[0]["args"] == ["build", "--release", "-p", "railpath-cli"]
    assert "profile" not in calls[0]["rustflags"]
    assert "plain release build" in p.stdout
    if why == "no llvm-profdata":
        assert "rustup component add llvm-tools" in p.stdout


def test_bad_railpath_pgo_is_an_error(repo: pathlib.Path, tmp_path: pathlib.Path) -> None:
    p, calls = build(repo, env_for(tmp_path, RAILPATH_PGO="yes"))
    assert p.returncode == 2
    assert "RAILPATH_PGO: expected 0 or 1, found 'yes'" in p.stderr
    assert calls == []


def test_a_failing_training_run_stops_the_build(repo: pathlib.Path, tmp_path: pathlib.Path) -> None:
    bad = scenarios(repo)[3]
    p, calls = build(repo, env_for(tmp_path, STUB_FAIL_ON=bad))
    assert p.returncode == 1
    assert f"the instrumented build failed on {bad}" in p.stderr
    # No optimised build with a partial profile.
    assert [c["tool"] for c in calls].count("cargo") == 1
    assert not (repo / "target" / "pgo" / "merged.profdata").exists()


def test_a_target_dir_with_a_space_is_an_error(repo: pathlib.Path, tmp_path: pathlib.Path) -> None:
    spaced = tmp_path / "my target"
    p, calls = build(repo, env_for(tmp_path, CARGO_TARGET_DIR=str(spaced)))
    assert p.returncode == 2
    assert f"the profile's directory '{spaced}/pgo' has a space" in p.stderr
    assert calls == []


def test_an_llvm_without_the_ext_tsp_layout_keeps_its_default_layout(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    p, calls = build(repo, env_for(tmp_path, STUB_NO_EXT_TSP="1"))
    assert p.returncode == 0, p.stdout + p.stderr
    final = calls[-1]
    assert f"-Cprofile-use={repo}/target/pgo/merged.profdata" in final["rustflags"].split()
    assert "ext-tsp" not in final["rustflags"]
    assert "has no enable-ext-tsp-block-placement; LLVM's default block layout" in p.stdout
    assert not (repo / "target" / "pgo" / "probe.rmeta").exists()
