#!/usr/bin/env bash
# Compiles what etpack links from FlatBuffers, zstd and xxHash as static,
# position-independent archives for one cross target, with their headers and
# pkg-config files (relocatable: ${pcfiledir}), into OUT; scripts/cross/setup.sh
# runs it once per target. Only the parts etpack uses, with the flags that
# change behaviour set as Debian's builds set them:
#   libflatbuffers.a  idl_parser, idl_gen_text, reflection, util (what
#                     Debian's libflatbuffers.a holds; the Parser, GenText and
#                     reflection of lib/flatbuffer); FLATBUFFERS_LOCALE_INDEPENDENT
#                     as upstream's CMake finds it on glibc (strtof_l);
#   libzstd.a         common, compress, decompress (no legacy formats, no
#                     dictionary builder, single-threaded: lib/archive uses
#                     none of them), with the x86_64 Huffman decoder in assembly;
#   libxxhash.a       xxhash.c;
#   include/pybind11  a link to Debian's pybind11 headers (header-only).
# Usage: scripts/cross/build_deps.sh TOOL_PREFIX OUT FLATBUFFERS_SRC ZSTD_SRC XXHASH_SRC
#   TOOL_PREFIX: DIR/bin/T, whose T-cc, T-c++ and T-ar are used.
set -euo pipefail
[ $# = 5 ] || { echo "usage: $0 TOOL_PREFIX OUT FLATBUFFERS_SRC ZSTD_SRC XXHASH_SRC" >&2; exit 2; }
tools="$1" out="$2" fb="$3" zstd="$4" xxh="$5"
fail() { echo "cross/build_deps: $*" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/include" "$out/lib/pkgconfig" "$out/obj"
jobs="${ETPACK_CROSS_JOBS:-2}"

# archive NAME COMPILER FLAGS -- SOURCES...: OUT/lib/libNAME.a, the sources
# compiled JOBS at a time.
archive() {
  local name="$1" compiler="$2" flags=() f
  shift 2
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  mkdir -p "$out/obj/$name"
  export compiler objdir="$out/obj/$name"
  printf '%s\0' "$@" | xargs -0 -P "$jobs" -I{} sh -c \
    'f="$1"; shift; exec "$compiler" "$@" -c "$f" -o "$objdir/$(basename "$f").o"' _ {} "${flags[@]}" ||
    fail "compiling $name failed (output above)"
  rm -f "$out/lib/lib$name.a"
  "$tools-ar" rcs "$out/lib/lib$name.a" "$out/obj/$name"/*.o || fail "archiving lib$name.a failed"
}
# pc NAME VERSION LIBS: OUT/lib/pkgconfig/NAME.pc.
pc() {
  printf '%s\n' 'prefix=${pcfiledir}/../..' 'includedir=${prefix}/include' 'libdir=${prefix}/lib' '' \
    "Name: $1" "Description: $1 for etpack's cross builds (scripts/cross/build_deps.sh)" \
    "Version: $2" "Libs: $3" 'Cflags: -I${includedir}' >"$out/lib/pkgconfig/$1.pc"
}
# The upstream version in a header's version macros (MAJOR, MINOR, and the
# third one's name).
version_of() {
  local h="$1" p="$2" third="$3"
  printf '%s.%s.%s' \
    "$(sed -n "s/^#define ${p}MAJOR *\([0-9]*\).*/\1/p" "$h" | head -1)" \
    "$(sed -n "s/^#define ${p}MINOR *\([0-9]*\).*/\1/p" "$h" | head -1)" \
    "$(sed -n "s/^#define ${p}${third} *\([0-9]*\).*/\1/p" "$h" | head -1)"
}

# The machine the tools are for: zstd's assembly is x86_64's.
machine="$(basename "$tools")"
machine="${machine%%-*}"

cxxflags=(-std=c++17 -O2 -fPIC -DFLATBUFFERS_LOCALE_INDEPENDENT=1 -I"$fb/include")
archive flatbuffers "$tools-c++" "${cxxflags[@]}" -- \
  "$fb/src/idl_parser.cpp" "$fb/src/idl_gen_text.cpp" "$fb/src/reflection.cpp" "$fb/src/util.cpp"
cp -r "$fb/include/flatbuffers" "$out/include/"
pc flatbuffers "$(version_of "$fb/include/flatbuffers/base.h" FLATBUFFERS_VERSION_ REVISION)" \
  '-L${libdir} -lflatbuffers'

zstd_sources=("$zstd"/lib/common/*.c "$zstd"/lib/compress/*.c "$zstd"/lib/decompress/*.c)
[ "$machine" = x86_64 ] && zstd_sources+=("$zstd"/lib/decompress/*.S)
archive zstd "$tools-cc" -O3 -fPIC -Wa,--noexecstack -DZSTD_LEGACY_SUPPORT=0 -- "${zstd_sources[@]}"
cp "$zstd/lib/zstd.h" "$zstd/lib/zstd_errors.h" "$zstd/lib/zdict.h" "$out/include/"
pc libzstd "$(version_of "$zstd/lib/zstd.h" ZSTD_VERSION_ RELEASE)" '-L${libdir} -lzstd'

archive xxhash "$tools-cc" -O3 -fPIC -- "$xxh/xxhash.c"
cp "$xxh/xxhash.h" "$xxh/xxh3.h" "$out/include/"
pc libxxhash "$(version_of "$xxh/xxhash.h" XXH_VERSION_ RELEASE)" '-L${libdir} -lxxhash'

# Where pybind11.pc says, or /usr/include: Debian 13's pybind11.pc has an
# empty prefix (includedir /include).
pybind11=""
for d in "$(pkg-config --variable=includedir pybind11 2>/dev/null)" /usr/include; do
  [ -f "$d/pybind11/pybind11.h" ] && { pybind11="$d/pybind11"; break; }
done
[ -n "$pybind11" ] || fail "no pybind11 headers in pybind11.pc's includedir or /usr/include (pybind11-dev)"
ln -s "$pybind11" "$out/include/pybind11"
pc pybind11 "$(pkg-config --modversion pybind11)" ''
rm -rf "$out/obj"
