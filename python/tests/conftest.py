"""Shared fixtures: the repository root, the CLI binary the Python results are compared with, and a
loader of the scripts under scripts/."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import sys
from types import ModuleType
from typing import Callable

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture
def script() -> Callable[[str], ModuleType]:
    """A loader of `scripts/NAME.py` as a module (the scripts are files, not a package)."""

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        # Registered before it runs: dataclasses look their module up by name.
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    return load


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
