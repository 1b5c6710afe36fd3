#!/usr/bin/env bash
# Builds etpack's sdist and its wheels for CPython 3.10, 3.11, 3.12 and 3.13
# from a git checkout, offline (docs/python.md, "Wheels"):
#   1. the sdist etpack-<version>.tar.gz (scripts/dist.py sdist: the files git
#      tracks, as the working tree has them, and PKG-INFO);
#   2. one meson build of the unpacked sdist (so the wheels are built from
#      exactly what the sdist holds), optimized: the library compiled once,
#      the extension once per interpreter, self-contained (-Dwheel=true
#      -Dpythons=...);
#   3. a wheel per interpreter (scripts/dist.py wheel), tagged
#      cpXY-cpXY-manylinux_2_N_<arch> by the glibc its extension needs.
# Usage: scripts/build_wheels.sh [OUTDIR]      (default: dist)
#        scripts/build_wheels.sh --pythons    prints the interpreters, one a line
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

if [ "${1:-}" = --pythons ]; then
  pythons
  exit 0
fi
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

# ---- one build, an extension per interpreter --------------------------------------
# The options meson-python gives a wheel build (release, NDEBUG), and the
# package only (-Dwheel=true).
list="$(IFS=,; echo "${pys[*]}")"
if ! log=$(meson setup "$tmp/build" "$tree" --buildtype=release -Db_ndebug=if-release \
             -Dwheel=true "-Dpythons=$list" 2>&1); then
  printf '%s\n' "$log" >&2
  fail "configuring the wheel build failed (output above)"
fi
if ! log=$(ninja -C "$tmp/build" 2>&1); then
  printf '%s\n' "$log" >&2
  fail "the wheel build failed (output above)"
fi

# ---- a wheel each ---------------------------------------------------------------
wheels=()
for p in "${pys[@]}"; do
  w="$("$src/scripts/dist.py" wheel --build "$tmp/build" --python "$p" --out "$out")" ||
    fail "packing the wheel for $p failed"
  wheels+=("$w")
done
cp "$sdist" "$out/"
echo "build_wheels: $((SECONDS - start)) s, in $out:"
for f in "$out/$(basename "$sdist")" "${wheels[@]}"; do
  echo "  $(basename "$f") ($(du -k "$f" | cut -f1) KiB)"
done
