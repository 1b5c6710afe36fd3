#!/usr/bin/env bash
# Tests aarch64 wheels where they will run: each wheel alone, installed with
# `pip install --no-index` into a fresh venv of the CPython of a Debian arm64
# root (scripts/foreign_root.sh, qemu-user), then the same tests
# scripts/test_wheel.sh runs on the host: python/tests/smoke_wheel.py, then
# test_golden.py and test_exir.py under pytest (pinned in
# scripts/exir-requirements.txt), then python/tests/write_golden.py, whose
# files must equal ETPACK_GOLDEN_PLAIN's (a folder the plain build's module
# wrote, as scripts/test_wheel.sh makes) when that is set. No numpy in the venv.
# Interpreters: Debian 12 (bookworm) has 3.11, Debian 13 (trixie) 3.13, so
# cp311 and cp313 wheels run; cp310 and cp312 wheels are reported as not run
# (a "skipped" line, not a failure).
# Roots live in ${ETPACK_FOREIGN_ROOTS:-/var/tmp/etpack-roots}/SUITE-arm64 and
# are made on first use (minutes of debootstrap under emulation).
# An aarch64 etpack tool (etpack-VERSION-manylinux_2_N_aarch64) given too
# runs in the bookworm root: --version, and verify of the golden .pte files.
# Prints one summary line per file; exits non-zero if any run file failed.
# Usage: scripts/test_wheel_foreign.sh WHEEL_OR_TOOL...
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
roots="${ETPACK_FOREIGN_ROOTS:-/var/tmp/etpack-roots}"
fail() { echo "test_wheel_foreign: $*" >&2; exit 1; }
(($# > 0)) || fail "usage: $0 WHEEL..."
pytest_pin="$(grep '^pytest==' "$src/scripts/exir-requirements.txt")" ||
  fail "no pytest pin in scripts/exir-requirements.txt"

suite_for() {
  case "$1" in
    cp311) echo bookworm ;;
    cp313) echo trixie ;;
    *) echo "" ;;
  esac
}

# made_root SUITE: prints the made root of SUITE for arm64, making it first
# if need be; returns non-zero when it cannot be made.
made_root() {
  local suite="$1" root start
  root="$roots/$suite-arm64"
  if [ ! -e "$root/.etpack-root-made" ]; then
    # A half-made root (interrupted make) is not reused; never follow a
    # leftover bind mount of /dev or /sys out of it.
    rm -rf --one-file-system "$root"
    start=$SECONDS
    "$src/scripts/foreign_root.sh" make "$root" arm64 "$suite" >&2 || return 1
    echo "test_wheel_foreign: made $root in $((SECONDS - start)) s" >&2
  fi
  echo "$root"
}

# test_tool TOOL: the tool's --version and verify of the golden .pte files
# in the bookworm root.
test_tool() {
  local tool="$1" name root work start
  name="$(basename "$tool")"
  root="$(made_root bookworm)" || { echo "$name: FAIL making the bookworm arm64 root"; return 1; }
  work="/tmp/etpack-foreign-tool"
  rm -rf "$root$work"
  mkdir -p "$root$work"
  cp "$tool" "$root$work/etpack"
  cp "$src"/test/golden/pte_*.pte "$root$work/"
  start=$SECONDS
  if ! "$src/scripts/foreign_root.sh" run "$root" /bin/sh -euc '
      "$1/etpack" --version >/dev/null
      for f in "$1"/pte_*.pte; do "$1/etpack" verify "$f" >/dev/null; done
    ' sh "$work" >&2; then
    echo "$name: FAIL in bookworm arm64 ($((SECONDS - start)) s; output above)"
    return 1
  fi
  echo "$name: ok in bookworm arm64 under qemu: --version and verify of the golden .pte files ($((SECONDS - start)) s)"
}

# test_one WHEEL: the wheel's tests in its root; returns non-zero on failure.
test_one() {
  local whl="$1" name abi suite root work start
  name="$(basename "$whl")"
  [[ "$name" == *-manylinux_*_aarch64 ]] && { test_tool "$whl"; return; }
  [[ "$name" == *-manylinux_*_aarch64.whl ]] || { echo "$name: FAIL not an aarch64 manylinux wheel or tool"; return 1; }
  abi="$(echo "$name" | cut -d- -f3)"
  suite="$(suite_for "$abi")"
  if [ -z "$suite" ]; then
    echo "$name: skipped: no Debian arm64 root has the $abi interpreter"
    return 0
  fi
  root="$(made_root "$suite")" || { echo "$name: FAIL making the $suite arm64 root"; return 1; }
  # A fresh work tree in the root: the wheel alone in a directory, and the
  # tests with the golden files at the place conftest.py expects them.
  work="/tmp/etpack-foreign-$abi"
  rm -rf "$root$work"
  mkdir -p "$root$work/wheel" "$root$work/src/python" "$root$work/src/test" "$root$work/run"
  cp "$whl" "$root$work/wheel/"
  cp -r "$src/python/tests" "$root$work/src/python/"
  cp -r "$src/test/golden" "$root$work/src/test/"
  start=$SECONDS
  if ! "$src/scripts/foreign_root.sh" run "$root" /bin/sh -euc '
      cd "$1/run"
      export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
      python3 -m venv "$1/venv"
      "$1/venv/bin/python" -m pip install -q --no-index --no-cache-dir "$1/wheel/$2"
      "$1/venv/bin/python" -m pip install -q "$3"
      if "$1/venv/bin/python" -c "import numpy" 2>/dev/null; then
        echo "the venv has numpy: it must not" >&2; exit 1
      fi
      "$1/venv/bin/python" "$1/src/python/tests/smoke_wheel.py"
      "$1/venv/bin/python" -m pytest -q -p no:cacheprovider \
        "$1/src/python/tests/test_golden.py" "$1/src/python/tests/test_exir.py"
      "$1/venv/bin/python" "$1/src/python/tests/write_golden.py" "$1/golden" >/dev/null
    ' sh "$work" "$name" "$pytest_pin" >&2; then
    echo "$name: FAIL in $suite arm64 ($((SECONDS - start)) s; output above)"
    return 1
  fi
  local same=""
  if [ -n "${ETPACK_GOLDEN_PLAIN:-}" ]; then
    diff -r "$ETPACK_GOLDEN_PLAIN" "$root$work/golden" >&2 ||
      { echo "$name: FAIL its golden cases differ from $ETPACK_GOLDEN_PLAIN (above)"; return 1; }
    same=", golden cases byte-identical to $ETPACK_GOLDEN_PLAIN"
  fi
  echo "$name: ok in $suite arm64 python3 under qemu: smoke, golden and exir tests passed$same ($((SECONDS - start)) s)"
}

bad=0
for whl in "$@"; do
  [ -f "$whl" ] || { echo "$whl: FAIL no such file"; bad=1; continue; }
  test_one "$whl" || bad=1
done
exit "$bad"
