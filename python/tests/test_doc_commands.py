"""The command blocks of README.md and docs/user-guide.md run as written, in order, from a copy of
the repository (issue 16): a reader who pastes them gets what the docs promise.

How the docs mark their blocks:
- ```sh: commands; this test runs every line of them, block after block, in one copy of the
  repository (so later blocks see what earlier ones wrote, as a reader's shell would).
- ```text (synopses, sample output), ```toml, ```json: not run.
- A ```sh block preceded by `<!-- docs-test: covered by PATH[::NAME], ... -->` is not run here
  because it takes minutes or is the test suite itself; each PATH (and NAME, a test in it) must
  exist, so the marker cannot point at nothing.
- A fence without a language is an error: every block says whether it runs.

README's ```python blocks run too, in one namespace, from the copy's root.

The one line not run as written is `cargo build --release -p railpath-cli`: `make test` has just
built the CLI (scripts/python-test.sh; cargo's dev profile unless RAILPATH_PROFILE=release) and a
release build of a copy would take minutes, so a `cargo` on PATH checks the arguments and links
the CLI under test (RAILPATH_BIN) into the copy's target/release. Outputs must land under out/
(or outside the copy): the test fails if a command leaves anything else in the copy's root.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import time

import pytest

DOCS = ("README.md", "docs/user-guide.md")
COVERED = re.compile(r"<!--\s*docs-test:\s*covered by\s+(.+?)\s*-->")
# Each block's limit; the slowest (a 40 s testbed run) takes about a minute.
BLOCK_TIMEOUT_S = 600


class Block:
    def __init__(self, doc: str, line: int, lang: str, body: str, marker: str) -> None:
        self.doc, self.line, self.lang, self.body, self.marker = doc, line, lang, body, marker

    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(root: pathlib.Path, doc: str) -> list[Block]:
    """Fenced blocks of `doc` with their language and the line before the fence."""
    out: list[Block] = []
    lines = (root / doc).read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start = i
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{doc}:{start + 1}: unclosed ``` fence")
        out.append(Block(doc, start + 1, m.group(1), "\n".join(body) + "\n", prev))
        i += 1
    return out


def test_every_block_says_whether_it_runs(root):
    untagged = [b.where() for d in DOCS for b in blocks(root, d) if b.lang == ""]
    assert not untagged, (
        f"fenced blocks without a language at {untagged}: tag commands `sh` (run by this test) "
        "and synopses or sample output `text`"
    )


def test_covered_markers_name_existing_tests(root):
    n = 0
    for d in DOCS:
        for b in blocks(root, d):
            m = COVERED.search(b.marker)
            if not m:
                continue
            n += 1
            assert b.lang == "sh", f"{b.where()}: a docs-test marker before a {b.lang!r} block"
            for ref in re.split(r"\s*,\s*", m.group(1)):
                file, _, name = ref.partition("::")
                path = root / file
                assert path.is_file(), f"{b.where()}: marker names {file}, which does not exist"
                if name:
                    assert re.search(rf"\b(fn|def)\s+{name}\b", path.read_text()), (
                        f"{b.where()}: marker names {name}, not a test in {file}"
                    )
    assert n >= 2


def _copy(root: pathlib.Path, dst: pathlib.Path) -> None:
    """The files a clone has (tracked, plus new ones not ignored), without build outputs."""
    files = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        src = root / os.fsdecode(f)
        if not src.is_file():  # deleted in the work tree, not yet in the index
            continue
        target = dst / os.fsdecode(f)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def _shims(bindir: pathlib.Path, cli: pathlib.Path) -> None:
    bindir.mkdir()
    real = shutil.which("cargo") or "cargo"
    (bindir / "cargo").write_text(
        "#!/usr/bin/env bash\n"
        "# docs test: the CLI under test is already built (scripts/python-test.sh)\n"
        'if [ "$*" = "build --release -p railpath-cli" ]; then\n'
        "  mkdir -p target/release\n"
        f'  ln -sf "{cli}" target/release/railpath\n'
        "  exit 0\n"
        "fi\n"
        f'exec "{real}" "$@"\n'
    )
    (bindir / "cargo").chmod(0o755)
    (bindir / "railpath").symlink_to(cli)


def test_readme_and_user_guide_commands_run_as_written(root, cli, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("SKIP docs commands: they include testbed runs, which need root")
    if shutil.which("git") is None:
        pytest.fail("git is needed to copy the repository's files")
    work = tmp_path / "clone"
    _copy(root, work)
    bindir = tmp_path / "bin"
    _shims(bindir, cli.resolve())
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    env.pop("CARGO_TARGET_DIR", None)
    before = {p.name for p in work.iterdir()}
    ran = 0
    python_ns: dict = {"__name__": "__readme__"}
    for d in DOCS:
        for b in blocks(root, d):
            if b.lang == "python" and d == "README.md":
                cwd = os.getcwd()
                os.chdir(work)
                try:
                    exec(compile(b.body, b.where(), "exec"), python_ns)
                except Exception as e:
                    raise AssertionError(f"{b.where()} failed:\n{b.body}") from e
                finally:
                    os.chdir(cwd)
                ran += 1
                continue
            if b.lang != "sh" or COVERED.search(b.marker):
                continue
            t0 = time.monotonic()
            p = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", b.body],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=BLOCK_TIMEOUT_S,
            )
            assert p.returncode == 0, (
                f"{b.where()} exited {p.returncode}:\n{b.body}\n"
                f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
            )
            print(f"{b.where()}: {time.monotonic() - t0:.1f} s")
            ran += 1
    assert ran >= 3
    stray = sorted({p.name for p in work.iterdir()} - before - {"out", "target"})
    assert not stray, f"the docs' commands wrote {stray} into the repository root, not under out/"
    # What the README promises the commands produce.
    assert (work / "out" / "table.json").is_file()
    assert (work / "out" / "repro" / "index.html").is_file()
