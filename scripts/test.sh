#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test: first the normal
# build (GCC, build/), then the sdist and the wheels for CPython 3.10-3.13 built
# (the library compiled once) and each tested in a fresh venv of its
# interpreter (scripts/test_wheel.sh), then the cp311 wheel with the real
# exporter and runtime (scripts/test_exir.sh), then the suite under AddressSanitizer and
# UndefinedBehaviorSanitizer (clang, build-san/; any report fails its test).
# Arguments go to both `meson test` runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
ninja -C build
rc=0
meson test -C build --print-errorlogs "$@" || rc=$?
wheel_ok=0
wheel_bad=0
rm -rf build/dist
if scripts/test_wheel.sh build/dist; then wheel_ok=1; else wheel_bad=1; rc=1; fi
# The real exporter and runtime (torch 2.13.0, executorch 1.5) with the cp311 wheel.
exir_ok=0
exir_bad=0
if scripts/test_exir.sh build/dist/etpack-*-cp311-cp311-*.whl; then exir_ok=1; else exir_bad=1; rc=1; fi
scripts/setup.sh build-san san
ninja -C build-san
# Sanitized code runs 2-3 times slower; the multiplier keeps the timeouts fair.
meson test -C build-san --print-errorlogs --timeout-multiplier 3 "$@" || rc=$?
# One plain closing line for CI: counts of test programs in both suites, the
# wheels' tests and the exir tests.
ok=$((wheel_ok + exir_ok))
bad=$((wheel_bad + exir_bad))
for log in build/meson-logs/testlog.json build-san/meson-logs/testlog.json; do
  [ -f "$log" ] || continue
  ok=$((ok + $(grep -c '"result": "OK"' "$log" || true)))
  bad=$((bad + $(grep -vc '"result": "\(OK\|SKIP\)"' "$log" || true)))
done
echo "tests: ${ok} passed, ${bad} failed"
exit "$rc"
