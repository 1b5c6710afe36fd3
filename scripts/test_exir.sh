#!/usr/bin/env bash
# Runs the tests against the real exporter and runtime (python/tests/exir_real:
# models exported by torch.export -> to_edge_transform_and_lower ->
# to_executorch, written by upstream's serializer and by etpack, loaded in
# executorch.runtime) in the venv scripts/setup.sh exir makes.
# Usage: scripts/test_exir.sh [WHEEL|--build BUILD_DIR] [PYTEST_ARGS...]
#   WHEEL: etpack's cp311 wheel, installed into the venv first (as an exporter
#          would get etpack); --build BUILD_DIR: the module of a plain build
#          instead (BUILD_DIR/python on PYTHONPATH; Debian 12's python3 is
#          3.11, so its extension loads in the venv), for iterating.
# ETPACK_EXIR_VENV names the venv's folder (default build-exir).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
cd "$src"
dir="${ETPACK_EXIR_VENV:-build-exir}"
scripts/setup.sh "$dir" exir
py="$dir/venv/bin/python"
pythonpath=""
case "${1:-}" in
  --build) pythonpath="$(cd "$2" && pwd)/python"; shift 2 ;;
  *.whl)
    "$py" -m pip install -q --no-index --no-deps --force-reinstall "$1"
    # The installed wheel beside torch in one process, torch imported first.
    (cd / && env -u PYTHONPATH "$src/$py" "$src/python/tests/torch_wheel.py")
    shift ;;
  *) echo "test_exir: give etpack's cp311 wheel or --build BUILD_DIR" >&2; exit 2 ;;
esac
tmp="$(mktemp -d "${TMPDIR:-/tmp}/etpack-exir-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# From a scratch folder, so the source tree's python/etpack is not imported.
cd "$tmp"
env PYTHONPATH="$pythonpath" ETPACK_CLI="${ETPACK_CLI:-$src/build/apps/etpack}" \
    "$src/$py" -m pytest -q -p no:cacheprovider "$src/python/tests/exir_real" "$@"
