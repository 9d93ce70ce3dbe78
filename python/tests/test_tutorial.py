"""Every ```python block of docs/tutorial.md runs, in order, in one namespace, from the
repository root (as a reader would run them)."""

from __future__ import annotations

import os
import re


def test_tutorial_code_blocks_run(root):
    text = (root / "docs" / "tutorial.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 8
    namespace: dict = {"__name__": "__tutorial__"}
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for i, code in enumerate(blocks):
            try:
                exec(compile(code, f"docs/tutorial.md block {i + 1}", "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"tutorial block {i + 1} failed:\n{code}") from e
    finally:
        os.chdir(cwd)
    assert (root / "out" / "tutorial" / "stall-vs-buffer.png").is_file()
    stalls = namespace["stalls"]
    # The finding the tutorial shows: a 1 s outage stalls a Linux MPTCP download for a while.
    assert stalls["stall_s"].max() >= 0.5
