#!/usr/bin/env bash
# The main job (`make run`): run every example scenario under scenarios/ with the release build of
# `railpath`, writing OUT/<scenario>/summary.json and OUT/<scenario>/timeseries.csv and printing
# each run's flow table; then reproduce the source papers (`railpath repro all`, OUT/repro/) and
# end by saying where their index.html is. Every scenario is attempted; the exit status is that of the first
# failure (2: invalid scenario, 1: run failed), 0 when all succeed.
#   usage: scripts/run-main.sh [OUT]        (default OUT: out)
#   env:   RAILPATH_BIN overrides the binary (default: $CARGO_TARGET_DIR or ./target, release)
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-out}
bin=${RAILPATH_BIN:-${CARGO_TARGET_DIR:-$here/target}/release/railpath}
if [ ! -x "$bin" ]; then
  echo "run-main: no railpath binary at $bin; build it with: make build (or cargo build --release -p railpath-cli)" >&2
  exit 1
fi
shopt -s nullglob
scenarios=("$here"/scenarios/*.toml)
if [ ${#scenarios[@]} -eq 0 ]; then
  echo "run-main: no scenarios in $here/scenarios" >&2
  exit 1
fi
mkdir -p "$out"
status=0
failed=()
for s in "${scenarios[@]}"; do
  name=$(basename "$s" .toml)
  echo "== $name"
  "$bin" run "$s" --out "$out/$name"
  rc=$?
  if [ $rc -ne 0 ]; then
    failed+=("$name (exit $rc)")
    [ $status -ne 0 ] || status=$rc
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-main: ${#failed[@]} of ${#scenarios[@]} scenarios failed: ${failed[*]}" >&2
else
  echo "run-main: ${#scenarios[@]} scenarios; results in $out/"
fi
# The papers' reproductions, with their reports (railpath repro all).
echo "== repro all"
"$bin" repro all --out "$out/repro"
rc=$?
if [ $rc -ne 0 ]; then
  echo "run-main: railpath repro all failed (exit $rc)" >&2
  [ $status -ne 0 ] || status=$rc
else
  echo "run-main: the reproductions' report: $out/repro/index.html"
fi
exit $status
