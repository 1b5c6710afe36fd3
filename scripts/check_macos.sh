#!/bin/bash
# Syntax-checks every translation unit of lib/ and apps/ for macOS (arm64)
# with zig's clang and its bundled macOS SDK headers, on a Linux host: the
# proof that the per-OS files (*_darwin.cc) and everything built with them
# compile there. Not a build: nothing is linked or run.
#
#   scripts/check_macos.sh BUILD_DIR THIRD_PARTY_INCLUDE [ZIG...]
#
# BUILD_DIR: a configured and built Linux build (for the generated schema
# and version headers). THIRD_PARTY_INCLUDE: a folder holding only
# flatbuffers/, zstd.h, zstd_errors.h and xxhash.h (copies of the Debian
# ones are fine for a syntax check; all of /usr/include would shadow the
# macOS SDK). ZIG: the zig command (default: zig).
set -u
build=$1 inc=$2
shift 2
zig=("${@:-zig}")
cd "$(dirname "$0")/.."
fail=0 n=0
for f in $(git ls-files 'lib/*.cc' 'apps/*.cc' | grep -v '_linux\.cc$'); do
  n=$((n + 1))
  # zig 0.15 ends every -fsyntax-only run with "error: FileNotFound" (it
  # looks for the object it asked not to make): only other errors count.
  out=$("${zig[@]}" c++ -target aarch64-macos -std=c++17 -fsyntax-only \
    -DETPACK_VERSION=\"macos-check\" -Ilib -Iinclude -Iapps -Ischema -I"$build/schema" -I"$build/apps" -I"$inc" \
    "$f" 2>&1 | grep -v 'FileNotFound\|argument unused during compilation')
  if echo "$out" | grep -q 'error:'; then
    echo "FAIL $f"
    echo "$out" | grep -A3 'error:' | head -20
    fail=$((fail + 1))
  fi
done
echo "$((n - fail)) of $n translation units compile for aarch64-macos"
[ "$fail" -eq 0 ]
