#!/usr/bin/env bash
# Builds the sdist, the wheels and the etpack tools (scripts/build_wheels.sh:
# per target machine the library compiled once, an extension per CPython 3.10
# to 3.13) and tests each as an exporter would get it:
#   - scripts/dist.py check, of every wheel and tool, x86_64's and aarch64's
#     (and the macOS tool: it loads only libSystem, its tag its lowest macOS):
#     RECORD right; the extension (tool) needs only the C library (no other
#     NEEDED, no RPATH), exports only PyInit__etpack, is for the machine its
#     tag says and needs exactly the glibc it says, so no versioned glibc
#     symbol above the tag is referenced;
#   - each x86_64 wheel alone in a directory, `pip install --no-index` into a
#     fresh venv of its interpreter; `ldd` of the installed extension
#     resolves only C library objects; with LD_LIBRARY_PATH empty and no
#     numpy: python/tests/smoke_wheel.py, then the golden and etpack.exir
#     tests (test_golden.py, test_exir.py) under pytest (pinned in
#     scripts/exir-requirements.txt, installed after the wheel), then
#     python/tests/write_golden.py, whose files must equal byte for byte what
#     the plain build's module writes (DIST_DIR/golden-plain, from
#     ETPACK_PLAIN_BUILD, default build);
#   - the x86_64 tool: --version, and `verify` of the golden .pte files;
#   - the aarch64 wheels and tool: the same tests in Debian arm64 roots under
#     qemu-user, the golden cases compared with the plain build's
#     (scripts/test_wheel_foreign.sh; a root is made on first use, minutes);
#   (the cp311 wheel beside the real torch and executorch: scripts/test_exir.sh).
# Targets: ETPACK_WHEEL_TARGETS (scripts/build_wheels.sh; default: every
# one); the tests of each machine built run.
# With ETPACK_TEST_SDIST=1 also `pip install --no-build-isolation --no-index`
# of the sdist into a venv of Debian's python3 (meson-python compiles the
# whole library once more), then the smoke test there.
# Usage: scripts/test_wheel.sh [DIST_DIR]   (DIST_DIR: keep the sdist and wheels there)
# scripts/test.sh runs it after the plain suite.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/etpack-wheel-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_wheel: $*" >&2; exit 1; }
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# Absolute: the tests run from the scratch directory.
dist="$(mkdir -p "${1:-$tmp/dist}" && cd "${1:-$tmp/dist}" && pwd)"

"$src/scripts/build_wheels.sh" "$dist" || fail "scripts/build_wheels.sh failed"
# Whatever targets were built (ETPACK_WHEEL_TARGETS): every wheel and tool.
shopt -s nullglob
made=("$dist"/etpack-*.whl "$dist"/etpack-*-manylinux_*_{x86_64,aarch64} "$dist"/etpack-*-macosx_*_arm64)
shopt -u nullglob
"$src/scripts/dist.py" check "${made[@]}" || fail "a wheel or tool failed its check"

# What the plain build's module writes for the golden inputs (Debian's python3).
plain="$(cd "${ETPACK_PLAIN_BUILD:-$src/build}" 2>/dev/null && pwd)" ||
  fail "no plain build at ${ETPACK_PLAIN_BUILD:-$src/build} (scripts/setup.sh build; ninja -C build)"
rm -rf "$dist/golden-plain"
(cd "$tmp" && env PYTHONPATH="$plain/python" /usr/bin/python3 "$src/python/tests/write_golden.py" \
   "$dist/golden-plain") >/dev/null || fail "the plain build at $plain did not write the golden cases"

# venv DIR PYTHON WHEEL [VENV_ARGS...]: DIR/bin/python with WHEEL installed.
venv() {
  local dir="$1" python="$2" whl="$3"
  shift 3
  "$python" -m venv "$@" "$dir" || fail "$python -m venv failed"
  # The wheel alone in a directory: it needs nothing else to install.
  mkdir "$dir.wheel"
  cp "$whl" "$dir.wheel/"
  if ! log=$("$dir/bin/python" -m pip install --no-index --no-cache-dir \
               "$dir.wheel/$(basename "$whl")" 2>&1); then
    printf '%s\n' "$log" >&2
    fail "pip install --no-index $(basename "$whl") into a venv of $python failed (output above)"
  fi
  # Then the tests' runner, pinned where the exir venv's is.
  if ! log=$("$dir/bin/python" -m pip install -q "$(grep '^pytest==' "$src/scripts/exir-requirements.txt")" 2>&1); then
    printf '%s\n' "$log" >&2
    fail "pip install pytest into a venv of $python failed (output above)"
  fi
}

# clean PYTHON ARGS...: run from the scratch directory (nothing of the source
# tree on sys.path but the script's own directory) without LD_LIBRARY_PATH or
# PYTHONPATH.
clean() { (cd "$tmp" && env -u PYTHONPATH LD_LIBRARY_PATH= "$@"); }

