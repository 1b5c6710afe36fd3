#!/usr/bin/env bash
# Formats etpack's C and C++ with clang-format and the repository's .clang-format.
# Usage: scripts/format.sh          rewrite every tracked .cc/.c/.h in place
#        scripts/format.sh --check  list files that differ; exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.c' '*.h')
if [ "${1:-}" = "--check" ]; then
  # One clang-format for every file (a process each is slow on a busy
  # machine); each difference it reports starts with the file's name.
  if ! log=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
    mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$log" | sort -u)
    ((${#bad[@]})) || { printf '%s\n' "$log" >&2; echo "format: clang-format failed" >&2; exit 1; }
    printf 'format: not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
fi
