#!/usr/bin/env bash
# Installs what is needed, builds, and runs the built-in example: an
# LLM-shaped program (512 MiB of constants by default) written, verified and
# summarised. Extra arguments go to `etpack demo` (e.g. --size 6GiB).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
# Quiet when the build succeeds; its whole output when it does not.
if ! log=$(ninja -C build apps/etpack 2>&1); then
  printf '%s\n' "$log" >&2
  echo "demo: the build failed (output above)" >&2
  exit 1
fi
out="${TMPDIR:-/tmp}/etpack-demo"
mkdir -p "$out"
build/apps/etpack demo -o "$out" "$@"
