#!/usr/bin/env bash
# The main job on its embedded defaults: run every scenario under scenarios/ and print a table.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-out}
bin="$here/target/release/railpath"
mkdir -p "$out"
for s in "$here"/scenarios/*.toml; do
  name=$(basename "$s" .toml)
  echo "== $name"
  "$bin" run "$s" --out "$out/$name"
done
echo "results in $out/"
