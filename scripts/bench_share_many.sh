#!/usr/bin/env bash
# The `sharemany` bench job (scripts/bench.sh --jobs sharemany): share's
# cost in the number of inputs (issue 37 item 4: it was cubic).
#
#   scripts/bench_share_many.sh ETPACK DIR [COUNTS] [RUNS]
#
# Makes (untimed) the largest of COUNTS (default "100 200 400") small
# programs of one family (scripts/gen_family.py: 256 KiB of the same
# weights each, plus a 4 KiB constant of its own), then for each count
# RUNS times (default 3): `etpack share` of that many into a fresh DIR/out,
# then again into the same DIR/out (an existing OUTDIR holding the previous
# unit). Prints one line per run:
#   RUN count fresh_s existing_s
# Linear means the existing/fresh ratio stays flat (and under 2) as the
# count doubles.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 ETPACK DIR [COUNTS] [RUNS]" >&2; exit 2; }
etpack=$1 d=$2 counts=${3:-"100 200 400"} runs=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bench_lib.sh"

most=0
for n in $counts; do ((n > most)) && most=$n; done
mkdir -p "$d/in"
python3 "$here/gen_safetensors.py" "$d/ckpt" --size 256KiB --shards 1 >/dev/null
python3 "$here/gen_family.py" "$d/ckpt" "$d/family" --variants "$most" --variant-bytes 4KiB >/dev/null
for k in $(seq 1 "$most"); do
  "$etpack" pack "$d/family/v$k.json" -o "$d/in/v$k.pte" >/dev/null
done
rm -rf "$d/ckpt" "$d/family"

for n in $counts; do
  inputs=()
  for k in $(seq 1 "$n"); do inputs+=("$d/in/v$k.pte"); done
  for r in $(seq 1 "$runs"); do
    rm -rf "$d/out"
    t0=$(now)
    "$etpack" share "${inputs[@]}" -o "$d/out" >/dev/null
    t1=$(now)
    "$etpack" share "${inputs[@]}" -o "$d/out" >/dev/null
    t2=$(now)
    awk -v n="$n" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "RUN %d %.2f %.2f\n", n, b - a, c - b }'
  done
done
rm -rf "$d/out" "$d/in"
