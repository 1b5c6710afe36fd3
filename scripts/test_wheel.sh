#!/usr/bin/env bash
# Builds the etpack wheel as docs/python.md tells an exporter author to (with
# Debian's python3 and python3-mesonpy, no build isolation, no network) from a
# copy of the source tree in a scratch directory (meson-python 0.12 builds
# inside the tree it is given, in .mesonpy-*/), installs it with `pip install --no-index` into a fresh
# venv of a CPython 3.11 other than Debian's when the machine has one (pyenv's),
# and runs python/tests/smoke_wheel.py with that venv's python. Checks that the
# installed extension is self-contained: no RPATH/RUNPATH, no libetpack.so.
# Usage: scripts/test_wheel.sh [DIST_DIR]   (DIST_DIR: keep the wheel there)
# scripts/test.sh runs it after the plain suite.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/etpack-wheel-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_wheel: $*" >&2; exit 1; }
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

# ---- build ----------------------------------------------------------------------
start=$SECONDS
# The tree as a checkout has it: without .git, build directories, or a
# previous build's .mesonpy-* files.
mkdir "$tmp/src"
tar -C "$src" --exclude=./.git --exclude='./build*' --exclude='./.mesonpy*' -cf - . |
  tar -C "$tmp/src" -xf -
if ! log=$(/usr/bin/python3 -m pip wheel --no-build-isolation --no-deps --no-index \
             --no-cache-dir -w "$tmp/dist" "$tmp/src" 2>&1); then
  printf '%s\n' "$log" >&2
  fail "building the wheel failed (output above)"
fi
whl="$(find "$tmp/dist" -name 'etpack-*-cp311-cp311-linux_x86_64.whl')"
[ -n "$whl" ] || fail "pip built no etpack-*-cp311-cp311-linux_x86_64.whl: $(ls "$tmp/dist")"
echo "test_wheel: built $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB) in $((SECONDS - start)) s"
if [ -n "${1:-}" ]; then
  mkdir -p "$1" && cp "$whl" "$1/"
fi

# ---- a fresh venv of another CPython 3.11 ---------------------------------------
python=""
pyenv_root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
for p in $(ls -d "$pyenv_root"/versions/3.11.* 2>/dev/null | sort -V -r); do
  if "$p/bin/python3" -c 'import sys, venv, ensurepip; assert sys.version_info[:2] == (3, 11)' \
       2>/dev/null; then
    python="$p/bin/python3"
    break
  fi
done
if [ -z "$python" ]; then
  python=/usr/bin/python3
  echo "test_wheel: no CPython 3.11 other than Debian's (no pyenv 3.11.* under $pyenv_root);" \
       "using Debian's $python for the venv"
fi
"$python" -m venv "$tmp/venv" || fail "$python -m venv failed"
venv_python="$tmp/venv/bin/python"
if ! log=$("$venv_python" -m pip install --no-index --no-cache-dir "$whl" 2>&1); then
  printf '%s\n' "$log" >&2
  fail "pip install --no-index $(basename "$whl") into a venv of $python failed (output above)"
fi

# ---- the installed extension needs nothing of the build -------------------------
so="$(find "$tmp/venv" -name '_etpack.cpython-311-*.so')"
[ -n "$so" ] || fail "the installed wheel has no _etpack extension"
dynamic="$(readelf -d "$so")"
if grep -E '\((RPATH|RUNPATH)\)|libetpack' <<<"$dynamic"; then
  fail "$so names a library path or libetpack (above)"
fi
ldd "$so" | grep -q 'not found' && fail "$so: $(ldd "$so" | grep 'not found')"

# From the scratch directory, so that nothing of the source tree is on sys.path
# but the script's own directory (python/tests, which holds no etpack).
(cd "$tmp" && "$venv_python" "$src/python/tests/smoke_wheel.py") ||
  fail "the smoke test failed in a venv of $python"
echo "test_wheel: installed into a venv of $python ($("$venv_python" -V 2>&1)): smoke test passed"
