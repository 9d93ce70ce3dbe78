"""Shared fixtures: the repository root and the CLI binary the Python results are compared with."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture
def cli() -> pathlib.Path:
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    # scripts/python-test.sh sets RAILPATH_BIN (the dev-profile CLI, or with
    # RAILPATH_PROFILE=release the release one).
    exe = pathlib.Path(os.environ.get("RAILPATH_BIN", target / "release" / "railpath"))
    if not exe.is_file():
        pytest.fail(
            f"no railpath binary at {exe}: build it with cargo build --release -p railpath-cli"
        )
    return exe
