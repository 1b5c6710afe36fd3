#!/usr/bin/env bash
# Installs the Debian packages etpack builds with and configures the build
# directory. Safe to run again: installs only what is missing, reconfigures
# only when needed. Usage: scripts/setup.sh [BUILD_DIR [KIND]]
#   KIND plain (default; BUILD_DIR defaults to build): GCC, no instrumentation.
#   KIND san: clang with AddressSanitizer + UndefinedBehaviorSanitizer, every
#             UB report fatal (scripts/test.sh runs the suite in build-san).
#   KIND fuzz: clang, the library instrumented for libFuzzer under ASan+UBSan,
#             plus the targets in test/fuzz (-Dfuzz=true; see scripts/fuzz.sh).
#   KIND exir: no build; BUILD_DIR/venv (BUILD_DIR defaults to build-exir) is a
#             virtual environment of CPython 3.11 with the real exporter and
#             runtime pinned in scripts/exir-requirements.txt (torch==2.13.0,
#             executorch, torchao, safetensors, pytest), for scripts/test_exir.sh.
#             Made once: BUILD_DIR/venv/etpack-requirements.txt records what it
#             holds, and a venv holding exactly that is reused as it is.
#   KIND cross: no build; BUILD_DIR (default build-cross) is the zig cross
#             toolchain and the dependencies compiled with it for every
#             target in scripts/cross (scripts/cross/setup.sh), for
#             scripts/build_wheels.sh's wheels and tools for other machines.
# san and fuzz also install clang, libclang-rt-dev (the sanitizer and
# libFuzzer runtimes of the distribution's default clang: 14 on Debian 12, 19 on
# Debian 13) and llvm (llvm-symbolizer for reports).
# SETUP_EXTRA_PACKAGES="pkg ..." installs those too (if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

# python3-mesonpy .. patchelf: the Python sdist and wheels (docs/python.md,
# scripts/build_wheels.sh, scripts/test_wheel.sh); meson-python names patchelf among
# its requirements, which `python3 -m build` checks.
# xfsprogs: scripts/with_xfs.sh makes the scratch XFS image the reflink tests run on.
pkgs=(flatbuffers-compiler libflatbuffers-dev libzstd-dev libxxhash-dev catch2
      libbenchmark-dev meson ninja-build pkg-config g++ python3 time clang-format
      python3-dev pybind11-dev python3-pybind11 python3-pytest python3-numpy zstd
      python3-mesonpy python3-build python3-pip python3-venv patchelf
      xfsprogs)
kind="${2:-plain}"
build="${1:-build}"
[ -n "${1:-}" ] || [ "$kind" != exir ] || build=build-exir
[ -n "${1:-}" ] || [ "$kind" != cross ] || build=build-cross
case "$kind" in
  plain|exir) ;;
  san|fuzz) pkgs+=(clang libclang-rt-dev llvm) ;;
  # dpkg-dev: dpkg-source, which unpacks the dependencies' Debian sources.
  cross) pkgs+=(dpkg-dev) ;;
  *) echo "setup: unknown build kind '$kind' (plain, san, fuzz, exir or cross)" >&2; exit 2 ;;
esac
read -r -a extra <<<"${SETUP_EXTRA_PACKAGES:-}"
pkgs+=("${extra[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  if ! log=$(DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
                 --no-install-recommends "${missing[@]}" 2>&1); then
    printf '%s\n' "$log" >&2
    echo "setup: installing ${missing[*]} failed (output above)" >&2
    exit 1
  fi
fi

# The exir venv: CPython 3.11, since the one torch 2.13.0 wheel on the
# machine's disk is for 3.11 (any other interpreter would make pip download
# torch). Debian 12's python3.11 or pyenv's; Debian 13 has only pyenv's.
exir_venv() {
  local venv="$1/venv" req=scripts/exir-requirements.txt py="" c
  if [ -f "$venv/etpack-requirements.txt" ] && cmp -s "$req" "$venv/etpack-requirements.txt"; then
    return 0
  fi
  for c in "$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"/versions/3.11.*/bin/python3.11 \
           /usr/bin/python3.11; do
    [ -x "$c" ] && "$c" -c 'import venv, ensurepip' 2>/dev/null && { py="$c"; break; }
  done
  [ -n "$py" ] || { echo "setup: no CPython 3.11 with venv (pyenv's or Debian's python3.11-venv)" >&2; exit 1; }
  echo "setup: making $venv ($py, $req)"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  # torch first and alone, exactly pinned: it is taken from the disk.
  if ! log=$("$venv/bin/python" -m pip install -q --disable-pip-version-check \
                 "$(grep '^torch==' "$req")" 2>&1) ||
     ! log=$("$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" 2>&1); then
    printf '%s\n' "$log" >&2
    echo "setup: installing $req into $venv failed (output above)" >&2
    exit 1
  fi
  "$venv/bin/python" -c 'import torch; assert torch.__version__.startswith("2.13.0"), torch.__version__' ||
    { echo "setup: $venv has torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)'), not 2.13.0" >&2; exit 1; }
  cp "$req" "$venv/etpack-requirements.txt"
}
if [ "$kind" = exir ]; then
  exir_venv "$build"
  exit 0
fi
if [ "$kind" = cross ]; then
  exec scripts/cross/setup.sh "$build"
fi

# Sanitized builds: every UB report is fatal, so it fails the test that
# caused it; frame pointers keep the reports' stacks readable; b_lundef is
# off because meson's --no-undefined does not know clang's sanitizer runtimes.
san_args=("-Db_sanitize=address,undefined" -Db_lundef=false)
san_flags="-fno-sanitize-recover=undefined -fno-omit-frame-pointer"
case "$kind" in
  plain) args=() ;;
  san) args=("${san_args[@]}" "-Dcpp_args=$san_flags" "-Dc_args=$san_flags") ;;
  fuzz) args=("${san_args[@]}" -Dfuzz=true "-Dcpp_args=$san_flags -fsanitize=fuzzer-no-link"
              "-Dc_args=$san_flags") ;;
esac
if [ ! -f "$build/build.ninja" ]; then
  [ "$kind" = plain ] || export CXX=clang++ CC=clang  # C: the C API's tests
  # -Dwerror=true: warnings fail CI builds, not the builds of projects that
  # embed etpack (meson.build leaves werror off).
  # scripts/debian-python3.ini: the Python module for Debian's python3.
  if ! log=$(meson setup "$build" --native-file scripts/debian-python3.ini \
                 --buildtype=debugoptimized -Dwerror=true "${args[@]}" 2>&1); then
    printf '%s\n' "$log" >&2
    echo "setup: configuring $build failed (output above)" >&2
    exit 1
  fi
fi
