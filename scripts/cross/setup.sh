#!/usr/bin/env bash
# Makes DIR (default build-cross) the cross toolchain and dependencies that the
# wheels and the etpack tool for other machines are built with
# (scripts/build_wheels.sh --cross; docs/python.md, "Wheels"). scripts/setup.sh
# DIR cross runs it after installing the Debian packages it needs. Once, at
# setup time; nothing is downloaded when building:
#   DIR/zig/venv   ziglang (pinned below) from the package index: zig cc/c++
#                  for any target, with its own libc++, and stubs of every
#                  glibc version (so a build for glibc 2.28 references no newer
#                  symbol, whatever glibc this machine has);
#   DIR/bin/T-cc, T-c++, T-ar, T-ranlib   wrappers calling zig for target T;
#   DIR/src/       the Debian source packages of FlatBuffers, zstd and xxHash,
#                  of the versions this machine's -dev packages are (flatc
#                  generates headers for exactly its own version), fetched by
#                  apt-get source with deb-src entries made from this
#                  machine's Debian sources (apt checks them against the
#                  archive's signed index, dpkg-source against the .dsc);
#   DIR/deps/T/    those compiled for T by zig as static archives, with their
#                  headers, pybind11's (a link to Debian's) and .pc files;
#   DIR/paths.ini  [constants] naming DIR, for the meson cross files in
#                  scripts/cross/T.ini.
# Targets: ETPACK_WHEEL_TARGETS, or every cross file in scripts/cross.
# Safe to run again: each part is made once, and made anew when what it was
# made from changed (stamps).
# Usage: scripts/cross/setup.sh [DIR]
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:-build-cross}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
fail() { echo "cross/setup: $*" >&2; exit 1; }
# 0.15.2 and 0.14.1 both link a self-contained extension for glibc 2.28
# and a C++ program for aarch64-macos; 0.15.2 is the newer release.
ZIGLANG=ziglang==0.15.2
# The targets build_wheels.sh will build, but for "native" (no cross file).
targets=()
for t in $("$src/scripts/build_wheels.sh" --targets); do
  [ "$t" = native ] && continue
  [ -f "$src/scripts/cross/$t.ini" ] || fail "no cross file scripts/cross/$t.ini (ETPACK_WHEEL_TARGETS)"
  targets+=("$t")
done

# quiet CMD...: runs CMD, showing its output only when it fails.
quiet() {
  local log
  if ! log=$("$@" 2>&1); then
    printf '%s\n' "$log" >&2
    fail "$* failed (output above)"
  fi
}

# ---- zig ----------------------------------------------------------------------
venv="$dir/zig/venv"
if [ "$(cat "$dir/zig/stamp" 2>/dev/null)" != "$ZIGLANG" ]; then
  echo "cross/setup: installing $ZIGLANG into $venv"
  rm -rf "$dir/zig"
  quiet /usr/bin/python3 -m venv "$venv"
  quiet "$venv/bin/python" -m pip install -q --disable-pip-version-check "$ZIGLANG"
  echo "$ZIGLANG" >"$dir/zig/stamp"
fi
zig="$("$venv/bin/python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')"
[ -x "$zig" ] || fail "$ZIGLANG installed no zig binary at $zig"
mkdir -p "$dir/bin"
# wrapper NAME COMMAND: DIR/bin/NAME, a shell script running COMMAND "$@".
# zig builds its libc++ and glibc stubs once per target, into its cache
# (~/.cache/zig), which a fresh checkout reuses as ccache's.
wrapper() {
  local name="$1" command="$2"
  {
    echo '#!/bin/sh'
    # zig's linker reads no thin archives, which meson makes of a build's
    # own static libraries when `ar -h` offers them: ar drops the T modifier.
    [ "${name##*-}" != ar ] ||
      echo 'case "$1" in -*) ;; *T*) op="$(echo "$1" | tr -d T)"; shift; set -- "$op" "$@" ;; esac'
    echo "exec $command \"\$@\""
  } >"$dir/bin/$name.tmp"
  chmod +x "$dir/bin/$name.tmp"
  mv "$dir/bin/$name.tmp" "$dir/bin/$name"
}
for t in "${targets[@]}"; do
  # -g0: zig emits DWARF unless told not to, which costs a quarter of the
  # compile time of what is stripped anyway (-s); a -g after it still wins.
  for tool in cc c++; do wrapper "$t-$tool" "$(printf %q "$zig") $tool -target $t -g0"; done
  for tool in ar ranlib; do wrapper "$t-$tool" "$(printf %q "$zig") $tool"; done
done
ccache="[]"
command -v ccache >/dev/null && ccache="['$(command -v ccache)']"
cat >"$dir/paths.ini" <<EOF
# Made by scripts/cross/setup.sh: where the toolchain and dependencies are.
[constants]
cross_dir = '$dir'
ccache = $ccache
EOF

