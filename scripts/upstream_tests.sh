#!/usr/bin/env bash
# Runs upstream's serializer tests (exir/_serialize/test/test_*.py and
# extension/flat_tensor/test/test_serialize.py of an ExecuTorch source
# checkout) twice with the exporter venv's python: as upstream, and with
# etpack's entry points substituted for upstream's
# (scripts/upstream_tests/etpack_substitute.py). Prints, per test, whether it
# passes each way; exits 1 when one passes upstream but not with etpack.
# The tests run against the installed executorch, so a test newer than it
# may fail upstream too: it is reported, not counted.
#
# Usage: scripts/upstream_tests.sh EXECUTORCH_SRC_DIR [PYTEST_ARGS...]
#   ETPACK_EXIR_PYTHON  the venv's python (default build-exir/venv/bin/python,
#                       made by scripts/setup.sh build-exir exir)
#   ETPACK_BUILD        the build whose etpack module is tested (default build)
# A source checkout from a mirror, for example:
#   git --git-dir=REPO archive COMMIT exir/_serialize/test \
#       extension/flat_tensor/test | tar -x -C DIR
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: scripts/upstream_tests.sh EXECUTORCH_SRC_DIR [PYTEST_ARGS...]" >&2
  exit 2
fi
upstream="$(cd "$1" && pwd)"
shift
py="${ETPACK_EXIR_PYTHON:-$src/build-exir/venv/bin/python}"
build="$(cd "${ETPACK_BUILD:-$src/build}" && pwd)"
[ -x "$py" ] || { echo "upstream_tests: no python at $py (ETPACK_EXIR_PYTHON)" >&2; exit 2; }
[ -d "$build/python/etpack" ] || { echo "upstream_tests: no etpack module in $build/python" >&2; exit 2; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/etpack-upstream-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# A copy, so the checkout is never written to (bytecode) and its own
# conftest files play no part.
tests=()
for f in "$upstream"/exir/_serialize/test/test_*.py "$upstream"/extension/flat_tensor/test/test_serialize.py; do
  [ -f "$f" ] || continue
  rel="${f#"$upstream"/}"
  mkdir -p "$tmp/tests/$(dirname "$rel")"
  cp "$f" "$tmp/tests/$rel"
  tests+=("$rel")
done
[ ${#tests[@]} -gt 0 ] || { echo "upstream_tests: no test files under $upstream" >&2; exit 2; }

run() {  # run NAME PYTHONPATH [PLUGIN_ARGS...]
  local name="$1" path="$2"
  shift 2
  echo "== $name: ${#tests[@]} files" >&2
  # From the copy, so the source tree's python/etpack is not imported. A
  # failing test is not a failing run here: compare.py decides.
  (cd "$tmp/tests" && env PYTHONPATH="$path" "$py" -m pytest -q -p no:cacheprovider \
      --import-mode=importlib -p etpack_substitute --etpack-results="$tmp/$name.json" \
      "$@" "${tests[@]}" >"$tmp/$name.log" 2>&1) || true
  tail -n 1 "$tmp/$name.log" >&2
  [ -s "$tmp/$name.json" ] || { cat "$tmp/$name.log" >&2; exit 2; }
}
plugin="$src/scripts/upstream_tests"
run upstream "$plugin" "$@"
run etpack "$plugin:$build/python" --etpack-substitute "$@"
"$py" "$plugin/compare.py" "$tmp/upstream.json" "$tmp/etpack.json"
