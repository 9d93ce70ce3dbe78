#!/usr/bin/env bash
# `make test` after setup and lint: every Rust test binary of the workspace (--no-fail-fast: one
# failing binary does not hide the others' results), then the Python package's checks; ends with
# one line per part and their times, and exits 1 if any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
"${CARGO:-cargo}" test --workspace --no-fail-fast
rust=$?
t1=$SECONDS
./scripts/python-test.sh
py=$?
t2=$SECONDS
verdict() { if [ "$1" -eq 0 ]; then echo passed; else echo "FAILED (exit $1; the failures are listed above)"; fi; }
echo
echo "make test: Rust workspace tests $(verdict $rust) in $((t1 - t0)) s; Python package checks $(verdict $py) in $((t2 - t1)) s"
[ "$rust" -eq 0 ] && [ "$py" -eq 0 ]
