#!/usr/bin/env bash
# Builds etpack's sdist and its wheels for CPython 3.10, 3.11, 3.12 and 3.13
# from a git checkout, offline (docs/python.md, "Wheels"):
#   1. the sdist etpack-<version>.tar.gz (scripts/dist.py sdist: the files git
#      tracks, as the working tree has them, and PKG-INFO);
#   2. per target machine, one meson build of the unpacked sdist (so the
#      wheels are built from exactly what the sdist holds), optimized: the
#      library compiled once, the extension once per interpreter, and the
#      etpack tool, all self-contained (-Dwheel=true -Dpythons=...);
#   3. a wheel per interpreter and target (scripts/dist.py wheel), tagged
#      cpXY-cpXY-manylinux_2_N_<arch> by the glibc its extension needs and
#      the machine it is for, and the tool as etpack-<version>-manylinux_2_N_<arch>
#      (scripts/dist.py tool); for macOS (aarch64-macos.11.0) the tool as
#      etpack-<version>-macosx_11_0_arm64 and libetpack.0.dylib linked, but
#      no wheel: no CPython headers for macOS are to be had here.
# Targets: ETPACK_WHEEL_TARGETS="T ...", each a cross file scripts/cross/T.ini
# (zig, for glibc 2.28 or macOS 11, from ETPACK_CROSS_DIR, default build-cross, made by
# scripts/setup.sh build-cross cross), or "native": this machine's GCC and
# Debian's static archives (glibc as new as this machine's). Default: every
# cross target.
# Usage: scripts/build_wheels.sh [OUTDIR]      (default: dist)
#        scripts/build_wheels.sh --pythons    prints the interpreters, one a line
#        scripts/build_wheels.sh --targets    prints the targets, one a line
# Interpreters: the newest pyenv CPython of each of 3.10 to 3.13 that the
# machine has (each found or skipped is named on stderr; none is an error)
# ($(pyenv root)/versions/3.1X.*); ETPACK_WHEEL_PYTHONS="PATH ..." names
# others instead. Needs what scripts/setup.sh installs.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
fail() { echo "build_wheels: $*" >&2; exit 1; }

pythons() {
  if [ -n "${ETPACK_WHEEL_PYTHONS:-}" ]; then
    tr ' ' '\n' <<<"$ETPACK_WHEEL_PYTHONS" | grep .
    return
  fi
  local root p found any=""
  root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
  for minor in 10 11 12 13; do
    found=""
    # 3.13.0 but not 3.13.0t (free-threaded) or 3.13-dev.
    for p in $(ls -d "$root/versions/3.$minor".* 2>/dev/null | grep -E '/3\.[0-9]+\.[0-9]+$' |
               sort -V -r); do
      if "$p/bin/python3" -c "import sys; assert sys.version_info[:2] == (3, $minor)" 2>/dev/null
      then
        found="$p/bin/python3"
        break
      fi
    done
    if [ -z "$found" ]; then
      echo "build_wheels: skipped CPython 3.$minor: none under $root/versions" >&2
      continue
    fi
    echo "build_wheels: found CPython 3.$minor: $found" >&2
    echo "$found"
    any=1
  done
  [ -n "$any" ] || fail "no CPython 3.10 to 3.13 under $root/versions (pyenv install 3.1X," \
                        "or name the interpreters in ETPACK_WHEEL_PYTHONS)"
}