# The machines built (as build_wheels.sh took them): the wheels and tools of
# each must be there.
targets=" $("$src/scripts/build_wheels.sh" --targets | tr '\n' ' ')"
built() { [[ "$targets" == *" $1"* ]]; }

if ! built x86_64 && ! built native; then
  echo "test_wheel: no x86_64 target in ETPACK_WHEEL_TARGETS: no x86_64 wheel run here"
else
  n=0
  while read -r python; do
    abi="cp$("$python" -c 'import sys; print("%d%d" % sys.version_info[:2])')"
    found=0
    for whl in "$dist"/etpack-*-"$abi-$abi"-manylinux_*_x86_64.whl; do
      [ -f "$whl" ] || continue
      found=1
      plat="${whl##*-}"
      plat="${plat%.whl}"
      venv "$tmp/venv-$abi-$plat" "$python" "$whl"
      py="$tmp/venv-$abi-$plat/bin/python"
      so="$(find "$tmp/venv-$abi-$plat" -name "_etpack.cpython-*.so")"
      [ -n "$so" ] || fail "the installed $(basename "$whl") has no _etpack extension"
      # ldd: linux-vdso, libc, libm, ld-linux; nothing "not found", nothing else.
      others="$(LD_LIBRARY_PATH= ldd "$so" | awk '{print $1}' |
                grep -vE '^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|/lib64/ld-linux-x86-64\.so\.2)$' || true)"
      [ -z "$others" ] || fail "$so loads more than the C library: $others ($(ldd "$so"))"
      clean "$py" -c 'import numpy' 2>/dev/null && fail "the $abi venv has numpy: it must not"
      clean "$py" "$src/python/tests/smoke_wheel.py" || fail "the smoke test failed in the $abi venv"
      clean "$py" -m pytest -q -p no:cacheprovider \
          "$src/python/tests/test_golden.py" "$src/python/tests/test_exir.py" ||
        fail "the golden and etpack.exir tests failed in the $abi venv"
      clean "$py" "$src/python/tests/write_golden.py" "$tmp/golden-$abi-$plat" >/dev/null ||
        fail "write_golden.py failed in the $abi venv"
      diff -r "$dist/golden-plain" "$tmp/golden-$abi-$plat" >&2 ||
        fail "$(basename "$whl") writes the golden cases otherwise than the plain build (above)"
      echo "test_wheel: $(basename "$whl") in a venv of $python: smoke, golden and exir tests" \
           "passed, golden cases byte-identical to the plain build's"
      n=$((n + 1))
    done
    ((found)) || fail "no $abi x86_64 wheel in $dist: $(ls "$dist")"
  done < <("$src/scripts/build_wheels.sh" --pythons)
  ((n > 0)) || fail "no interpreters"

  # ---- the x86_64 tool ---------------------------------------------------------
  for tool in "$dist"/etpack-*-manylinux_*_x86_64; do
    [ -f "$tool" ] || fail "no x86_64 etpack tool in $dist: $(ls "$dist")"
    clean "$tool" --version >/dev/null || fail "$(basename "$tool") --version failed"
    for f in "$src"/test/golden/pte_*.pte; do
      clean "$tool" verify "$f" >/dev/null || fail "$(basename "$tool") verify $f failed"
    done
    echo "test_wheel: $(basename "$tool"): --version and verify of the golden .pte files passed"
  done
fi

# ---- aarch64: each wheel and the tool in a Debian arm64 root under qemu ---------
if built aarch64-linux; then
  shopt -s nullglob
  arm=("$dist"/etpack-*-manylinux_*_aarch64.whl "$dist"/etpack-*-manylinux_*_aarch64)
  shopt -u nullglob
  ((${#arm[@]})) || fail "no aarch64 wheel or tool in $dist: $(ls "$dist")"
  ETPACK_GOLDEN_PLAIN="$dist/golden-plain" "$src/scripts/test_wheel_foreign.sh" "${arm[@]}" ||
    fail "an aarch64 wheel or tool failed under qemu (above)"
fi

# ---- the sdist, built by pip (ETPACK_TEST_SDIST=1) ------------------------------
if [ "${ETPACK_TEST_SDIST:-0}" = 1 ]; then
  sdist="$(find "$dist" -name 'etpack-*.tar.gz')"
  /usr/bin/python3 -m venv --system-site-packages "$tmp/venv-sdist"
  start=$SECONDS
  if ! log=$("$tmp/venv-sdist/bin/python" -m pip install --no-build-isolation --no-index \
               --no-cache-dir "$sdist" 2>&1); then
    printf '%s\n' "$log" >&2
    fail "pip install --no-build-isolation $(basename "$sdist") failed (output above)"
  fi
  echo "test_wheel: pip built and installed $(basename "$sdist") in $((SECONDS - start)) s"
  clean "$tmp/venv-sdist/bin/python" "$src/python/tests/smoke_wheel.py" ||
    fail "the smoke test failed on the sdist's build"
fi
