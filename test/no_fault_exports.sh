#!/usr/bin/env bash
# Fails when the shared library LIB exports a symbol of fault injection
# (test/support/fault_output.h, fault_input.h): those live in a test-only
# library and must never reach an installed libetpack.so.
# Usage: no_fault_exports.sh LIB
set -euo pipefail
lib="$1"
symbols=$(nm -D --defined-only -C "$lib")
[ -n "$symbols" ] || { echo "no_fault_exports: $lib exports nothing (nm failed?)" >&2; exit 1; }
if bad=$(grep 'Fault' <<<"$symbols"); then
  printf 'no_fault_exports: %s exports fault-injection symbols:\n%s\n' "$lib" "$bad" >&2
  exit 1
fi
echo "no_fault_exports: $(wc -l <<<"$symbols") symbols in $lib, none of fault injection"
