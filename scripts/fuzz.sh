#!/usr/bin/env bash
# Builds the libFuzzer targets (test/fuzz, clang with ASan + UBSan, in
# build-fuzz) and runs each for SECONDS_PER_TARGET seconds (default 60), one
# after another. Usage: scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]
#
# Seeds: test/fuzz/seeds/TARGET, test/fuzz/regressions/TARGET and the goldens
# of the target's format. The growing corpus is kept in
# build-fuzz/corpus/TARGET, so later runs start where earlier ones stopped.
# A crash, leak, timeout (a single input over 10 s) or out-of-memory (over
# 2 GiB) fails the run; the input is saved as build-fuzz/findings/TARGET/
# {crash,leak,timeout,oom}-HASH. Replay one with build-fuzz/test/fuzz/
# TARGET_fuzzer FILE, minimize it with -minimize_crash=1, and keep it as a
# regression: copy it to test/fuzz/regressions/TARGET/ (fuzz_replay_TARGET
# in the test suite replays every file there).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
all=(pte_reader ptd_reader bpte_reader json manifest bundle_cases safetensors
     safetensors_index npy nfat_reader archive program_flatbuffer)
[ "$#" -gt 0 ] && targets=("$@") || targets=("${all[@]}")

# The goldens that seed each target.
golden_glob() {
  case "$1" in
    pte_reader | program_flatbuffer) echo '*.pte' ;;
    ptd_reader) echo '*.ptd' ;;
    bpte_reader) echo '*.bpte' ;;
    nfat_reader) echo '*.nfat' ;;
    json) echo '*.json' ;;
    manifest) echo '*.input.json' ;;
    *) echo '' ;;
  esac
}

build="build-fuzz"
scripts/setup.sh "$build" fuzz
bins=()
for t in "${targets[@]}"; do bins+=("test/fuzz/${t}_fuzzer"); done
ninja -C "$build" "${bins[@]}" >/dev/null

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
failed=()
summary=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  findings="$build/findings/$t"
  seeds="$build/seeds/$t"
  mkdir -p "$corpus" "$findings"
  rm -rf "$seeds"
  mkdir -p "$seeds"
  glob=$(golden_glob "$t")
  if [ -n "$glob" ]; then
    # shellcheck disable=SC2086  # the glob is meant to expand
    cp test/golden/$glob "$seeds"/
  fi
  for d in "test/fuzz/seeds/$t" "test/fuzz/regressions/$t"; do
    if [ -d "$d" ]; then cp "$d"/* "$seeds"/; fi
  done
  log="$build/fuzz-$t.log"
  echo "fuzz: $t for ${seconds}s (log $log)"
  rc=0
  "$build/test/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" "$seeds" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  status=ok
  if [ "$rc" -ne 0 ]; then
    status="FAILED (exit $rc; $(sed -n 's/.*Test unit written to //p' "$log" | tr '\n' ' '))"
    failed+=("$t")
    grep -E 'ERROR: |SUMMARY: |runtime error' "$log" | head -5 >&2 || true
  fi
  summary+=("$(printf '%-18s %12s execs  cov %6s  ft %7s  corpus %6s  %s' \
                "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$status")")
  # Each target's line as soon as it ends, so a stopped run keeps its results.
  echo "fuzz: done ${summary[-1]}"
done

echo
echo "fuzz: ${seconds}s per target"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, no crash, leak, timeout or out-of-memory"
