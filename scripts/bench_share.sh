#!/usr/bin/env bash
# The `share` bench job (scripts/bench.sh --jobs share), run in one folder:
# on the bench's disk, and on a scratch XFS image (under scripts/with_xfs.sh).
#
#   scripts/bench_share.sh ETPACK SIZE DIR [RUNS] [VARIANTS]
#
# Makes (untimed) VARIANTS (default 5) LLM-shaped programs of about SIZE each
# that hold the same weights (scripts/gen_safetensors.py) plus one 4 MiB
# constant of their own (scripts/gen_family.py: a causal mask per context
# window), packed block-aligned (`pack --align 4096`) so that a file system
# that shares extents can share them. Then RUNS times, each on a cold page
# cache: `etpack share` of all of them into DIR/out, and `cp -r && sync`
# of what it wrote (the same bytes, the same disk). Prints one line per run:
#   RUN share_s cp_s peak_rss_kib out_bytes variant_bytes inputs_bytes new_disk_bytes
# (new disk = `df` used after the share minus before, synced), then checks
# the result once: `etpack verify` of every thin program with the shared
# file, and the way back (`repack THIN --data shared.ptd`) of every variant
# byte-identical to `repack` of its original (same layout options), printing
#   ROUNDTRIP variants identical
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ETPACK SIZE DIR [RUNS] [VARIANTS]" >&2; exit 2; }
etpack=$1 size=$2 d=$3 runs=${4:-3} variants=${5:-5}
here=$(cd "$(dirname "$0")" && pwd)

. "$(dirname "$0")/bench_lib.sh"
bytes_of() { du -sb --apparent-size "$@" | awk '{ s += $1 } END { print s }'; }

mkdir -p "$d/in"
python3 "$here/gen_safetensors.py" "$d/ckpt" --size "$size" --shards 1 >/dev/null
python3 "$here/gen_family.py" "$d/ckpt" "$d/family" --variants "$variants" --names >/dev/null
for k in $(seq 1 "$variants"); do
  "$etpack" pack "$d/family/v$k.json" -o "$d/in/v$k.pte" --align 4096 >/dev/null
done
rm -rf "$d/ckpt" "$d/family"
variant_bytes=$(stat -c %s "$d/in/v1.pte")
inputs_bytes=$(bytes_of "$d"/in/*.pte)

for r in $(seq 1 "$runs"); do
  rm -rf "$d/out" "$d/copy"
  drop_caches
  u0=$(used "$d")
  t0=$(now)
  /usr/bin/time -v -o "$d/time" "$etpack" share "$d"/in/*.pte -o "$d/out" --align 4096 >/dev/null
  t1=$(now)
  u1=$(used "$d")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$d/time")
  out_bytes=$(bytes_of "$d/out")
  drop_caches
  c0=$(now)
  cp -r "$d/out" "$d/copy" && sync "$d/copy"/*
  c1=$(now)
  rm -rf "$d/copy"
  awk -v r="$r" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v rss="$rss" -v o="$out_bytes" \
    -v v="$variant_bytes" -v i="$inputs_bytes" -v n="$((u1 - u0))" \
    'BEGIN { printf "%s %.3f %.3f %s %s %s %s %s\n", r, t1 - t0, c1 - c0, rss, o, v, i, n }'
done

identical=0
for k in $(seq 1 "$variants"); do
  "$etpack" verify "$d/out/v$k.pte" "$d"/out/*.ptd >/dev/null
  data=()
  for f in "$d"/out/*.ptd; do data+=(--data "$f"); done
  "$etpack" repack "$d/out/v$k.pte" "${data[@]}" -o "$d/back.pte" --align 4096 >/dev/null
  "$etpack" repack "$d/in/v$k.pte" -o "$d/orig.pte" --align 4096 >/dev/null
  if cmp -s "$d/back.pte" "$d/orig.pte"; then identical=$((identical + 1)); fi
  rm -f "$d/back.pte" "$d/orig.pte"
done
echo "ROUNDTRIP $variants $identical"
rm -rf "$d/in" "$d/out" "$d/time"
