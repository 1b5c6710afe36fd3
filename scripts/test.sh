#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
ninja -C build
rc=0
meson test -C build --print-errorlogs "$@" || rc=$?
# One plain closing line for CI: counts of test programs.
log=build/meson-logs/testlog.json
if [ -f "$log" ]; then
  ok=$(grep -c '"result": "OK"' "$log" || true)
  bad=$(grep -vc '"result": "\(OK\|SKIP\)"' "$log" || true)
  echo "tests: ${ok} passed, ${bad} failed"
fi
exit "$rc"
