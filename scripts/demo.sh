#!/usr/bin/env bash
# Installs what is needed, builds, and runs the built-in example: an
# LLM-shaped program (512 MiB of constants by default) written, verified and
# summarised. Extra arguments go to `etpack demo` (e.g. --size 6GiB).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
ninja -C build apps/etpack >/dev/null
out="${TMPDIR:-/tmp}/etpack-demo"
mkdir -p "$out"
build/apps/etpack demo -o "$out" "$@"
