#!/usr/bin/env bash
# The outputs a refactor or an optimisation must keep byte for byte: every scenario under
# scenarios/ (top level and paper directories) run with seeds 1, 2 and 3 (summary.json and
# timeseries.csv), and every reproduction's summary.json (`railpath repro all`).
#
#   usage: scripts/outputs.sh BIN OUT          write BIN's outputs under OUT
#          scripts/outputs.sh --diff OLD NEW   compare two such directories; exit 1 on a difference
#
# `wall_s` (the run's wall time) is the one field that may differ between two runs of the same
# binary: it is set to 0 in the copies compared. Scenarios are run by their path relative to the
# checkout (a summary names its scenario file), so two checkouts compare alike. Papers'
# report.html files are not compared (their layout may change); their summary.json is.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--diff" ]; then
  [ $# -eq 3 ] || { echo "usage: $0 --diff OLD NEW" >&2; exit 2; }
  old=$2 new=$3
  status=0
  n=0
  while IFS= read -r f; do
    n=$((n + 1))
    if [ ! -f "$new/$f" ]; then
      echo "missing in $new: $f"; status=1
    elif ! cmp -s "$old/$f" "$new/$f"; then
      echo "differs: $f"; status=1
    fi
  done < <(cd "$old" && find . -type f \( -name summary.json -o -name timeseries.csv \) | sort)
  extra=$(comm -13 <(cd "$old" && find . -type f | sort) <(cd "$new" && find . -type f | sort))
  [ -z "$extra" ] || { echo "only in $new:"; echo "$extra"; }
  [ $status -eq 0 ] && echo "outputs: $n files identical"
  exit $status
fi
[ $# -eq 2 ] || { echo "usage: $0 BIN OUT | --diff OLD NEW" >&2; exit 2; }
bin=$(realpath "$1")
mkdir -p "$2"
out=$(realpath "$2")
cd "$here"
status=0
while IFS= read -r s; do
  rel=${s#scenarios/}
  name=${rel%.toml}
  for seed in 1 2 3; do
    dir="$out/run/$name/seed$seed"
    if ! "$bin" run "$s" --seed "$seed" --out "$dir" >/dev/null; then
      echo "outputs: $rel seed $seed failed" >&2
      status=1
      continue
    fi
    sed -i 's/"wall_s": [0-9.e+-]*/"wall_s": 0/' "$dir/summary.json"
  done
done < <(find scenarios -name '*.toml' | sort)
if ! "$bin" repro all --out "$out/repro" >/dev/null; then
  echo "outputs: repro all failed" >&2
  status=1
fi
find "$out/repro" -type f ! -name summary.json -delete
exit $status