# The targets, one a line: ETPACK_WHEEL_TARGETS's, or every cross file's.
# The one list scripts/cross/setup.sh and scripts/test_wheel.sh ask for too.
targets() {
  if [ -n "${ETPACK_WHEEL_TARGETS:-}" ]; then
    tr ' ' '\n' <<<"$ETPACK_WHEEL_TARGETS" | grep .
    return
  fi
  local ini
  for ini in "$src"/scripts/cross/*.ini; do basename "$ini" .ini; done
}

case "${1:-}" in
  --pythons) pythons; exit 0 ;;
  --targets) targets; exit 0 ;;
esac
out="$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)"
mapfile -t pys < <(pythons)
((${#pys[@]})) || fail "no interpreters"
[ -e "$src/.git" ] || fail "$src is not a git checkout: the sdist holds the files git tracks"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/etpack-wheels-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS

# ---- the sdist -------------------------------------------------------------------
if ! log=$("$src/scripts/dist.py" sdist "$tmp/sdist" 2>&1); then
  printf '%s\n' "$log" >&2
  fail "making the sdist failed (output above)"
fi
sdist="$(find "$tmp/sdist" -name 'etpack-*.tar.gz')"
[ -n "$sdist" ] || fail "scripts/dist.py sdist made no etpack-*.tar.gz: $(ls "$tmp/sdist")"
tar -C "$tmp" -xzf "$sdist"
tree="$tmp/$(basename "$sdist" .tar.gz)"
[ -f "$tree/PKG-INFO" ] || fail "$(basename "$sdist") has no PKG-INFO"

# ---- per target: one build, an extension per interpreter, the tool ----------------
cross="${ETPACK_CROSS_DIR:-$src/build-cross}"
mapfile -t targets < <(targets)
list="$(IFS=,; echo "${pys[*]}")"
made=("$out/$(basename "$sdist")")
for t in "${targets[@]}"; do
  # macOS targets: the library and the tool, no extension (no CPython for
  # macOS to take headers from; docs/python.md, "Wheels").
  # LTO (below) is LLD's; zig links Mach-O with a linker of its own.
  ext=1 what=(all apps/etpack) with_pythons=("-Dpythons=$list") lto=true
  case "$t" in
    *-macos*) ext=0 what=(lib/libetpack.0.dylib apps/etpack) with_pythons=() lto=false ;;
  esac
  machine=()
  if [ "$t" != native ]; then
    [ -f "$src/scripts/cross/$t.ini" ] ||
      fail "no cross file scripts/cross/$t.ini for target $t (ETPACK_WHEEL_TARGETS)"
    [ -f "$cross/paths.ini" ] && [ -f "$cross/deps/$t/stamp" ] ||
      fail "no toolchain for $t in $cross: run scripts/setup.sh $cross cross"
    # Unity: zig's clang spends most of a compile on the same headers (libc++,
    # FlatBuffers' generated ones); eight sources a compile take a cold
    # target's build from about 5 to about 1.5 minutes on 2 cores.
    # Speed: zig turns -O3 into clang's -O2 and keeps frame pointers;
    # -Xclang -O3, no frame pointers and LTO take etpack.exir's walk from 20%
    # more instructions than the GCC-built wheel's to 9% (bench/RESULTS.md).
    machine=(--cross-file "$cross/paths.ini" --cross-file "$src/scripts/cross/$t.ini"
             --unity=on -Dunity_size=8 "-Db_lto=$lto"
             "-Dcpp_args=['-Xclang', '-O3', '-fomit-frame-pointer']")
  fi
  build="$tmp/build-$t"
  # The options meson-python gives a wheel build (release, NDEBUG), and the
  # package only (-Dwheel=true).
  if ! log=$(meson setup "$build" "$tree" "${machine[@]}" --buildtype=release \
               -Db_ndebug=if-release -Dwheel=true "${with_pythons[@]}" 2>&1); then
    printf '%s\n' "$log" >&2
    fail "configuring the wheel build for $t failed (output above)"
  fi
  t0=$SECONDS
  if ! log=$(ninja -C "$build" "${what[@]}" 2>&1); then
    printf '%s\n' "$log" >&2
    fail "the wheel build for $t failed (output above)"
  fi
  echo "build_wheels: $t built in $((SECONDS - t0)) s" >&2
  for p in "${pys[@]}"; do
    ((ext)) || break
    made+=("$("$src/scripts/dist.py" wheel --build "$build" --python "$p" --out "$out")") ||
      fail "packing the $t wheel for $p failed"
  done
  made+=("$("$src/scripts/dist.py" tool --build "$build" --out "$out")") ||
    fail "checking the $t etpack tool failed"
done
cp "$sdist" "$out/"
echo "build_wheels: $((SECONDS - start)) s, in $out:"
for f in "${made[@]}"; do
  echo "  $(basename "$f") ($(du -k "$f" | cut -f1) KiB)"
done
