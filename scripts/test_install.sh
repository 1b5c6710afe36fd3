#!/usr/bin/env bash
# Uses etpack the two ways other projects do, from a scratch directory:
#  1. installed: `meson install` into a staging directory; the C example of
#     docs/c-api.md compiled with cc against the installed etpack.pc, run, and
#     its .ptd checked with the installed `etpack verify`; a C++ program built
#     the same way against the C++ API of the installed shared library; the
#     Python module imported from the installed site-packages;
#  2. as a meson subproject: a throwaway project with etpack linked into
#     subprojects/ builds the same example with dependency('etpack') (shared)
#     and dependency('etpack', static : true), without etpack's tests.
# Usage: scripts/test_install.sh BUILD_DIR   (meson test 'install' runs it)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:?usage: test_install.sh BUILD_DIR}" && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/etpack-install-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install: $*" >&2; exit 1; }

# ---- 1. installed -------------------------------------------------------------
stage="$tmp/stage"
meson install -C "$build" --destdir "$stage" --no-rebuild --quiet >/dev/null
pc="$(find "$stage" -name etpack.pc)"
[ -n "$pc" ] || fail "meson install put no etpack.pc in place"
libdir="$(dirname "$(dirname "$pc")")"
bin="$(find "$stage" -path '*/bin/etpack')"
[ -x "$bin" ] || fail "meson install put no etpack tool in place"
for f in libetpack.so libetpack.a; do
  [ -e "$libdir/$f" ] || fail "meson install put no $f in $libdir"
done
# The staged .pc names the final prefix; the sysroot maps it into the stage.
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage"
read -r -a flags <<<"$(pkg-config --cflags --libs etpack)"

# The build extracted docs/c-api.md's ```c block for its c_api_example test.
cp "$build/test/c_api_example.c" "$tmp/example.c"
[ -s "$tmp/example.c" ] || fail "no \`\`\`c block in docs/c-api.md"
cc -std=c99 -Wall -Wextra -Wpedantic -Werror "$tmp/example.c" "${flags[@]}" -o "$tmp/example"
LD_LIBRARY_PATH="$libdir" "$tmp/example" "$tmp/installed.ptd" >/dev/null
"$bin" verify "$tmp/installed.ptd" >/dev/null || fail "etpack verify refused the example's .ptd"

cat >"$tmp/cxx.cc" <<'EOF'
#include <etpack/etpack.h>
int main() {
  auto plan = etpack::PlanPtd({{etpack::OwnedSource({1, 2, 3})}, {{"k", 0, 1, std::nullopt}}});
  return plan.ok() && etpack::WriteArtifactToMemory(plan->artifact).ok() ? 0 : 1;
}
EOF
c++ -std=c++17 -Wall -Wextra -Werror "$tmp/cxx.cc" "${flags[@]}" -o "$tmp/cxx"
LD_LIBRARY_PATH="$libdir" "$tmp/cxx" || fail "the C++ API of the installed library failed"
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

# From / so that the source tree's python/ cannot be what is imported.
site="$(find "$stage" -path '*/etpack/__init__.py' -printf '%h\n' | head -1)"
[ -n "$site" ] || fail "meson install put no Python package etpack in place"
(cd / && PYTHONPATH="${site%/etpack}" /usr/bin/python3 -c 'import etpack, sys
assert etpack.__file__.startswith(sys.argv[1]), etpack.__file__' "${site%/etpack}") ||
  fail "the installed Python module does not import from ${site%/etpack}"

# ---- 2. subproject ------------------------------------------------------------
consumer="$tmp/consumer"
mkdir -p "$consumer/subprojects"
ln -s "$src" "$consumer/subprojects/etpack"
cp "$tmp/example.c" "$consumer/example.c"
cat >"$consumer/meson.build" <<'EOF'
project('consumer', 'c', default_options : ['c_std=c99', 'warning_level=3'])
executable('shared_example', 'example.c', dependencies : dependency('etpack'))
executable('static_example', 'example.c', dependencies : dependency('etpack', static : true))
EOF
# Compile commands are relative to the consumer's build directory, so ccache
# hits on the next run in another scratch directory.
export CCACHE_BASEDIR="$consumer" CCACHE_NOHASHDIR=1
if ! log=$(meson setup "$consumer/build" "$consumer" --force-fallback-for=etpack 2>&1); then
  printf '%s\n' "$log" >&2
  fail "configuring a project with etpack as a subproject failed (output above)"
fi
[ "$(meson introspect --tests "$consumer/build")" = "[]" ] ||
  fail "etpack's tests are defined when it is a subproject"
ninja -C "$consumer/build" shared_example static_example >/dev/null
for kind in shared static; do
  "$consumer/build/${kind}_example" "$tmp/$kind.ptd" >/dev/null
  cmp -s "$tmp/installed.ptd" "$tmp/$kind.ptd" || fail "the $kind subproject build wrote other bytes"
done
echo "test_install: installed library, pkg-config, tool, Python module and subproject use all work"
