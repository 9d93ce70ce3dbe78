#!/usr/bin/env bash
# `make build`: the CLI's release build (target/release/railpath), optimised with a profile of
# the simulator's own work: profile-guided optimisation as the rustc book describes it
# ("Profile-guided Optimization": LLVM's instrumentation-based PGO, clang's -fprofile-generate
# and -fprofile-use):
#   1. an instrumented release build (-Cprofile-generate) under $target/pgo/;
#   2. it runs every example scenario under scenarios/ once, seed 1 (about 5 s): the training
#      workload is what users run, not `railpath bench`'s cases, which measure the result;
#   3. llvm-profdata (rustup's llvm-tools component: the LLVM of this rustc) merges the counts;
#   4. the release build with -Cprofile-use, its blocks laid out by the profile (ext-TSP, below),
#      where `cargo build --release` puts it.
# A profile changes how the code is laid out, inlined and branched, not what it computes: the
# outputs are those of a plain build byte for byte (scripts/outputs.sh --diff; the numbers are in
# docs/performance.md). The PGO build takes about 2.5 minutes more than a plain one (the
# instrumented build).
#
#   env: RAILPATH_PGO=0       a plain `cargo build --release -p railpath-cli` instead
#        CARGO, RUSTC, CARGO_TARGET_DIR, RUSTFLAGS are honoured (RUSTFLAGS is added to)
# Without llvm-profdata (a toolchain not from rustup, or llvm-tools not installable) the build is
# the plain one, and says so.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cargo=${CARGO:-cargo}
target=${CARGO_TARGET_DIR:-$here/target}
case "$target" in /*) ;; *) target=$here/$target ;; esac
plain() {
  echo "build-release: $1; plain release build"
  "$cargo" build --release -p railpath-cli
}
pgo=${RAILPATH_PGO:-1}
case "$pgo" in
  0) plain "RAILPATH_PGO=0"; exit 0 ;;
  1) ;;
  *) echo "build-release: RAILPATH_PGO: expected 0 or 1, found '$pgo'" >&2; exit 2 ;;
esac
# The llvm-profdata of this rustc's LLVM (a profile's format follows the LLVM version).
rustc=${RUSTC:-rustc}
sysroot=$("$rustc" --print sysroot 2>/dev/null || true)
host=$("$rustc" -vV 2>/dev/null | sed -n 's/^host: //p')
profdata=$sysroot/lib/rustlib/$host/bin/llvm-profdata
if [ -z "$sysroot" ] || [ ! -x "$profdata" ]; then
  plain "no llvm-profdata for this rustc at $profdata (rustup component add llvm-tools)"
  exit 0
fi
dir=$target/pgo
# RUSTFLAGS is split at spaces: a profile's path cannot hold one.
case "$dir" in
  *[[:space:]]*)
    echo "build-release: the profile's directory '$dir' has a space, which RUSTFLAGS cannot carry; set CARGO_TARGET_DIR to a path without one, or RAILPATH_PGO=0 for a plain build" >&2
    exit 2 ;;
esac
rm -rf "$dir/raw" "$dir/runs"
mkdir -p "$dir/raw"
echo "build-release: 1/3 instrumented build (profile-guided optimisation; RAILPATH_PGO=0 skips it)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$dir/raw" CARGO_TARGET_DIR="$dir/build" \
  "$cargo" build --release -p railpath-cli
# The profile is kept while the instrumented binary and the scenarios are those it was taken
# with: counts vary a little from run to run (the progress display and the wall-time figures
# follow the clock; the simulation's own counts do not), and a new file would rebuild every crate
# of step 4.
stamp=$( (sha256sum "$dir/build/release/railpath"; find scenarios -name '*.toml' | sort | xargs sha256sum) | sha256sum | cut -d' ' -f1)
if [ -f "$dir/merged.profdata" ] && [ "$(cat "$dir/merged.for" 2>/dev/null)" = "$stamp" ]; then
  echo "build-release: 2/3 training: the profile is up to date"
else
  echo "build-release: 2/3 training: every example scenario under scenarios/, seed 1"
  n=0
  while IFS= read -r s; do
    rel=${s#scenarios/}
    if ! "$dir/build/release/railpath" run "$s" --seed 1 --out "$dir/runs/${rel%.toml}" >/dev/null; then
      echo "build-release: the instrumented build failed on $s (above)" >&2
      exit 1
    fi
    n=$((n + 1))
  done < <(find scenarios -name '*.toml' | sort)
  "$profdata" merge -o "$dir/merged.profdata" "$dir/raw"
  echo "$stamp" >"$dir/merged.for"
  echo "build-release: profile of $n scenarios: $dir/merged.profdata"
fi
rm -rf "$dir/raw" "$dir/runs"
# With the profile, basic blocks are laid out by LLVM's ext-TSP model (the block order that
# maximises the profile-weighted jumps that fall through or stay short: A. Newell and S. Pupyrev,
# "Improved Basic Block Reordering", IEEE Transactions on Computers 69(12), 2020; LLVM's
# MachineBlockPlacement, option enable-ext-tsp-block-placement, which applies only to functions
# with a profile). It changes where code is, not what it computes; measured in docs/performance.md
# (issue 29, seventeenth round). The option is an LLVM internal one: a rustc whose LLVM lacks it
# gets the default layout, and the build says so.
layout="-Cllvm-args=-enable-ext-tsp-block-placement"
if ! echo 'fn main() {}' | "$rustc" --crate-name probe "$layout" --emit=metadata -o "$dir/probe.rmeta" - >/dev/null 2>&1; then
  echo "build-release: this rustc's LLVM has no enable-ext-tsp-block-placement; LLVM's default block layout"
  layout=""
fi
rm -f "$dir/probe.rmeta"
echo "build-release: 3/3 release build with the profile"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$dir/merged.profdata $layout" "$cargo" build --release -p railpath-cli
