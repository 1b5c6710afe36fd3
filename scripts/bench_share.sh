#!/usr/bin/env bash
# The `share` bench job (scripts/bench.sh --jobs share), run in one folder:
# on the bench's disk, and on a scratch XFS image (under scripts/with_xfs.sh).
#
#   scripts/bench_share.sh ETPACK SIZE DIR [RUNS] [VARIANTS] [MADE]
#
# Makes (untimed) VARIANTS (default 5) LLM-shaped programs of about SIZE each
# that hold the same weights (scripts/gen_safetensors.py) plus one 4 MiB
# constant of their own (scripts/gen_family.py: a causal mask per context
# window), packed block-aligned (`pack --align 4096`) so that a file system
# that shares extents can share them. MADE says how they are made: `pack`
# (default) packs each from the checkpoint, whose tensors are not
# block-aligned, so no two variants share a block; `reflink` packs the
# first and makes each other one as a publisher on XFS or btrfs could,
# `cp --reflink=always` of the first, then `etpack update` of its own
# constant, so the variants share every block but those. Then RUNS times,
# each on a cold page cache: `etpack share` of all of them into DIR/out, `cp -r && sync` of
# what it wrote (the same bytes, the same disk), and `cat` of the inputs to
# /dev/null (reading every input once: the floor for a share that must
# compare them); then the share again on a warm page cache (inputs cached,
# out/ removed first). Prints one line per run:
#   RUN share_s cp_s peak_rss_kib out_bytes variant_bytes inputs_bytes new_disk_bytes cat_s warm_s
# (new disk = `df` used after the share minus before, synced), then checks
# the result once: `etpack verify` of every thin program with the shared
# file, and the way back (`repack THIN --data shared.ptd`) of every variant
# byte-identical to `repack` of its original (same layout options), printing
#   ROUNDTRIP variants identical
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ETPACK SIZE DIR [RUNS] [VARIANTS] [MADE: pack or reflink]" >&2; exit 2; }
etpack=$1 size=$2 d=$3 runs=${4:-3} variants=${5:-5} made=${6:-pack}
here=$(cd "$(dirname "$0")" && pwd)

. "$(dirname "$0")/bench_lib.sh"
bytes_of() { du -sb --apparent-size "$@" | awk '{ s += $1 } END { print s }'; }

mkdir -p "$d/in"
python3 "$here/gen_safetensors.py" "$d/ckpt" --size "$size" --shards 1 >/dev/null
python3 "$here/gen_family.py" "$d/ckpt" "$d/family" --variants "$variants" --names >/dev/null
for k in $(seq 1 "$variants"); do
  if [ "$made" = reflink ] && [ "$k" -gt 1 ]; then
    cp --reflink=always "$d/in/v1.pte" "$d/in/v$k.pte"
    python3 - "$d/family/mask$k.bin" "$d/family/mask$k.safetensors" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
head = json.dumps({"causal_mask": {"dtype": "F32", "shape": [len(data) // 4],
                                   "data_offsets": [0, len(data)]}}).encode()
head += b" " * (-len(head) % 8)
with open(sys.argv[2], "wb") as f:
    f.write(struct.pack("<Q", len(head)) + head + data)
PY
    "$etpack" update "$d/in/v$k.pte" --from "$d/family/mask$k.safetensors" >/dev/null
  else
    "$etpack" pack "$d/family/v$k.json" -o "$d/in/v$k.pte" --align 4096 >/dev/null
  fi
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
  drop_caches
  r0=$(now)
  cat "$d"/in/*.pte >/dev/null
  r1=$(now)
  rm -rf "$d/out"
  sync
  w0=$(now)
  "$etpack" share "$d"/in/*.pte -o "$d/out" --align 4096 >/dev/null
  w1=$(now)
  awk -v r="$r" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v rss="$rss" -v o="$out_bytes" \
    -v v="$variant_bytes" -v i="$inputs_bytes" -v n="$((u1 - u0))" -v r0="$r0" -v r1="$r1" \
    -v w0="$w0" -v w1="$w1" \
    'BEGIN { printf "%s %.3f %.3f %s %s %s %s %s %.3f %.3f\n", r, t1 - t0, c1 - c0, rss, o, v, i, n,
             r1 - r0, w1 - w0 }'
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
