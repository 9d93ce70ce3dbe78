#!/usr/bin/env bash
# `make fuzz`: every fuzz target in fuzz/ (cargo-fuzz, libFuzzer) for FUZZ_SECONDS each (default
# 30), two at a time, each on a corpus seeded from the repository's own example files (scenarios,
# traces, the gateway's packaged configs, tests' fixtures) and fuzz/seeds/. Limits per input:
# 10 s and 2 GB; a panic, a hang or an allocation past the limit is a finding, saved under
# out/fuzz/artifacts/<target>/. Ends with one line per target (inputs run, corpus size, result)
# and exits 1 on any finding. Reproduce a finding with
#   (cd fuzz && cargo fuzz run --sanitizer none TARGET ../out/fuzz/artifacts/TARGET/crash-...)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-2}
CARGO=${CARGO:-cargo}
targets=(scenario overrides mahimahi carrier_csv handover_table run_summary gateway_config nmea gpsd replay track capture)

if ! "$CARGO" fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz (crates.io) ..."
  "$CARGO" install cargo-fuzz --version 0.13.2 --locked || exit 1
fi
# libFuzzer coverage without a sanitizer works on the stable toolchain; panics, hangs and memory
# are what these targets look for (the code is safe Rust).
(cd fuzz && "$CARGO" fuzz build --sanitizer none) || exit 1

out=$root/out/fuzz
rm -rf "$out"
mkdir -p "$out"
seed() { # seed TARGET FILES...: copy the files that exist into the target's corpus
  local t=$1; shift
  mkdir -p "$out/corpus/$t"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$out/corpus/$t/$(echo "$f" | tr / _)"; done
  for f in fuzz/seeds/"$t"/*; do [ -f "$f" ] && cp "$f" "$out/corpus/$t/"; done
  return 0
}
seed scenario scenarios/*.toml scenarios/*/*.toml crates/cli/tests/scenarios/*.toml crates/cli/tests/bad_scenarios/*.toml
seed overrides
seed mahimahi scenarios/traces/*.trace crates/cli/tests/bad_scenarios/*.trace
seed carrier_csv
seed handover_table
seed run_summary
seed gateway_config packaging/*.toml
seed nmea
seed gpsd
seed replay
seed track
seed capture

run_one() {
  local t=$1
  mkdir -p "$out/artifacts/$t"
  local dict=()
  case $t in scenario|overrides) dict=(-dict=scenario.dict) ;; esac
  (cd fuzz && "$CARGO" fuzz run --sanitizer none "$t" "$out/corpus/$t" -- "${dict[@]}" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t/") \
    > "$out/$t.log" 2>&1
  echo $? > "$out/$t.rc"
}
export -f run_one
export out seconds CARGO
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}'

echo
echo "fuzz: $seconds s per target"
fail=0
for t in "${targets[@]}"; do
  rc=$(cat "$out/$t.rc" 2>/dev/null || echo 1)
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t.log" | grep -o '[0-9]*$' | tail -1)
  corpus=$(ls "$out/corpus/$t" | wc -l)
  if [ "$rc" -eq 0 ]; then
    verdict="no finding"
  else
    verdict="FINDING (exit $rc): $(ls "$out/artifacts/$t" | head -3 | tr '\n' ' ')log $out/$t.log"
    fail=1
  fi
  printf '  %-15s %10s inputs  %5s in corpus  %s\n' "$t" "${runs:-?}" "$corpus" "$verdict"
done
exit $fail
