#!/usr/bin/env bash
# The Python package's checks (part of `make test`): a virtual environment in .venv with the
# test dependencies (pyproject.toml's `test` extra), the extension module built in place by
# maturin, ruff, then pytest against the CLI. Both in cargo's dev profile (optimised: opt-level
# 1, dependencies 2; see Cargo.toml): the same code as a release build, without two more
# link-time-optimised builds (about 2 minutes); the simulator runs about 1.4x slower than in
# release. The CLI is the one `cargo test --workspace` builds for its own tests (a no-op here
# after `cargo test`; `cargo build -p railpath-cli` would resolve the dependencies' features
# for that package alone and rebuild most of them). The extension module's own build reuses the
# test build's crates too: only pyo3's crates and railpath-py are compiled (Cargo.toml's
# `[profile.dev.build-override]` says why). RAILPATH_PROFILE=release tests release builds instead.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
t0=$SECONDS
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
profile=${RAILPATH_PROFILE:-dev}
case "$profile" in
  dev) dir=debug; flag=(); "${CARGO:-cargo}" test --workspace --no-run -q ;;
  release) dir=release; flag=(--release); "${CARGO:-cargo}" build --release -p railpath-cli ;;
  *) echo "python-test.sh: RAILPATH_PROFILE: expected dev or release, found $profile" >&2; exit 2 ;;
esac
t1=$SECONDS
"$venv/bin/maturin" develop "${flag[@]}" -q
t2=$SECONDS
"$venv/bin/ruff" check python
"$venv/bin/ruff" format --check python
export RAILPATH_BIN=${RAILPATH_BIN:-${CARGO_TARGET_DIR:-$here/target}/$dir/railpath}
t3=$SECONDS
# The ten slowest tests, and where the time went: what keeps `make test` within CI's budget.
rc=0
"$py" -m pytest -q --durations=10 python/tests || rc=$?
echo "python checks: environment and CLI build $((t1 - t0)) s, extension module $((t2 - t1)) s, ruff $((t3 - t2)) s, pytest $((SECONDS - t3)) s"
exit $rc