# ---- sources ------------------------------------------------------------------
# The source package and version of a binary package installed here.
source_of() { dpkg-query -W -f='${source:Package} ${source:Version}\n' "$1"; }
apt_dir="$dir/apt"
apt=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources"
     -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
     -o "Debug::NoDropPrivs=true" -o "APT::Sandbox::User=root")
# deb-src twins of this machine's Debian archive entries (deb822 stanzas
# signed by Debian's archive keyring, and one-line "deb" entries).
make_apt_sources() {
  rm -rf "$apt_dir/sources"
  mkdir -p "$apt_dir/sources" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  local f n=0
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         /(^|\n)Types:[^\n]*deb/ && /debian-archive-keyring/ && !/(^|\n)Enabled: *no/ {
           gsub(/(^|\n)#[^\n]*/, ""); sub(/Types:[^\n]*/, "Types: deb-src"); print }' \
      "$f" >"$apt_dir/sources/$n.sources"
    n=$((n + 1))
  done
  if [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb \(.*\)$/deb-src \1/p' /etc/apt/sources.list >"$apt_dir/sources/list.list"
  fi
  grep -qs '^\(Types: deb-src\|deb-src \)' "$apt_dir"/sources/* ||
    fail "found no Debian archive entry in /etc/apt/sources.list(.d) to take deb-src entries from"
  quiet apt-get "${apt[@]}" update
}
# fetch SOURCE VERSION: DIR/src/SOURCE-VERSION unpacked (Debian's patches
# applied). When that exact version is not in the archive any more (or its
# pool is not reachable), the newest one of the same upstream version.
fetch() {
  local pkg="$1" want="$2" tree="$dir/src/$1-$2" v tried=""
  [ -f "$tree/.complete" ] && return 0
  [ -n "${apt_updated:-}" ] || { make_apt_sources; apt_updated=1; }
  rm -rf "$dir/src/dl" "$tree"
  mkdir -p "$dir/src/dl"
  for v in "$want" $(apt-cache "${apt[@]}" showsrc "$pkg" | awk '/^Version:/ { print $2 }' |
                     grep -F "${want%-*}-" | grep -vxF "$want" | sort -V -r); do
    tried+=" $v"
    if (cd "$dir/src/dl" && apt-get "${apt[@]}" source -qq --download-only "$pkg=$v" >/dev/null 2>&1)
    then
      [ "$v" = "$want" ] || echo "cross/setup: $pkg $want is not to be had; using $v (same upstream version)" >&2
      quiet dpkg-source -x "$dir/src/dl/${pkg}_${v#*:}.dsc" "$tree"
      rm -rf "$dir/src/dl" "$dir/src/${pkg}_"*
      echo "$v" >"$tree/.complete"
      return 0
    fi
    rm -f "$dir/src/dl"/*
  done
  fail "apt-get source $pkg: none of${tried} could be downloaded"
}
read -r fb_pkg fb_ver < <(source_of flatbuffers-compiler)
read -r zstd_pkg zstd_ver < <(source_of libzstd-dev)
read -r xxh_pkg xxh_ver < <(source_of libxxhash-dev)
fetch "$fb_pkg" "$fb_ver"
fetch "$zstd_pkg" "$zstd_ver"
fetch "$xxh_pkg" "$xxh_ver"
fb_src="$dir/src/$fb_pkg-$fb_ver" zstd_src="$dir/src/$zstd_pkg-$zstd_ver" xxh_src="$dir/src/$xxh_pkg-$xxh_ver"
# What was fetched (fetch may have taken another Debian revision).
fb_ver="$(cat "$fb_src/.complete")" zstd_ver="$(cat "$zstd_src/.complete")" xxh_ver="$(cat "$xxh_src/.complete")"

# ---- dependencies, per target -------------------------------------------------
for t in "${targets[@]}"; do
  stamp="$ZIGLANG $fb_ver $zstd_ver $xxh_ver $(sha256sum "$src/scripts/cross/build_deps.sh" | cut -c1-16)"
  [ "$(cat "$dir/deps/$t/stamp" 2>/dev/null)" = "$stamp" ] && continue
  echo "cross/setup: building FlatBuffers $fb_ver, zstd $zstd_ver, xxHash $xxh_ver for $t"
  start=$SECONDS
  rm -rf "$dir/deps/$t"
  "$src/scripts/cross/build_deps.sh" "$dir/bin/$t" "$dir/deps/$t.tmp" "$fb_src" "$zstd_src" "$xxh_src" ||
    fail "building the dependencies for $t failed"
  mv "$dir/deps/$t.tmp" "$dir/deps/$t"
  echo "$stamp" >"$dir/deps/$t/stamp"
  echo "cross/setup: $t's dependencies in $((SECONDS - start)) s"
done
