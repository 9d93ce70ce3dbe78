#!/usr/bin/env bash
# The Python package's checks (part of `make test`): a virtual environment in .venv with the
# test dependencies (pyproject.toml's `test` extra), the extension module built in place by
# maturin (release, sharing cargo's target directory), ruff, then pytest against the release CLI.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
venv=${RAILPATH_VENV:-$here/.venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
py="$venv/bin/python"
# maturin develop installs into $VIRTUAL_ENV when one is set: make it this one, whatever shell
# this runs from (an activated environment elsewhere would otherwise receive the package).
export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:$PATH"
# The test extra, read from pyproject.toml (one list of dependencies), plus the runtime ones.
mapfile -t deps < <("$py" - <<'PY'
import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))
for d in p["project"]["dependencies"] + p["project"]["optional-dependencies"]["test"]:
    print(d)
print(p["build-system"]["requires"][0])
PY
)
"$py" -m pip install -q --disable-pip-version-check "${deps[@]}"
cargo build --release -p railpath-cli
"$venv/bin/maturin" develop --release -q
"$venv/bin/ruff" check python
"$venv/bin/ruff" format --check python
export RAILPATH_BIN=${RAILPATH_BIN:-${CARGO_TARGET_DIR:-$here/target}/release/railpath}
exec "$py" -m pytest -q python/tests
