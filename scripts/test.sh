#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test: first the normal
# build (GCC, build/); then the sdist, the wheels for CPython 3.10-3.13 and the
# etpack tool for x86_64 Linux with glibc 2.28, and the library and tool for
# macOS 11 on arm64, built by zig (the library compiled once per machine;
# scripts/cross), each wheel tested in a fresh venv of its interpreter
# (scripts/test_wheel.sh); then the cp311 wheel with the real exporter and
# runtime (scripts/test_exir.sh); then the suite under AddressSanitizer and
# UndefinedBehaviorSanitizer (clang, build-san/; any report fails its test).
# Arguments go to both `meson test` runs.
# scripts/test.sh --quick [ARGS]: the normal build and its tests only (no
# wheels, exir or sanitizers); ARGS go to its `meson test`.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
ok=0
bad=0
rc=0
# One plain closing line for CI: the test programs (meson tests) of the
# suites run here (each testlog.json line is one), the wheels' tests and the
# exir tests; then the exit code.
finish() {
  local log
  for log in "$@"; do
    [ -f "$log" ] || continue
    ok=$((ok + $(grep -c '"result": "OK"' "$log" || true)))
    bad=$((bad + $(grep -vc '"result": "\(OK\|SKIP\)"' "$log" || true)))
  done
  echo "tests: ${ok} passed, ${bad} failed"
  exit "$rc"
}
scripts/setup.sh build
ninja -C build
meson test -C build --print-errorlogs "$@" || rc=$?
# --quick: build-san's log, if any, is of an earlier run; it is not counted.
((quick)) && finish build/meson-logs/testlog.json
rm -rf build/dist
# The wheels and tools are cross-compiled by zig. Here: x86_64's, tested in
# venvs, and macOS's library and tool, linked and checked; aarch64 Linux's
# (a third library build) and their runs under qemu are a separate step
# (docs/python.md, "Building the wheels").
export ETPACK_WHEEL_TARGETS="${ETPACK_WHEEL_TARGETS:-x86_64-linux-gnu.2.28 aarch64-macos.11.0}"
scripts/setup.sh build-cross cross
if scripts/test_wheel.sh build/dist; then ok=$((ok + 1)); else bad=$((bad + 1)); rc=1; fi
# The real exporter and runtime (torch 2.13.0, executorch 1.5) with the cp311 wheel.
if scripts/test_exir.sh build/dist/etpack-*-cp311-cp311-manylinux_*_x86_64.whl; then
  ok=$((ok + 1))
else
  bad=$((bad + 1)); rc=1
fi
scripts/setup.sh build-san san
ninja -C build-san
# Sanitized code runs 2-3 times slower; the multiplier keeps the timeouts fair.
meson test -C build-san --print-errorlogs --timeout-multiplier 3 "$@" || rc=$?
finish build/meson-logs/testlog.json build-san/meson-logs/testlog.json
