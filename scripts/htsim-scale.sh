#!/usr/bin/env bash
# htsim's cost per packet on railpath's TCP scaling case (issue 29; docs/performance.md):
#
#   scripts/htsim-scale.sh HTSIM_CHECKOUT [REPEAT]
#
# HTSIM_CHECKOUT is a clone of github.com/Broadcom/csg-htsim (railpath does not fetch or keep
# it). Builds its sim/libhtsim.a (its own Makefile, -O3) when absent, compiles
# scripts/htsim/scale.cpp against it into $CARGO_TARGET_DIR/htsim-scale (target/ by default),
# and prints one JSON line per flow count (1, 10, 100, 1000), the best of REPEAT runs (default
# 3) by wall time, in the form `railpath bench` prints, so that
#   { railpath bench --case scale-tcp --repeat 3; scripts/htsim-scale.sh ~/csg-htsim; } > s.jsonl
#   scripts/scaling_figure.py s.jsonl docs/img/scaling.svg
# draws both.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 HTSIM_CHECKOUT [REPEAT]" >&2
  exit 2
fi
htsim=$1
repeat=${2:-3}
case "$repeat" in
  '' | *[!0-9]* | 0) echo "htsim-scale: REPEAT: expected a whole number of at least 1, found '$repeat'" >&2; exit 2 ;;
esac
if [ ! -f "$htsim/sim/Makefile" ] || [ ! -f "$htsim/sim/tcp.h" ]; then
  echo "htsim-scale: '$htsim' is not a csg-htsim checkout (no sim/Makefile and sim/tcp.h)" >&2
  exit 2
fi
cxx=${CXX:-g++}
if ! command -v "$cxx" >/dev/null; then
  echo "htsim-scale: no C++ compiler '$cxx' (set CXX)" >&2
  exit 2
fi
if [ ! -f "$htsim/sim/libhtsim.a" ]; then
  echo "htsim-scale: building $htsim/sim/libhtsim.a" >&2
  make -C "$htsim/sim" -j"$(nproc)" libhtsim.a >&2
fi
target=${CARGO_TARGET_DIR:-$here/target}
mkdir -p "$target/htsim-scale"
bin=$target/htsim-scale/scale
"$cxx" -std=c++11 -O3 -w -I"$htsim/sim" "$here/scripts/htsim/scale.cpp" "$htsim/sim/libhtsim.a" -o "$bin"
for n in 1 10 100 1000; do
  best=
  for _ in $(seq "$repeat"); do
    line=$("$bin" "$n")
    wall=$(printf '%s' "$line" | sed -n 's/.*"wall_s":\([0-9.]*\).*/\1/p')
    if [ -z "$best" ] || awk -v a="$wall" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$wall
      best_line=$line
    fi
  done
  printf '%s\n' "$best_line"
done
